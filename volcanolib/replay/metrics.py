"""The figures of a replay: waits, completion times, utilisation, queue shares, fairness.

:func:`summarise` turns a :class:`~volcanolib.replay.records.ReplayRecord`
into the JSON document of ``volcanolib replay --json``; the CSV files, the
tables and the plots read the same rows, so every output agrees. Every
definition is in ``docs/replay-metrics.md``; in short:

- a job's ``wait`` is when it first had ``minAvailable`` pods running minus
  its arrival, its ``jct`` its finish minus its arrival;
- ``utilisation`` is, per resource, the allocated resource-seconds over the
  allocatable resource-seconds of the replay;
- a queue's ``share`` is the time average of its dominant-resource share of
  the cluster; ``jain`` is Jain's index of the queues' shares divided by
  their deserved shares;
- percentiles interpolate linearly between the two nearest ranks.

The document is deterministic: keys in a fixed order, lists sorted, floats
rounded to :data:`DIGITS` decimals, absent values ``null``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from volcanolib.api.resource import PODS, share
from volcanolib.replay.records import JobRecord, PodRecord, ReplayRecord, Sample

__all__ = [
    "CANCELLED_PHASES",
    "COMPLETED_PHASES",
    "DIGITS",
    "completion_times",
    "FAILED_PHASES",
    "finished",
    "JOB_COLUMNS",
    "JOB_HISTORY_KEYS",
    "POD_COLUMNS",
    "STATISTICS",
    "deserved_shares",
    "job_histories",
    "job_rows",
    "percentile",
    "pod_rows",
    "queue_names",
    "queue_shares",
    "resource_names",
    "series",
    "share_over_time",
    "statistics",
    "summarise",
    "time_weights",
    "to_json",
    "waits",
]

#: Decimals kept in every float of the document (a microsecond for times).
DIGITS: Final = 6
#: The keys of a distribution, in the order they appear.
STATISTICS: Final = ("mean", "p50", "p95", "p99", "max")
#: Job phases counted as ``completed``.
COMPLETED_PHASES: Final = frozenset({"Completed"})
#: Job phases counted as ``failed``: the job ended without completing.
FAILED_PHASES: Final = frozenset({"Failed", "Aborted", "Terminated"})
#: Job phases counted as ``cancelled``: deleted before it started (its patience ran out), or by the timeline.
CANCELLED_PHASES: Final = frozenset({"Cancelled", "Deleted"})
#: The keys of each entry of ``jobs``, in order (the columns of ``jobs.csv``).
JOB_COLUMNS: Final = (
    "name",
    "queue",
    "submitted",
    "started",
    "finished",
    "phase",
    "wait",
    "jct",
    "restarts",
    "evicted_pods",
    "version",
    "kept_pods",
)
#: The keys of each entry of ``pods``, in order (the first columns of ``pods.csv``).
POD_COLUMNS: Final = (
    "name",
    "job",
    "node",
    "submitted",
    "bound",
    "started",
    "finished",
    "phase",
    "attempt",
    "restarts",
    "deleted",
)
#: The keys each entry of ``jobs`` of the document adds to :data:`JOB_COLUMNS`: lists of ``[time, phase]``.
JOB_HISTORY_KEYS: Final = ("phases", "pod_group_phases")
_TIMING_ORDER: Final = ("wall", "sessions", "snapshots", "events")


def _round(value: float) -> float:
    # ``+ 0.0`` turns -0.0 into 0.0, so that equal figures print equally.
    return round(float(value), DIGITS) + 0.0


def _opt(value: float | None) -> float | None:
    return None if value is None else _round(value)


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile of sorted values, interpolating linearly between the two nearest ranks.

    This is the common definition (Hyndman and Fan's type 7, the default of
    NumPy and of spreadsheets): with ``n`` values, rank ``h = (n - 1) *
    fraction`` counted from 0; a fractional rank lies on the straight line
    between its two neighbours.

    :param ordered: the values, sorted ascending; at least one.
    :param fraction: between 0 and 1 (0.95 for p95).
    :returns: the quantile.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5)
    2.5
    """
    rank = (len(ordered) - 1) * fraction
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (rank - low) * (ordered[high] - ordered[low])


def statistics(values: Iterable[float]) -> dict[str, float | None]:
    """Mean, p50, p95, p99 and max of ``values`` (see :func:`percentile`); every one ``None`` without values."""
    ordered = sorted(values)
    if not ordered:
        return dict.fromkeys(STATISTICS)
    return {
        "mean": _round(math.fsum(ordered) / len(ordered)),
        "p50": _round(percentile(ordered, 0.50)),
        "p95": _round(percentile(ordered, 0.95)),
        "p99": _round(percentile(ordered, 0.99)),
        "max": _round(ordered[-1]),
    }


def _wait(job: JobRecord) -> float | None:
    return None if job.started is None else job.started - job.submitted


def _jct(job: JobRecord) -> float | None:
    return None if job.finished is None else job.finished - job.submitted


def _ended(job: JobRecord) -> bool:
    """Whether the job's completion time counts in the ``jct`` figures: it completed or failed."""
    return job.phase in COMPLETED_PHASES or job.phase in FAILED_PHASES


def waits(jobs: Iterable[JobRecord]) -> list[float]:
    """The waits of the jobs that started (``started - submitted``), in the jobs' order: the ``wait`` figures."""
    return [w for w in map(_wait, jobs) if w is not None]


def completion_times(jobs: Iterable[JobRecord]) -> list[float]:
    """The completion times (``finished - submitted``) of the jobs that completed or failed: the ``jct`` figures.

    A cancelled job's finish is when it was deleted, not a completion: it is left out.
    """
    return [job.finished - job.submitted for job in jobs if _ended(job) and job.finished is not None]


def _name(job: JobRecord) -> str:
    return job.name


def finished(phase: str) -> bool:
    """Whether a job's last phase counts it as ended: ``completed``, ``failed`` or ``cancelled``, not ``unfinished``."""
    return phase in COMPLETED_PHASES or phase in FAILED_PHASES or phase in CANCELLED_PHASES


def _evicted(jobs: Iterable[JobRecord]) -> int:
    """Pod attempts the scheduler evicted (preempt, reclaim), over the jobs."""
    return sum(job.evicted_pods for job in jobs)


def _distributions(jobs: Sequence[JobRecord]) -> tuple[dict[str, float | None], dict[str, float | None]]:
    return statistics(waits(jobs)), statistics(completion_times(jobs))


def _resource_names(samples: Iterable[Sample]) -> list[str]:
    names: set[str] = set()
    for sample in samples:
        names.update(sample.capacity)
        names.update(sample.allocated)
    names.discard(PODS)
    return sorted(names)


def resource_names(record: ReplayRecord) -> list[str]:
    """The resources the figures cover, sorted: every one allocatable or allocated in a sample, but ``pods``.

    ``pods`` (how many pods a node admits) is left out, as Volcano leaves it
    out of shares.
    """
    return _resource_names(record.samples)


def _time_weights(record: ReplayRecord, samples: Sequence[Sample]) -> list[tuple[Sample, float]]:
    out: list[tuple[Sample, float]] = []
    start, end = record.start, record.end
    for i, sample in enumerate(samples):
        until = samples[i + 1].time if i + 1 < len(samples) else end
        seconds = min(until, end) - max(sample.time, start)
        if seconds > 0:
            out.append((sample, seconds))
    if not out and samples:
        before = [s for s in samples if s.time <= end]
        return [(before[-1] if before else samples[0], 1.0)]
    return out


def time_weights(record: ReplayRecord) -> list[tuple[Sample, float]]:
    """Each sample with the simulated seconds it holds for, within ``record.start`` .. ``record.end``.

    A sample holds from its time until the next sample's (the last one until
    the end); time before the first sample is not covered. A replay of no
    duration weighs 1 the last sample at or before its end, so that its
    figures are the state of that instant.

    :returns: ``(sample, seconds)`` in time order; samples that hold for no
        time are left out.
    """
    return _time_weights(record, sorted(record.samples, key=_time))


def _time(sample: Sample) -> float:
    return sample.time


def queue_names(record: ReplayRecord) -> list[str]:
    """Every queue the replay knows, sorted: configured, named by a job, or holding resources in a sample."""
    names = {q.name for q in record.queues}
    names.update(job.queue for job in record.jobs)
    for sample in record.samples:
        names.update(sample.queue_allocated)
    return sorted(names)


@attrs.frozen
class _Timeline:
    """What every figure over time needs, worked out once per record."""

    samples: list[Sample]  # in time order
    weights: list[tuple[Sample, float]]  # as time_weights gives them
    covered: float  # the seconds the weights add up to
    resources: list[str]
    queues: list[str]

    @classmethod
    def of(cls, record: ReplayRecord) -> _Timeline:
        samples = sorted(record.samples, key=_time)
        weights = _time_weights(record, samples)
        covered = math.fsum(seconds for _, seconds in weights)
        return cls(samples, weights, covered, _resource_names(samples), queue_names(record))

    def integrals(self, amounts: Callable[[Sample], Mapping[str, float]]) -> dict[str, float]:
        """Per resource, the amount times the seconds it held, summed over the samples (0 where missing)."""
        return {
            name: math.fsum(amounts(s).get(name, 0.0) * seconds for s, seconds in self.weights)
            for name in self.resources
        }


def _capacity(sample: Sample) -> Mapping[str, float]:
    return sample.capacity


def _allocated(sample: Sample) -> Mapping[str, float]:
    return sample.allocated


def _of_queue(queue: str) -> Callable[[Sample], Mapping[str, float]]:
    nothing: dict[str, float] = {}

    def amounts(sample: Sample) -> Mapping[str, float]:
        return sample.queue_allocated.get(queue, nothing)

    return amounts


_NOTHING: Final[Mapping[str, float]] = {}


def share_over_time(sample: Sample, queue: str, names: Sequence[str]) -> float:
    """The queue's dominant-resource share of the cluster in one sample.

    The largest, over ``names``, of the queue's allocation divided by the
    cluster's allocatable amount (a resource the cluster lacks counts 1 when
    the queue holds some, as in Volcano's share).
    """
    allocated = sample.queue_allocated.get(queue, _NOTHING)
    if not allocated:
        return 0.0
    capacity = sample.capacity
    return max((share(allocated.get(name, 0.0), capacity.get(name, 0.0)) for name in names), default=0.0)


def _queue_shares(timeline: _Timeline) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    names = timeline.resources
    for queue in timeline.queues:
        held = math.fsum(share_over_time(s, queue, names) * seconds for s, seconds in timeline.weights)
        out[queue] = held / timeline.covered if timeline.covered > 0 else None
    return out


def queue_shares(record: ReplayRecord) -> dict[str, float | None]:
    """Each queue's time-averaged dominant-resource share (:func:`share_over_time`); ``None`` without samples."""
    return _queue_shares(_Timeline.of(record))


def _deserved_shares(record: ReplayRecord, timeline: _Timeline) -> dict[str, tuple[float | None, str | None]]:
    covered = timeline.covered
    capacity = {
        name: seconds / covered if covered > 0 else 0.0 for name, seconds in timeline.integrals(_capacity).items()
    }
    active = {job.queue for job in record.jobs}
    out: dict[str, tuple[float | None, str | None]] = dict.fromkeys(timeline.queues, (None, None))
    explicit_total = 0.0
    by_weight: dict[str, int] = {}
    for queue in record.queues:
        if queue.deserved is not None:
            dominant = max(
                (share(amount, capacity.get(name, 0.0)) for name, amount in queue.deserved.items() if name != PODS),
                default=0.0,
            )
            out[queue.name] = (min(dominant, 1.0), "deserved")
            if queue.name in active:
                explicit_total += min(dominant, 1.0)
        elif queue.name in active:
            by_weight[queue.name] = max(queue.weight, 0)
    left = max(0.0, 1.0 - explicit_total)
    weight_sum = sum(by_weight.values())
    for name, weight in by_weight.items():
        out[name] = (left * weight / weight_sum if weight_sum > 0 else 0.0, "weight")
    return out


def deserved_shares(record: ReplayRecord) -> dict[str, tuple[float | None, str | None]]:
    """Each queue's deserved share of the cluster, and where it comes from (``"deserved"`` or ``"weight"``).

    A queue with ``deserved`` resources deserves their dominant share of
    the time-averaged allocatable resources (at most 1). Queues without
    ``deserved`` that had jobs in the replay share what those leave (1 minus
    their sum, at least 0) in proportion to their weights, as Volcano's
    proportion plugin divides a cluster by weight among queues with work. A
    queue without ``deserved`` and without jobs deserves nothing it would
    use: ``(None, None)``, as does a queue the replay does not know.
    """
    return _deserved_shares(record, _Timeline.of(record))


def _jain(values: Sequence[float]) -> float | None:
    """Jain's index, ``(sum x)^2 / (n * sum x^2)``: 1 when all are equal, 1/n when one has everything."""
    squares = math.fsum(x * x for x in values)
    if not values or squares == 0:
        return None
    return math.fsum(values) ** 2 / (len(values) * squares)


def job_rows(record: ReplayRecord) -> list[dict[str, Any]]:
    """The ``jobs`` of the document, by arrival then name: times, phase, wait, jct, restarts, evicted pods."""
    return [
        dict(
            zip(
                JOB_COLUMNS,
                (
                    job.name,
                    job.queue,
                    _round(job.submitted),
                    _opt(job.started),
                    _opt(job.finished),
                    job.phase,
                    _opt(_wait(job)),
                    _opt(_jct(job)),
                    job.restarts,
                    job.evicted_pods,
                    job.version,
                    job.kept_pods,
                ),
                strict=True,
            )
        )
        for job in sorted(record.jobs, key=lambda j: (j.submitted, j.name))
    ]


def _pod_key(pod: PodRecord) -> tuple[float, str, int]:
    return (pod.submitted, pod.name, pod.attempt)


def pod_rows(record: ReplayRecord, *, requests: bool = False) -> list[dict[str, Any]]:
    """The ``pods`` of the document, one per pod attempt, by arrival, name and attempt.

    :param requests: add each pod's ``queue`` and ``request`` (resource name
        to amount), as the CSV file has them.
    """
    rows = []
    for pod in sorted(record.pods, key=_pod_key):
        row: dict[str, Any] = dict(
            zip(
                POD_COLUMNS,
                (
                    pod.name,
                    pod.job,
                    pod.node,
                    _round(pod.submitted),
                    _opt(pod.bound),
                    _opt(pod.started),
                    _opt(pod.finished),
                    pod.phase,
                    pod.attempt,
                    pod.restarts,
                    _opt(pod.deleted),
                ),
                strict=True,
            )
        )
        if requests:
            row["queue"] = pod.queue
            row["request"] = {name: _round(pod.request[name]) for name in sorted(pod.request)}
        rows.append(row)
    return rows


def job_histories(record: ReplayRecord) -> list[dict[str, Any]]:
    """Per job, in the order of :func:`job_rows`: its phases and its PodGroup's, as ``[time, phase]`` pairs.

    .. versionadded:: 0.2
    """
    return [
        {
            "phases": [[_round(t), phase] for t, phase in job.phases],
            "pod_group_phases": [[_round(t), phase] for t, phase in job.pod_group_phases],
        }
        for job in sorted(record.jobs, key=lambda j: (j.submitted, j.name))
    ]


def _series(timeline: _Timeline, *, capacity: bool) -> dict[str, Any]:
    samples = timeline.samples

    def columns(amounts: Callable[[Sample], Mapping[str, float]]) -> dict[str, list[float]]:
        # Inline rounding (as _round): a long replay has hundreds of thousands of these.
        return {name: [round(amounts(s).get(name, 0.0), DIGITS) + 0.0 for s in samples] for name in timeline.resources}

    out: dict[str, Any] = {
        "time": [round(s.time, DIGITS) + 0.0 for s in samples],
        "pending_pods": [s.pending_pods for s in samples],
        "running_pods": [s.running_pods for s in samples],
        "allocated": columns(_allocated),
    }
    if capacity:
        out["capacity"] = columns(_capacity)
    out["queue_allocated"] = {queue: columns(_of_queue(queue)) for queue in timeline.queues}
    return out


def series(record: ReplayRecord, *, capacity: bool = False) -> dict[str, Any]:
    """The ``series`` of the document: one entry per sample, in time order, of every column.

    ``allocated`` has one list per resource (:func:`resource_names`),
    ``queue_allocated`` one per queue and resource; an amount missing from
    a sample is 0.

    :param capacity: add ``capacity``, the allocatable resources, after
        ``allocated`` (as the CSV file has them).
    """
    return _series(_Timeline.of(record), capacity=capacity)


def _utilisation(timeline: _Timeline) -> dict[str, float | None]:
    available = timeline.integrals(_capacity)
    used = timeline.integrals(_allocated)
    return {name: _round(used[name] / available[name]) if available[name] > 0 else None for name in timeline.resources}


def _timings(timings: Mapping[str, float]) -> dict[str, float]:
    order = [k for k in _TIMING_ORDER if k in timings] + sorted(k for k in timings if k not in _TIMING_ORDER)
    return {k: _round(timings[k]) for k in order}


def summarise(record: ReplayRecord) -> dict[str, Any]:
    """The JSON document of ``volcanolib replay --json``.

    Its keys, in this order: ``summary`` (job counts, the jobs with a pod no
    node can take and why (``unplaceable``), evicted pods, wait and
    jct distributions, makespan, utilisation per resource, Jain's fairness
    index, sessions, simulated seconds), ``queues`` (per queue: jobs,
    evicted pods, wait, jct, time-averaged share, deserved share), ``jobs``, ``pods`` (one per
    attempt), ``series`` (the cluster over time) and ``timings`` (wall-clock
    seconds, the only part that differs between two runs of one replay).
    The definitions are in ``docs/replay-metrics.md``.

    :param record: what the replay recorded.
    :returns: plain dicts and lists, ready for :func:`to_json`.
    """
    jobs = record.jobs
    completed = sum(job.phase in COMPLETED_PHASES for job in jobs)
    failed = sum(job.phase in FAILED_PHASES for job in jobs)
    cancelled = sum(job.phase in CANCELLED_PHASES for job in jobs)
    wait, jct = _distributions(jobs)
    finishes = [job.finished for job in jobs if job.finished is not None]
    makespan = max(finishes) - min(job.submitted for job in jobs) if finishes else None
    timeline = _Timeline.of(record)
    shares = _queue_shares(timeline)
    deserved = _deserved_shares(record, timeline)
    by_queue: dict[str, list[JobRecord]] = {queue: [] for queue in timeline.queues}
    for job in jobs:
        by_queue[job.queue].append(job)
    ratios = []
    for queue, (fair, _) in deserved.items():
        mean = shares[queue]
        if by_queue[queue] and fair is not None and fair > 0 and mean is not None:
            ratios.append(mean / fair)
    queues = []
    for queue, members in by_queue.items():
        q_wait, q_jct = _distributions(members)
        fair, source = deserved[queue]
        queues.append(
            {
                "name": queue,
                "jobs": len(members),
                "evicted_pods": _evicted(members),
                "wait": q_wait,
                "jct": q_jct,
                "share": {"mean": _opt(shares[queue])},
                "deserved": {"share": _opt(fair), "from": source},
            }
        )
    return {
        "summary": {
            "jobs": len(jobs),
            "completed": completed,
            "failed": failed,
            "cancelled": cancelled,
            "unfinished": len(jobs) - completed - failed - cancelled,
            "unplaceable": {job.name: job.unplaceable for job in sorted(jobs, key=_name) if job.unplaceable},
            "evicted_pods": _evicted(jobs),
            "wait": wait,
            "jct": jct,
            "makespan": _opt(makespan),
            "utilisation": _utilisation(timeline),
            "fairness": {"jain": _opt(_jain(ratios))},
            "sessions": record.sessions,
            "simulated_seconds": _round(record.end - record.start),
        },
        "queues": queues,
        "jobs": [row | history for row, history in zip(job_rows(record), job_histories(record), strict=True)],
        "pods": pod_rows(record),
        "series": _series(timeline, capacity=False),
        "timings": _timings(record.timings),
    }


def _scalar(value: object) -> bool:
    return not isinstance(value, (dict, list))


def _flat(value: object) -> bool:
    """A scalar, or a mapping of scalars (a distribution): one line of JSON."""
    if isinstance(value, dict):
        return all(map(_scalar, value.values()))
    return not isinstance(value, list)


def _pairs(value: object) -> bool:
    """A list of scalars or of short lists of scalars (a job's phases with their times)."""
    return isinstance(value, list) and all(
        _scalar(item) or (isinstance(item, list) and all(map(_scalar, item))) for item in value
    )


def _row(value: object) -> bool:
    """A scalar, or a mapping of flat values or pairs (a job, a pod, a queue): one line of JSON inside a list."""
    if isinstance(value, dict):
        return all(_flat(item) or _pairs(item) for item in value.values())
    return _scalar(value)


def _layout(value: Any, indent: str, out: list[str]) -> None:
    """Append ``value`` as JSON text, nested mappings and lists indented, flat values and rows on one line."""
    inner = indent + "  "
    if isinstance(value, dict) and not _flat(value):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append(f"\n{inner}{json.dumps(key)}: ")
            _layout(item, inner, out)
            out.append("," if i + 1 < len(value) else "")
        out.append(f"\n{indent}}}")
    elif isinstance(value, list) and not all(map(_scalar, value)):
        if all(map(_row, value)):  # one row per line
            out.append("[\n" + ",\n".join(inner + json.dumps(item, allow_nan=False) for item in value))
        else:
            out.append("[")
            for i, item in enumerate(value):
                out.append(f"\n{inner}")
                _layout(item, inner, out)
                out.append("," if i + 1 < len(value) else "")
        out.append(f"\n{indent}]")
    else:
        out.append(json.dumps(value, allow_nan=False))


def to_json(document: Mapping[str, Any]) -> str:
    """The document as JSON text, in the document's key order, ending with a newline.

    Laid out for both people and programs: a mapping has one key per line,
    indented by two spaces; a row (a job, a pod, a queue, a distribution)
    or a list of numbers (a series) is on one line. Two equal documents give
    the same bytes.
    """
    out: list[str] = []
    _layout(dict(document), "", out)
    return "".join(out) + "\n"
