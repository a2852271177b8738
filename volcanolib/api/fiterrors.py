"""Why a task does not fit: per-node reasons and their summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from volcanolib.api.node import NodeInfo

__all__ = ["ALL_NODES_UNAVAILABLE", "FitError", "FitErrors", "NodeNames", "reason_histogram"]

ALL_NODES_UNAVAILABLE = "all nodes are unavailable"
NODE_RESOURCE_FIT_FAILED = "node(s) resource fit failed"
NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"


def insufficient(resource_name: str) -> str:
    """The reason given when a node lacks one resource (``"Insufficient cpu"``)."""
    return f"Insufficient {resource_name}"


def reason_histogram(reasons: Iterable[str]) -> list[str]:
    """Count equal reasons and return ``["<count> <reason>", ...]`` sorted as text."""
    return _histogram(Counter(reasons))


def _histogram(counts: Mapping[str, int]) -> list[str]:
    """``["<count> <reason>", ...]`` sorted as text, from counts already taken (each above zero)."""
    return sorted(f"{count} {reason}" for reason, count in counts.items())


class NodeNames(Sequence[str]):
    """The names of some nodes, given by their places in a node list, read only when asked for.

    A class of a thousand nodes failing the same way is recorded at the cost
    of copying its positions; the names are looked up if someone reads them.

    :param nodes: the node list (it must not change while this is read).
    :param positions: places in ``nodes``; they are copied.
    """

    __slots__ = ("_nodes", "_positions")

    def __init__(self, nodes: Sequence[NodeInfo], positions: Iterable[int]) -> None:
        self._nodes = nodes
        self._positions = list(positions)

    @property
    def node_list(self) -> Sequence[NodeInfo]:
        """The node list the positions refer to."""
        return self._nodes

    @property
    def positions(self) -> Sequence[int]:
        """The places in :attr:`node_list` (do not change them)."""
        return self._positions

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._nodes[p].name for p in self._positions[index]]
        return self._nodes[self._positions[index]].name

    def __iter__(self) -> Iterator[str]:
        nodes = self._nodes
        return (nodes[p].name for p in self._positions)


class FitError:
    """The reasons one task does not fit on one node."""

    __slots__ = ("node_name", "reasons", "task_key")

    def __init__(self, task_key: str, node_name: str, reasons: Iterable[str]) -> None:
        self.task_key = task_key
        self.node_name = node_name
        self.reasons = list(reasons)

    def __str__(self) -> str:
        return f"task {self.task_key} on node {self.node_name} fit failed: {', '.join(self.reasons)}"

    __repr__ = __str__


class FitErrors:
    """The reasons one task fits no node, node by node, with an overall message."""

    __slots__ = ("_classes", "_counts", "_groups", "_nodes", "message", "total_nodes")

    def __init__(self, total_nodes: int | None = None) -> None:
        self._nodes: dict[str, FitError] = {}
        #: Reasons shared by many nodes, kept as given until someone reads :attr:`nodes`.
        self._groups: list[tuple[str, Sequence[str], tuple[str, ...]]] = []
        # The reason counts, when the groups alone were recorded by set_class_errors.
        self._counts: Counter[str] | None = None
        # Groups set_class_errors recorded, with their task key, until something needs them in _groups.
        self._classes: tuple[str, Sequence[tuple[NodeNames, tuple[str, ...]]]] | None = None
        self.message = ""
        #: How many nodes were considered, for the "0/N nodes are available" summary.
        self.total_nodes = total_nodes

    @property
    def nodes(self) -> dict[str, FitError]:
        """Why the task does not fit, by node name (do not change it)."""
        self._take_classes()
        if self._groups:
            self._expand()
        return self._nodes

    def _take_classes(self) -> None:
        pending = self._classes
        if pending is not None:
            self._classes = None
            task_key, groups = pending
            self._groups.extend([(task_key, names, reasons) for names, reasons in groups])

    def _expand(self) -> None:
        nodes = self._nodes
        for task_key, names, reasons in self._groups:
            for name in names:
                nodes[name] = FitError(task_key, name, reasons)
        self._groups = []

    def set_node_error(self, error: FitError) -> None:
        """Record why the task does not fit one node."""
        self._counts = None
        self._take_classes()
        if self._groups:
            self._expand()
        self._nodes[error.node_name] = error

    def set_group_error(self, task_key: str, node_names: Sequence[str], reasons: Iterable[str]) -> None:
        """Record the same reasons for many nodes (later records for a node win, as one by one)."""
        self._counts = None
        self._take_classes()
        self._groups.append((task_key, node_names, tuple(reasons)))

    def set_class_errors(
        self,
        task_key: str,
        groups: Sequence[tuple[NodeNames, tuple[str, ...]]],
        counts: Counter[str] | None = None,
    ) -> None:
        """Record the reasons of groups of nodes that share no node (the classes of one grouping).

        ``groups`` is kept as given (do not change it afterwards).

        :param counts: how many nodes give each reason (no zero counts),
            when the caller already knows (else counted here); kept as given.

        .. versionadded:: 0.2
        """
        if self._nodes or self._groups or self._classes is not None:
            self._take_classes()
            self._groups.extend([(task_key, names, reasons) for names, reasons in groups])
            self._counts = None
            return
        self._classes = (task_key, groups)
        if counts is None:
            counts = Counter()
            for names, reasons in groups:
                size = len(names)
                if size:
                    for reason in reasons:
                        counts[reason] += size
        self._counts = counts

    def set_error(self, message: str) -> None:
        """Record a reason that applies to every node."""
        self.message = message

    def reasons(self) -> list[str]:
        """Every per-node reason, once per node that gave it."""
        self._take_classes()
        if not self._groups:
            return [reason for err in self._nodes.values() for reason in err.reasons]
        final: dict[str, Sequence[str]] = {name: err.reasons for name, err in self._nodes.items()}
        for _, names, reasons in self._groups:
            final.update(dict.fromkeys(names, reasons))
        return [reason for reasons in final.values() for reason in reasons]

    def error(self) -> str:
        """The summary: ``"0/3 nodes are available: 2 Insufficient cpu, 1 ..."``."""
        if self.message:
            head = self.message
        elif self.total_nodes is not None:
            head = f"0/{self.total_nodes} nodes are available"
        else:
            head = ALL_NODES_UNAVAILABLE
        counts = self._counts
        if counts:  # counted groups name nodes
            return f"{head}: {', '.join(_histogram(counts))}."
        self._take_classes()
        if not self._nodes and not any(names for _, names, _ in self._groups):
            return head if head.endswith(".") else head + "."
        if counts is None:
            counts = self._disjoint_counts()
        if counts is None:
            counts = Counter(self.reasons())
        return f"{head}: {', '.join(_histogram(counts))}."

    def _disjoint_counts(self) -> Counter[str] | None:
        """The reason counts when only groups of distinct nodes of one node list were recorded, else ``None``.

        Then no record overrides another, and each group counts its reasons once per node.
        """
        self._take_classes()
        groups = self._groups
        if self._nodes or not groups:
            return None
        first = groups[0][1]
        if not isinstance(first, NodeNames):
            return None
        nodes = first.node_list
        seen: set[int] = set()
        total = 0
        counts: Counter[str] = Counter()
        for _, names, reasons in groups:
            if not isinstance(names, NodeNames) or names.node_list is not nodes:
                return None
            size = len(names)
            if not size:
                continue
            seen.update(names.positions)
            total += size
            for reason in reasons:
                counts[reason] += size
        return counts if len(seen) == total else None

    __str__ = error

    def __repr__(self) -> str:
        return f"FitErrors({self.error()!r})"
