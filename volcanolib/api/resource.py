"""Resource vectors: cpu, memory and scalar resources, with Volcano's comparisons.

Units: cpu is in millicores, memory in bytes, every scalar resource (GPUs,
``ephemeral-storage``, hugepages, extended resources) in milli-units, except
``pods``, which is counted in whole pods. Values parsed from quantities are
integers, so sums and differences are exact; only scaling by a ratio (the
fair-share water-fill of proportion) produces fractional values.

Comparisons follow Volcano: a dimension compares "less or equal" with a
tolerance of :data:`MIN_RESOURCE` (0.1 of the unit), and a scalar missing on
one side is read as zero (:attr:`Mode.ZERO`) or as unbounded
(:attr:`Mode.INFINITY`).
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable, Mapping
from typing import Final

from volcanolib.api import quantity
from volcanolib.errors import QuantityError, ResourceError

__all__ = [
    "CPU",
    "INFINITE",
    "MEMORY",
    "MIN_RESOURCE",
    "PODS",
    "Mode",
    "Resource",
    "exceeded_part",
    "res_max",
    "res_min",
    "share",
    "tolerant_le",
    "total",
]

CPU: Final = "cpu"
MEMORY: Final = "memory"
PODS: Final = "pods"
#: The tolerance used by every comparison, in the dimension's unit.
MIN_RESOURCE: Final = 0.1
#: The value that stands for "unbounded" (Volcano uses the largest float).
INFINITE: Final = sys.float_info.max


class Mode(enum.Enum):
    """How a scalar resource missing from one operand is read."""

    #: A missing dimension means zero.
    ZERO = 0
    #: A missing dimension on the right-hand side means unbounded.
    INFINITY = 1


_ZERO = Mode.ZERO
_INF = Mode.INFINITY


def tolerant_le(left: float, right: float) -> bool:
    """Volcano's "less or equal" for one dimension: ``left <= right`` within :data:`MIN_RESOURCE`."""
    return left < right or abs(left - right) < MIN_RESOURCE


_le = tolerant_le


def _is_scalar_name(name: str) -> bool:
    if name.startswith(("requests.", "limits.", "count/")):
        return False
    return "/" in name or name == "ephemeral-storage" or name.startswith(("hugepages-", "attachable-volumes-"))


class Resource:
    """A mutable resource vector.

    In-place operations (:meth:`add`, :meth:`sub`, :meth:`multi`,
    :meth:`set_max`, :meth:`min_dimension`) return ``self`` so they can be
    chained; :meth:`clone` first when the original must be kept.

    >>> r = Resource.from_list({"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1"})
    >>> r.milli_cpu, r.memory, r.get("nvidia.com/gpu")
    (1500, 1073741824, 1000)
    """

    __slots__ = ("memory", "milli_cpu", "scalars")

    def __init__(
        self,
        milli_cpu: float = 0,
        memory: float = 0,
        scalars: Mapping[str, float] | None = None,
    ) -> None:
        self.milli_cpu: float = milli_cpu
        self.memory: float = memory
        self.scalars: dict[str, float] = dict(scalars) if scalars else {}

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_list(cls, resources: Mapping[str, object] | None, *, field: str | None = None) -> Resource:
        """Build a resource from a Kubernetes ResourceList (``{"cpu": "2", ...}``).

        Names Kubernetes does not treat as schedulable scalars (``count/*``,
        ``requests.*``, unprefixed non-native names) are ignored. Zero
        entries are kept: a zero capability is a limit.

        :param field: the manifest field, named in errors.
        :raises QuantityError: naming the field when a quantity is invalid or negative.
        """
        res = cls()
        if not resources:
            return res
        for name, raw in resources.items():
            name = str(name)
            where = f"{field}.{name}" if field else name
            try:
                if name == CPU:
                    res.milli_cpu = quantity.milli_value(raw)
                    amount: float = res.milli_cpu
                elif name == MEMORY:
                    res.memory = quantity.value(raw)
                    amount = res.memory
                elif name == PODS:
                    amount = res.scalars[PODS] = quantity.value(raw)
                elif _is_scalar_name(name):
                    amount = res.scalars[name] = quantity.milli_value(raw)
                else:
                    continue
            except QuantityError as exc:
                raise QuantityError(exc.message, field=where) from None
            if amount < 0:
                raise QuantityError(f"negative quantity {raw!r}", field=where)
        return res

    def key(self) -> tuple[float, float, tuple[tuple[str, float], ...]]:
        """A hashable form of the vector: equal keys mean equal vectors.

        Scalars keep their own order, so two equal vectors whose scalars were
        added in another order may give different keys; callers use keys to
        share work between equal requests, where that only costs a little
        sharing.
        """
        scalars = self.scalars
        return (self.milli_cpu, self.memory, tuple(scalars.items()) if scalars else ())

    def clone(self) -> Resource:
        """Return an independent copy."""
        res = Resource.__new__(Resource)
        res.milli_cpu = self.milli_cpu
        res.memory = self.memory
        res.scalars = self.scalars.copy()
        return res

    # ------------------------------------------------------------------ access

    def get(self, name: str) -> float:
        """Return one dimension's value; a missing scalar is 0."""
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        return self.scalars.get(name, 0)

    def set(self, name: str, amount: float) -> Resource:
        """Set one dimension's value."""
        if name == CPU:
            self.milli_cpu = amount
        elif name == MEMORY:
            self.memory = amount
        else:
            self.scalars[name] = amount
        return self

    def names(self) -> list[str]:
        """Return the dimensions with a value of at least :data:`MIN_RESOURCE`.

        The order is cpu, memory, then scalars in insertion order.
        """
        out = []
        if self.milli_cpu >= MIN_RESOURCE:
            out.append(CPU)
        if self.memory >= MIN_RESOURCE:
            out.append(MEMORY)
        out.extend(name for name, v in self.scalars.items() if v >= MIN_RESOURCE)
        return out

    def all_names(self) -> list[str]:
        """Return cpu, memory and every scalar key, whatever its value."""
        return [CPU, MEMORY, *self.scalars]

    def is_empty(self) -> bool:
        """Whether every dimension but ``pods`` is below :data:`MIN_RESOURCE`.

        A task whose request is empty is best-effort.
        """
        if self.milli_cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        return all(v < MIN_RESOURCE for k, v in self.scalars.items() if k != PODS)

    def is_zero(self, name: str) -> bool:
        """Whether one dimension is below :data:`MIN_RESOURCE` (missing counts as zero)."""
        return self.get(name) < MIN_RESOURCE

    # ------------------------------------------------------------------ arithmetic

    def add(self, rr: Resource) -> Resource:
        """Add ``rr`` to this resource, dimension by dimension."""
        self.milli_cpu += rr.milli_cpu
        self.memory += rr.memory
        if rr.scalars:
            scalars = self.scalars
            for name, v in rr.scalars.items():
                scalars[name] = scalars.get(name, 0) + v
        return self

    def sub(self, rr: Resource) -> Resource:
        """Subtract ``rr`` from this resource.

        :raises ResourceError: when ``rr`` is not less or equal to this resource
            (the result would be negative); nothing is changed then.
        """
        if not rr.less_equal(self, _ZERO):
            raise ResourceError(f"resource is not sufficient to do operation: <{self}> sub <{rr}>")
        return self.sub_unchecked(rr)

    def sub_unchecked(self, rr: Resource) -> Resource:
        """Subtract ``rr`` without checking; dimensions may go negative."""
        self.milli_cpu -= rr.milli_cpu
        self.memory -= rr.memory
        if rr.scalars:
            scalars = self.scalars
            for name, v in rr.scalars.items():
                scalars[name] = scalars.get(name, 0) - v
        return self

    def multi(self, ratio: float) -> Resource:
        """Scale every dimension by ``ratio``."""
        self.milli_cpu *= ratio
        self.memory *= ratio
        for name in self.scalars:
            self.scalars[name] *= ratio
        return self

    def set_max(self, rr: Resource) -> Resource:
        """Raise every dimension to at least ``rr``'s value (init-container rule)."""
        if rr.milli_cpu > self.milli_cpu:
            self.milli_cpu = rr.milli_cpu
        if rr.memory > self.memory:
            self.memory = rr.memory
        for name, v in rr.scalars.items():
            current = self.scalars.get(name)
            if current is None or v > current:
                self.scalars[name] = v
        return self

    def min_dimension(self, rr: Resource, mode: Mode) -> Resource:
        """Lower every dimension to at most ``rr``'s value.

        A scalar of this resource that ``rr`` lacks is set to zero in
        :attr:`Mode.ZERO` and left alone in :attr:`Mode.INFINITY`.
        """
        if rr.milli_cpu < self.milli_cpu:
            self.milli_cpu = rr.milli_cpu
        if rr.memory < self.memory:
            self.memory = rr.memory
        other = rr.scalars
        for name, v in self.scalars.items():
            if name in other:
                if other[name] < v:
                    self.scalars[name] = other[name]
            elif mode is _ZERO:
                self.scalars[name] = 0
        return self

    def fit_delta(self, rr: Resource) -> Resource:
        """Subtract ``rr`` plus :data:`MIN_RESOURCE` on every dimension ``rr`` requests.

        The result is what would be left after placing ``rr``, with a margin;
        a negative dimension means ``rr`` does not fit.
        """
        if rr.milli_cpu > 0:
            self.milli_cpu -= rr.milli_cpu + MIN_RESOURCE
        if rr.memory > 0:
            self.memory -= rr.memory + MIN_RESOURCE
        for name, v in rr.scalars.items():
            if v > 0:
                self.scalars[name] = self.scalars.get(name, 0) - v - MIN_RESOURCE
        return self

    def diff(self, rr: Resource, mode: Mode) -> tuple[Resource, Resource]:
        """Return ``(increased, decreased)``: how far this resource is above and below ``rr``.

        Equal dimensions give zero in ``decreased``. In :attr:`Mode.INFINITY`
        a missing scalar is unbounded and propagates as ``-1``.
        """
        inc = Resource()
        dec = Resource()
        if self.milli_cpu > rr.milli_cpu:
            inc.milli_cpu = self.milli_cpu - rr.milli_cpu
        else:
            dec.milli_cpu = rr.milli_cpu - self.milli_cpu
        if self.memory > rr.memory:
            inc.memory = self.memory - rr.memory
        else:
            dec.memory = rr.memory - self.memory
        default = 0 if mode is _ZERO else -1
        for name in {**self.scalars, **rr.scalars}:
            left = self.scalars.get(name, default)
            right = rr.scalars.get(name, default)
            if left == -1:
                inc.scalars[name] = -1
            elif right == -1:
                dec.scalars[name] = -1
            elif left > right:
                inc.scalars[name] = left - right
            else:
                dec.scalars[name] = right - left
        return inc, dec

    # ------------------------------------------------------------------ comparisons

    def less_equal(self, rr: Resource, mode: Mode = _ZERO) -> bool:
        """Whether every dimension is at most ``rr``'s, with the 0.1 tolerance.

        Scalars only ``rr`` has are ignored, except that in
        :attr:`Mode.INFINITY` they make the answer false (this side's missing
        dimension is then unbounded).
        """
        if not (
            (self.milli_cpu < rr.milli_cpu or abs(self.milli_cpu - rr.milli_cpu) < MIN_RESOURCE)
            and (self.memory < rr.memory or abs(self.memory - rr.memory) < MIN_RESOURCE)
        ):
            return False
        other = rr.scalars
        if self.scalars:
            for name, v in self.scalars.items():
                right = other.get(name)
                if right is None:
                    if mode is _INF:
                        continue
                    right = 0
                if not (v < right or abs(v - right) < MIN_RESOURCE):
                    return False
        if mode is _INF and other:
            for name in other:
                if name not in self.scalars:
                    return False
        return True

    def less_equal_with_dimension(self, rr: Resource, req: Resource) -> bool:
        """Whether this resource is at most ``rr`` on the dimensions ``req`` asks for.

        Only dimensions with a request of at least :data:`MIN_RESOURCE`
        count, ``pods`` never does, and the comparison is strict (no
        tolerance).
        """
        return not self.exceeding_dimensions(rr, req)

    def fits_with(self, req: Resource, limit: Resource) -> bool:
        """Whether this resource plus ``req`` stays within ``limit``, as :meth:`less_equal_with_dimension` compares.

        The same answer as ``self.clone().add(req).less_equal_with_dimension(limit, req)``,
        without building the sum (quota plugins ask this for every task).
        """
        if req.milli_cpu >= MIN_RESOURCE and self.milli_cpu + req.milli_cpu > limit.milli_cpu:
            return False
        if req.memory >= MIN_RESOURCE and self.memory + req.memory > limit.memory:
            return False
        if req.scalars:
            used = self.scalars
            cap = limit.scalars
            for name, v in req.scalars.items():
                if name != PODS and v >= MIN_RESOURCE and used.get(name, 0) + v > cap.get(name, 0):
                    return False
        return True

    def exceeding_dimensions(self, rr: Resource, req: Resource) -> list[str]:
        """Return the dimensions ``req`` asks for on which this resource exceeds ``rr``."""
        out = []
        if req.milli_cpu >= MIN_RESOURCE and self.milli_cpu > rr.milli_cpu:
            out.append(CPU)
        if req.memory >= MIN_RESOURCE and self.memory > rr.memory:
            out.append(MEMORY)
        for name, v in req.scalars.items():
            if name == PODS or v < MIN_RESOURCE:
                continue
            if self.scalars.get(name, 0) > rr.scalars.get(name, 0):
                out.append(name)
        return out

    def less(self, rr: Resource, mode: Mode = _ZERO) -> bool:
        """Whether every dimension is strictly below ``rr``'s (no tolerance)."""
        if not (self.milli_cpu < rr.milli_cpu and self.memory < rr.memory):
            return False
        other = rr.scalars
        for name, v in self.scalars.items():
            right = other.get(name)
            if right is None:
                if mode is _INF:
                    continue
                right = 0
            if not v < right:
                return False
        if mode is _INF:
            for name in other:
                if name not in self.scalars:
                    return False
        return True

    def less_partly(self, rr: Resource, mode: Mode = _ZERO) -> bool:
        """Whether at least one dimension is strictly below ``rr``'s."""
        if self.milli_cpu < rr.milli_cpu or self.memory < rr.memory:
            return True
        other = rr.scalars
        for name, v in self.scalars.items():
            right = other.get(name)
            if right is None:
                if mode is _INF:
                    return True
                right = 0
            if v < right:
                return True
        if mode is _ZERO:
            for name, v in other.items():
                if name not in self.scalars and v > 0:
                    return True
        return False

    def less_equal_partly(self, rr: Resource, mode: Mode = _ZERO) -> bool:
        """Whether at least one dimension is at most ``rr``'s, with the tolerance."""
        if _le(self.milli_cpu, rr.milli_cpu) or _le(self.memory, rr.memory):
            return True
        other = rr.scalars
        for name, v in self.scalars.items():
            right = other.get(name)
            if right is None:
                if mode is _INF:
                    return True
                right = 0
            if _le(v, right):
                return True
        if mode is _ZERO:
            for name in other:
                if name not in self.scalars:
                    return True
        return False

    def equal(self, rr: Resource) -> bool:
        """Whether cpu, memory and this resource's scalars match ``rr`` within the tolerance."""
        if abs(self.milli_cpu - rr.milli_cpu) >= MIN_RESOURCE or abs(self.memory - rr.memory) >= MIN_RESOURCE:
            return False
        return all(abs(v - rr.scalars.get(name, 0)) < MIN_RESOURCE for name, v in self.scalars.items())

    def __eq__(self, other: object) -> bool:
        """Exact equality; a missing scalar equals zero."""
        if not isinstance(other, Resource):
            return NotImplemented
        if self.milli_cpu != other.milli_cpu or self.memory != other.memory:
            return False
        for name in {**self.scalars, **other.scalars}:
            if self.scalars.get(name, 0) != other.scalars.get(name, 0):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    # ------------------------------------------------------------------ display

    def to_quantities(self) -> dict[str, str]:
        """Return the resource as Kubernetes quantities (``{"cpu": "1500m", ...}``)."""
        out = {CPU: _fmt_milli(self.milli_cpu), MEMORY: _fmt_bytes(self.memory)}
        for name, v in sorted(self.scalars.items()):
            out[name] = _fmt_whole(v) if name == PODS else _fmt_milli(v)
        return out

    def describe(self, *, with_pods: bool = False, readable: bool = False) -> str:
        """``cpu 2, memory 4Gi, nvidia.com/gpu 1``: the non-zero dimensions (``pods`` only ``with_pods``).

        :param readable: as :meth:`to_readable` (``memory 22.9 GiB``) instead of Kubernetes quantities.
        """
        shown = self.to_readable() if readable else self.to_quantities()
        parts = [f"{name} {qty}" for name, qty in shown.items() if self.get(name) != 0 and (with_pods or name != PODS)]
        return ", ".join(parts) or "nothing"

    def to_readable(self) -> dict[str, str]:
        """Return the resource as a person reads it: cpu in cores, sizes in KiB to TiB, GPUs and others in units.

        >>> Resource.from_list({"cpu": "2500m", "memory": "24069276Ki", "nvidia.com/gpu": "5331200m"}).to_readable()
        {'cpu': '2.5', 'memory': '23 GiB', 'nvidia.com/gpu': '5331.2'}
        """
        out = {CPU: _readable_units(self.milli_cpu / 1000), MEMORY: _readable_bytes(self.memory)}
        for name, v in sorted(self.scalars.items()):
            if name == PODS:
                out[name] = _fmt_whole(v)
            elif name == "ephemeral-storage" or name.startswith("hugepages-"):
                out[name] = _readable_bytes(v / 1000)
            else:
                out[name] = _readable_units(v / 1000)
        return out

    def __repr__(self) -> str:
        parts = [f"cpu {_num(self.milli_cpu)}m", f"memory {_num(self.memory)}"]
        parts.extend(f"{name} {_num(v)}" for name, v in sorted(self.scalars.items()))
        return "<" + ", ".join(parts) + ">"

    __str__ = __repr__


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}"


def _fmt_whole(v: float) -> str:
    return _num(v)


def _fmt_milli(v: float) -> str:
    if v >= INFINITE:
        return "inf"
    if float(v).is_integer() and int(v) % 1000 == 0:
        return str(int(v) // 1000)
    return f"{_num(v)}m"


def _readable_units(v: float) -> str:
    if v >= INFINITE / 1000:
        return "unlimited"
    return f"{round(v, 3):g}" if abs(v) < 1e15 else f"{v:.3e}"


def _readable_bytes(v: float) -> str:
    if v >= INFINITE / 1000:
        return "unlimited"
    for suffix, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(v) >= size:
            return f"{round(v / size, 1):g} {suffix}"
    return f"{round(v):g} B" if v else "0"


def _fmt_bytes(v: float) -> str:
    if v >= INFINITE:
        return "inf"
    if float(v).is_integer():
        n = int(v)
        for suffix, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if n and n % size == 0:
                return f"{n // size}{suffix}"
        return str(n)
    return _num(v)


def res_min(left: Resource, right: Resource) -> Resource:
    """Per-dimension minimum; scalars are taken from ``left``'s keys (missing on the right = 0)."""
    out = Resource(min(left.milli_cpu, right.milli_cpu), min(left.memory, right.memory))
    for name, v in left.scalars.items():
        out.scalars[name] = min(v, right.scalars.get(name, 0))
    return out


def res_max(left: Resource, right: Resource) -> Resource:
    """Per-dimension maximum over both operands' dimensions (missing = 0)."""
    out = Resource(max(left.milli_cpu, right.milli_cpu), max(left.memory, right.memory))
    for name in {**left.scalars, **right.scalars}:
        v = max(left.scalars.get(name, 0), right.scalars.get(name, 0))
        if v >= 0:
            out.scalars[name] = v
    return out


def exceeded_part(left: Resource, right: Resource) -> Resource:
    """The positive part of ``left - right``, per dimension (missing = 0)."""
    out = Resource(max(left.milli_cpu - right.milli_cpu, 0), max(left.memory - right.memory, 0))
    for name, v in left.scalars.items():
        d = v - right.scalars.get(name, 0)
        if d > 0:
            out.scalars[name] = d
    return out


def share(left: float, right: float) -> float:
    """``left / right``, where a zero denominator gives 0 (``left`` zero) or 1."""
    if right == 0:
        return 0.0 if left == 0 else 1.0
    return left / right


def total(resources: Iterable[Resource]) -> Resource:
    """Return the sum of several resources."""
    out = Resource()
    for r in resources:
        out.add(r)
    return out
