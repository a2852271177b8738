"""binpack: prefer the nodes a task fills the most.

For a task and a node the plugin scores every resource the task requests and
has a weight for::

    used'  = node.used[r] + request[r]
    s[r]   = used' * weight[r] / node.allocatable[r]     (0 if allocatable or weight is 0)

and the node's score is ``sum(s) / sum(weight) * 100 * binpack.weight``. When
``used'`` exceeds the allocatable amount of any scored resource, the whole
node scores 0 (the current Volcano behaviour; v1.7.0 only zeroed that one
resource). ``node.used`` includes releasing tasks and this session's
allocations, not pipelined tasks.

Arguments (Volcano's names):

``binpack.weight`` (int, default 1)
    Multiplies the whole score; 0 turns the plugin off.
``binpack.cpu`` / ``binpack.memory`` (int, default 1; negative means 1)
    Weights of cpu and memory.
``binpack.resources`` (string, default empty)
    Comma-separated names of further resources to score, e.g.
    ``"nvidia.com/gpu, example.com/foo"``.
``binpack.resources.<name>`` (int, default 1; negative means 1)
    The weight of one of those resources.

Resources the task requests but that have no weight (``pods``, unlisted
extended resources) are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

from volcanolib.api.resource import CPU, MEMORY
from volcanolib.framework.arguments import argument, argument_per_name
from volcanolib.framework.nodeclass import NodeClassKey
from volcanolib.framework.registry import hookimpl
from volcanolib.framework.traits import Traits

if TYPE_CHECKING:
    from volcanolib.api.node import NodeInfo
    from volcanolib.api.resource import Resource
    from volcanolib.api.task import TaskInfo
    from volcanolib.framework.session import Session

__all__ = [
    "BINPACK_CPU",
    "BINPACK_MEMORY",
    "BINPACK_RESOURCES",
    "BINPACK_WEIGHT",
    "MAX_NODE_SCORE",
    "BinpackArguments",
    "BinpackPlugin",
]

BINPACK_WEIGHT: Final = "binpack.weight"
BINPACK_CPU: Final = "binpack.cpu"
BINPACK_MEMORY: Final = "binpack.memory"
BINPACK_RESOURCES: Final = "binpack.resources"
#: The score of a node the task fills completely, before ``binpack.weight``.
MAX_NODE_SCORE: Final = 100


def _non_negative(value: int) -> int:
    return 1 if value < 0 else value


@attrs.frozen
class BinpackArguments:
    """The arguments of ``binpack``."""

    weight: int = argument(key=BINPACK_WEIGHT, default=1, doc="Multiplies the score; 0 turns the plugin off.")
    resources: str = argument(
        key=BINPACK_RESOURCES,
        default="",
        doc="Comma-separated further resources to score, such as `nvidia.com/gpu`.",
    )
    resource_weights: Mapping[str, int] = argument_per_name(
        key=f"{BINPACK_RESOURCES}.<name>",
        names="resources",
        default=1,
        doc="Weight of one resource listed in `binpack.resources`; a negative value means 1.",
    )
    cpu: int = argument(key=BINPACK_CPU, default=1, doc="Weight of cpu; a negative value means 1.")
    memory: int = argument(key=BINPACK_MEMORY, default=1, doc="Weight of memory; a negative value means 1.")


class BinpackPlugin:
    """Scores nodes by how full they would be after placing the task (bin packing).

    :ivar weight: ``binpack.weight``.
    :ivar resource_weights: the weight of every scored resource, cpu and
        memory included.
    """

    name: ClassVar[str] = "binpack"
    Arguments: ClassVar[type[BinpackArguments]] = BinpackArguments
    #: See docs/incremental.md: no clock; job status, if any, only through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, status_through_session=True)

    def __init__(self, arguments: BinpackArguments) -> None:
        self.arguments = arguments
        self.weight = arguments.weight
        weights = {resource: _non_negative(weight) for resource, weight in arguments.resource_weights.items()}
        # cpu and memory take their own arguments even when listed in binpack.resources.
        weights[CPU] = _non_negative(arguments.cpu)
        weights[MEMORY] = _non_negative(arguments.memory)
        self.resource_weights: Mapping[str, int] = weights

    def _scored(self, request: Resource) -> tuple[list[tuple[int, str, float, int]], int]:
        """The task's requested resources that have a weight, and the sum of their weights.

        Each entry is ``(kind, name, amount, weight)`` with kind 0 for cpu,
        1 for memory and 2 for a scalar resource.
        """
        weights = self.resource_weights
        out = []
        weight_sum = 0
        for name in request.names():
            amount = request.get(name)
            weight = weights.get(name)
            if weight is not None and amount != 0:
                kind = 0 if name == CPU else (1 if name == MEMORY else 2)
                out.append((kind, name, amount, weight))
                weight_sum += weight
        return out, weight_sum

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        """The binpack score of ``node`` for ``task`` (0 .. ``100 * binpack.weight``)."""
        if self.weight == 0:
            return 0.0
        scored, weight_sum = self._scored(task.resreq)
        return self._node_score(scored, weight_sum, node)

    def _node_score(self, scored: list[tuple[int, str, float, int]], weight_sum: int, node: NodeInfo) -> float:
        # The same operations, in the same order, as Volcano's score, so values match to the last bit.
        total = 0.0
        allocatable = node.allocatable
        used = node.used
        for kind, name, amount, weight in scored:
            if kind == 0:
                capacity = allocatable.milli_cpu
                in_use = used.milli_cpu
            elif kind == 1:
                capacity = allocatable.memory
                in_use = used.memory
            else:
                capacity = allocatable.scalars.get(name, 0)
                in_use = used.scalars.get(name, 0)
            if capacity != 0 and weight != 0:
                after = in_use + amount
                if after > capacity:
                    return 0.0
                total += after * weight / capacity
        if weight_sum > 0:
            total /= weight_sum
        return total * (MAX_NODE_SCORE * self.weight)

    @hookimpl
    def node_order(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> float:
        """The binpack score of one node; 0 when ``binpack.weight`` is 0."""
        return self.score(task, node)

    @hookimpl
    def batch_node_order(self, ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        """The scores of many nodes, by name; the same values as :meth:`node_order`.

        The task's weighted resources are worked out once for all nodes.
        Empty (no opinion) when ``binpack.weight`` is 0.
        """
        if self.weight == 0:
            return {}
        scored, weight_sum = self._scored(task.resreq)
        node_score = self._node_score
        return {node.name: node_score(scored, weight_sum, node) for node in nodes}

    @hookimpl
    def node_class_key(self, ssn: Session, task: TaskInfo) -> NodeClassKey:
        """Binpack reads only a node's resources, so every node's key is the same."""
        return _CLASS_KEY


def _no_key(node: NodeInfo) -> None:
    return None


_CLASS_KEY: Final = NodeClassKey("resources", _no_key, pointwise=True, durable=True)
