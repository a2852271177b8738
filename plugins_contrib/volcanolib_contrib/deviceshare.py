"""deviceshare: GPU cards shared by memory, or handed out whole by number, as Volcano's gpushare models them.

A node has GPU cards when its capacity lists both ``volcano.sh/gpu-memory``
(the memory of all its cards together) and ``volcano.sh/gpu-number`` (how
many cards): each card gets an equal share of the memory (rounded down).
Cards named in the node annotation ``volcano.sh/gpu-unhealthy-ids``
(comma-separated ids) are left out.

A pod asks for ``volcano.sh/gpu-memory`` (memory on one card, so a fraction
of a GPU) or ``volcano.sh/gpu-number`` (whole cards) in its container limits.
The node-level resource check of ``allocate`` still sees the totals; this
plugin adds the per-card rules:

* **GPU sharing** (``deviceshare.GPUSharingEnable``): a pod asking for GPU
  memory fits a node only if one card has that much memory left (the card's
  memory minus what the pods on it ask for). It is given the lowest-numbered
  such card.
* **GPU number** (``deviceshare.GPUNumberEnable``): a pod asking for ``n``
  cards fits only if ``n`` cards hold no pod; it is given the ``n``
  lowest-numbered ones.
* A pod asking for a kind of GPU the node does not have fails with ``node
  not initialized with device``.

Which cards a pod holds comes from its annotation ``volcano.sh/gpu-index``
(comma-separated ids) when it has one; a pod placed on the node without it
(placed by volcanolib in an earlier cycle, say) is given cards at session
open by the rules above, pods in the order the node holds them. Every pod
asking for GPU memory or cards holds its cards, whichever check is on (a
card shared by memory is not idle for a pod asking for whole cards). Pods
that succeeded or failed hold nothing. A card whose pods ask for more than
its memory has nothing left.

.. versionadded:: 0.2
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

from volcanolib.api.task import COMPLETED_STATUSES, in_statuses
from volcanolib.errors import ConfigError
from volcanolib.framework.arguments import argument
from volcanolib.framework.nodeclass import NodeClassKey
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.status import Status
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.cluster import SnapshotDelta
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session
    from volcanolib.framework.status import Event

__all__ = [
    "GPU_INDEX",
    "GPU_MEMORY",
    "GPU_NUMBER",
    "UNHEALTHY_GPU_IDS",
    "DeviceShareArguments",
    "DeviceSharePlugin",
    "GPUCards",
]

log = logging.getLogger(__name__)

#: One node's cards as :meth:`DeviceSharePlugin.kept_state` shows them.
_CardState = tuple[int, list[int], dict[int, int], dict[int, set[str]]]

#: Node capacity: the memory of all GPU cards; pod limit: memory wanted on one card.
GPU_MEMORY: Final = "volcano.sh/gpu-memory"
#: Node capacity: the number of GPU cards; pod limit: whole cards wanted.
GPU_NUMBER: Final = "volcano.sh/gpu-number"
#: Pod annotation: the ids of the cards the pod holds, comma-separated.
GPU_INDEX: Final = "volcano.sh/gpu-index"
#: Node annotation: ids of cards not to use, comma-separated.
UNHEALTHY_GPU_IDS: Final = "volcano.sh/gpu-unhealthy-ids"


@attrs.frozen
class DeviceShareArguments:
    """The arguments of ``deviceshare``."""

    gpu_sharing: bool = argument(
        key="deviceshare.GPUSharingEnable", default=False, doc="Check `volcano.sh/gpu-memory` card by card."
    )
    gpu_number: bool = argument(
        key="deviceshare.GPUNumberEnable", default=False, doc="Check `volcano.sh/gpu-number` in whole idle cards."
    )
    node_lock: bool = argument(
        key="deviceshare.NodeLockEnable", default=False, doc="Accepted; there is no node lock to take offline."
    )
    vgpu: bool = argument(
        key="deviceshare.VGPUEnable", default=False, doc="Accepted with a warning; vGPU cards are not modelled."
    )
    schedule_policy: str = argument(
        key="deviceshare.SchedulePolicy",
        default="",
        doc="Accepted; Volcano's GPU-sharing cards score every node 0 whatever the policy.",
    )
    schedule_weight: int = argument(
        key="deviceshare.ScheduleWeight", default=0, doc="Accepted; see `deviceshare.SchedulePolicy`."
    )


def _ids(text: str) -> list[int] | None:
    """Card ids of an annotation; ``None`` when one is not a number (Volcano then ignores the annotation)."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        return None


def _request(task: TaskInfo, name: str) -> int:
    """A task's request of a GPU resource, in units (the model keeps scalars in milli-units)."""
    return int(task.resreq.scalars.get(name, 0) // 1000)


def _holds_cards(task: TaskInfo) -> bool:
    """Whether a pod asks for GPU memory or GPU cards (whatever the switches, it then holds cards)."""
    return _request(task, GPU_MEMORY) > 0 or _request(task, GPU_NUMBER) > 0


class GPUCards:
    """The GPU cards of one node and who holds them, for one session.

    :param memory: the memory of each card.
    :param ids: the healthy cards' ids.
    """

    __slots__ = ("holders", "ids", "memory", "used")

    def __init__(self, memory: int, ids: list[int]) -> None:
        #: Memory of each card.
        self.memory = memory
        #: Healthy card ids, ascending.
        self.ids = ids
        #: Per card id: GPU memory asked by the pods on it.
        self.used: dict[int, int] = dict.fromkeys(ids, 0)
        #: Per card id: uids of the pods on it.
        self.holders: dict[int, set[str]] = {i: set() for i in ids}

    @classmethod
    def of(cls, node: NodeInfo) -> GPUCards | None:
        """The node's cards, or ``None`` when its capacity does not list both GPU resources."""
        scalars = node.capability.scalars
        total, number = scalars.get(GPU_MEMORY), scalars.get(GPU_NUMBER)
        count = int(number // 1000) if number is not None else 0
        if total is None or count <= 0:
            return None
        ids = list(range(count))
        annotations = node.node.annotations if node.node is not None else {}
        bad = _ids(annotations.get(UNHEALTHY_GPU_IDS, ""))
        if bad:
            ids = [i for i in ids if i not in set(bad)]
        return cls(int(total // 1000) // count, ids)

    def fitting_memory(self, memory: int) -> int | None:
        """The lowest-numbered card with ``memory`` left, or ``None``."""
        for i in self.ids:
            if max(self.memory - self.used[i], 0) >= memory:
                return i
        return None

    def idle_cards(self, number: int) -> list[int] | None:
        """The ``number`` lowest-numbered cards that hold no pod, or ``None`` when there are fewer."""
        idle = [i for i in self.ids if not self.holders[i]]
        return idle[:number] if len(idle) >= number else None

    def hold(self, uid: str, ids: list[int], memory: int) -> None:
        """Record that pod ``uid`` holds cards ``ids``, asking ``memory`` on each."""
        for i in ids:
            if i in self.holders:
                self.holders[i].add(uid)
                self.used[i] += memory

    def release(self, uid: str, ids: list[int], memory: int) -> None:
        """Undo :meth:`hold`."""
        for i in ids:
            if uid in self.holders.get(i, ()):
                self.holders[i].discard(uid)
                self.used[i] -= memory

    def signature(self) -> Hashable:
        """What the per-card checks read: memory left per card, and idle cards."""
        return (
            tuple(sorted(max(self.memory - self.used[i], 0) for i in self.ids)),
            sum(1 for i in self.ids if not self.holders[i]),
        )


class DeviceSharePlugin:
    """Per-card GPU checks: shared cards by memory, whole cards by number."""

    name: ClassVar[str] = "deviceshare"
    Arguments: ClassVar[type[DeviceShareArguments]] = DeviceShareArguments
    #: See docs/incremental.md: no clock; job status, if any, only through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, status_through_session=True)

    def __init__(self, arguments: DeviceShareArguments) -> None:
        if arguments.gpu_sharing and arguments.gpu_number:
            raise ConfigError(
                "deviceshare: deviceshare.GPUSharingEnable and deviceshare.GPUNumberEnable cannot both be true",
                key="deviceshare.GPUNumberEnable",
            )
        if arguments.vgpu and (arguments.gpu_sharing or arguments.gpu_number):
            raise ConfigError(
                "deviceshare: deviceshare.VGPUEnable cannot be used with GPU sharing or GPU number",
                key="deviceshare.VGPUEnable",
            )
        if arguments.vgpu:
            log.warning("deviceshare: deviceshare.VGPUEnable is accepted, but vGPU cards are not modelled")
        self.arguments = arguments
        self.gpu_sharing = arguments.gpu_sharing
        self.gpu_number = arguments.gpu_number
        #: Per node name: its cards, for the current session.
        self.cards: dict[str, GPUCards] = {}
        #: Per task uid: (node, card ids, memory per card) of the cards it holds.
        self.held: dict[str, tuple[str, list[int], int]] = {}

    # ------------------------------------------------------------------ session

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        """Read every node's cards and the cards its pods hold."""
        self.cards = {}
        self.held = {}
        if not (self.gpu_sharing or self.gpu_number):
            return
        for node in ssn.node_list:
            self._read(node)

    @hookimpl
    def on_session_resume(self, ssn: Session, delta: SnapshotDelta) -> None:
        """Open as :meth:`on_session_open` would, reading again only the nodes the delta names.

        The cards of every other node, and who holds them, are as the
        previous session left them: neither the cache nor that session
        changed the node since.
        """
        if not (self.gpu_sharing or self.gpu_number):
            self.on_session_open(ssn)
            return
        for name in delta.nodes:
            cards = self.cards.pop(name, None)
            if cards is not None:
                for holders in cards.holders.values():
                    for uid in holders:
                        self.held.pop(uid, None)
        for name in delta.nodes:
            node = ssn.nodes.get(name)
            if node is not None:
                self._read(node)

    def _read(self, node: NodeInfo) -> None:
        """Read one node's cards and the cards its pods hold (pods named by their annotation first)."""
        cards = GPUCards.of(node)
        if cards is None:
            return
        self.cards[node.name] = cards
        unnamed: list[TaskInfo] = []
        for task in node.tasks.values():
            if in_statuses(task.status, COMPLETED_STATUSES) or not _holds_cards(task):
                continue
            pod = task.pod
            ids = _ids(pod.annotations.get(GPU_INDEX, "")) if pod is not None else None
            if ids:
                self._hold(task, node.name, ids)
            else:
                unnamed.append(task)
        for task in unnamed:
            self._give(task, node.name)

    def kept_state(self) -> tuple[dict[str, _CardState], dict[str, tuple[str, list[int], int]]]:
        """What the plugin keeps: per node, its cards' memory, ids, memory used and holders; per pod, its cards."""
        cards = {name: (c.memory, c.ids, c.used, c.holders) for name, c in self.cards.items()}
        return cards, dict(self.held)

    def _asks(self, task: TaskInfo) -> bool:
        return (self.gpu_sharing and _request(task, GPU_MEMORY) > 0) or (
            self.gpu_number and _request(task, GPU_NUMBER) > 0
        )

    def _hold(self, task: TaskInfo, node: str, ids: list[int]) -> None:
        memory = _request(task, GPU_MEMORY)
        self.cards[node].hold(task.uid, ids, memory)
        self.held[task.uid] = (node, ids, memory)

    def _give(self, task: TaskInfo, node: str) -> None:
        """Give a pod placed on ``node`` its cards by the plugin's rules (nothing when none fits)."""
        cards = self.cards[node]
        ids: list[int] | None = None
        if _request(task, GPU_MEMORY) > 0:
            card = cards.fitting_memory(_request(task, GPU_MEMORY))
            ids = [card] if card is not None else None
        if _request(task, GPU_NUMBER) > 0:
            ids = (ids or []) + (cards.idle_cards(_request(task, GPU_NUMBER)) or [])
        if ids:
            self._hold(task, node, ids)

    @hookimpl
    def on_allocate(self, ssn: Session, event: Event) -> None:
        """A pod placed on a node with cards takes its cards."""
        task = event.task
        if task.node_name in self.cards and task.uid not in self.held and _holds_cards(task):
            self._give(task, task.node_name)

    @hookimpl
    def on_deallocate(self, ssn: Session, event: Event) -> None:
        """A pod leaving its node gives its cards back."""
        held = self.held.pop(event.task.uid, None)
        if held is not None:
            node, ids, memory = held
            self.cards[node].release(event.task.uid, ids, memory)

    # ------------------------------------------------------------------ checks

    @hookimpl
    def predicate(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> Status:
        """Fail a node without a card that can take the pod's GPU memory, or without enough idle cards."""
        sharing = self.gpu_sharing and _request(task, GPU_MEMORY) > 0
        number = self.gpu_number and _request(task, GPU_NUMBER) > 0
        if not (sharing or number):
            return Status.success()
        cards = self.cards.get(node.name)
        if cards is None:
            return Status.unschedulable("node not initialized with device gpushare", plugin=self.name)
        if sharing and cards.fitting_memory(_request(task, GPU_MEMORY)) is None:
            return Status.unschedulable(f"GpuShare no enough gpu memory on node {node.name}", plugin=self.name)
        if number and cards.idle_cards(_request(task, GPU_NUMBER)) is None:
            return Status.unschedulable(f"GpuNumber no enough gpu number on node {node.name}", plugin=self.name)
        return Status.success()

    @hookimpl
    def node_class_key(self, ssn: Session, task: TaskInfo) -> NodeClassKey:
        """Nodes whose cards have the same memory left and the same idle cards answer alike.

        The key reads the node's own cards alone, so groupings are kept from
        one session to the next (``durable``).
        """
        if not self._asks(task):
            return _NO_GPU
        return NodeClassKey("deviceshare:cards", self._signature, pointwise=True, durable=True)

    def _signature(self, node: NodeInfo) -> Hashable:
        cards = self.cards.get(node.name)
        return None if cards is None else cards.signature()


def _no_key(node: NodeInfo) -> Hashable:
    return None


_NO_GPU: Final = NodeClassKey("deviceshare:none", _no_key, pointwise=True, durable=True)
