"""The Helios traces (SenseTime, SC'21): ``cluster_log.csv`` -> Volcano Jobs in one Queue per virtual cluster.

``cluster_log.csv`` has one row per Slurm job: ``job_id,user,vc,gpu_num,
cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue``
(times as ``2020-06-09 18:41:01``, durations in seconds). Each row becomes a
Volcano Job of ``node_num`` pods sharing the job's GPUs and CPUs (a gang:
``minAvailable`` is ``node_num``), in the Queue named after its virtual
cluster, arriving at ``submit_time``.

Runtime and patience follow the openb rules of spec/replay.md: a job that
started runs ``duration`` (``end_time - start_time`` when the column is
absent) and ends Failed unless its ``state`` is COMPLETED; a job that never
started gets ``end_time - submit_time`` as its patience and, should it start
in the replay, as its runtime.

The trace has no node list, so ``--nodes`` is required (a node list in the
openb schema, or Node manifests). The per-VC GPU table ``cluster_gpu_number.csv``
(``date,<vc>...,total``) may be given among the trace files: each VC's GPU
count on its last date becomes its queue's weight. ``docs/traces.md`` has the
column-by-column mapping.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from volcanolib.errors import ManifestError, TraceError
from volcanolib.replay.traces._objects import (
    CANCEL_AFTER,
    DURATION,
    EXIT_CODE,
    GPU,
    duration_text,
    is_node_list,
    queue,
    raise_empty,
    read_nodes,
    rfc3339,
)
from volcanolib.replay.traces._table import Row, Table

__all__ = ["FAILED_EXIT_CODE", "LOG_COLUMNS", "NAMESPACE", "STATES", "USER_ANNOTATION", "read_helios"]

log = logging.getLogger("volcanolib.replay")

#: The columns of ``cluster_log.csv`` a job needs (``duration`` and ``queue`` are optional).
LOG_COLUMNS: Final = (
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
)
#: Slurm's final job states in the trace -> whether the job ended well.
STATES: Final = {"COMPLETED": True, "FAILED": False, "CANCELLED": False, "TIMEOUT": False, "NODE_FAIL": False}
#: The exit code of a job that started and did not complete.
FAILED_EXIT_CODE: Final = 1
#: The namespace of the jobs.
NAMESPACE: Final = "default"
#: The Job annotation holding the trace's (hashed) user.
USER_ANNOTATION: Final = "volcanolib.io/user"
_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def read_helios(paths: Sequence[Path], nodes: Path | None) -> list[dict[str, Any]]:
    """Read Helios ``cluster_log.csv`` files (and optionally ``cluster_gpu_number.csv``) into Kubernetes objects.

    :param paths: job logs, and at most one per-VC GPU table (told apart by its ``date`` column).
    :param nodes: the nodes (a ``.csv`` node list in the openb schema, or YAML/JSON Node manifests).
    :returns: one Queue per virtual cluster (sorted by name), the Nodes, then one
        Volcano Job per row in file order.
    :raises TraceError: naming the file, row and column of the first bad row.
    :raises ManifestError: when no node list or no job log is given.
    """
    if nodes is None:
        raise ManifestError("the helios format needs the nodes, which the trace does not list: --nodes NODES.csv")
    logs: list[Table] = []
    weights: dict[str, int] | None = None
    for path in paths:
        table = Table.read(path)
        if table.header[:1] == ["date"]:
            if weights is not None:
                raise TraceError("a second per-VC GPU table (cluster_gpu_number.csv)", source=table.source, row=1)
            weights = _vc_gpus(table)
        elif is_node_list(table):
            raise TraceError("this is a node list, not a job log: give it with --nodes", source=table.source, row=1)
        else:
            logs.append(table)
    if not logs:
        raise ManifestError("no Helios job log (cluster_log.csv) given")
    node_objects = read_nodes(nodes)
    jobs: list[dict[str, Any]] = []
    seen: dict[str, tuple[str, int]] = {}
    vcs: set[str] = set()
    for table in logs:
        before = len(jobs)
        for row in table.rows(LOG_COLUMNS, kind="a Helios job log (cluster_log.csv)"):
            job = _job(row)
            name = job["metadata"]["name"]
            first = seen.setdefault(name, (row.source, row.line))
            if first != (row.source, row.line):
                where = f"row {first[1]}" if first[0] == row.source else f"{first[0]} row {first[1]}"
                row.fail(f"job {row.text('job_id')!r} is already listed at {where}", "job_id")
            vcs.add(job["spec"]["queue"])
            jobs.append(job)
        if len(jobs) == before:
            raise_empty(table.source, "Helios job log")
    queues: list[dict[str, Any]] = []
    unknown = sorted(vcs - set(weights)) if weights is not None else []
    if unknown:
        log.warning(
            "%d virtual cluster(s) are not in the GPU table and get weight 1: %s",
            len(unknown),
            ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""),
        )
    for vc in sorted(vcs | set(weights or {})):
        queues.append(queue(vc, max(1, (weights or {}).get(vc, 1))))
    return [*queues, *node_objects, *jobs]


def _time(row: Row, column: str, *, required: bool) -> float | None:
    """A time as ``2020-06-09 18:41:01`` (read as UTC), RFC 3339, or seconds since the epoch."""
    raw = row.text(column)
    if not raw:
        if required:
            row.fail("missing value", column)
        return None
    try:
        float(raw)
    except ValueError:
        pass
    else:  # seconds since the epoch
        return row.seconds(column)
    text = raw[:-1] + "+00:00" if raw[-1:] in "Zz" else raw
    try:
        moment = _dt.datetime.fromisoformat(text)
    except ValueError:
        row.fail(f"expected a time such as 2020-06-09 18:41:01, got {raw!r}", column)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    seconds = (moment - _EPOCH).total_seconds()
    if seconds < 0:
        row.fail(f"time {raw!r} is before 1970", column)
    return seconds


def _job(row: Row) -> dict[str, Any]:
    job_id = row.required_text("job_id")
    vc = row.required_text("vc")
    user = row.text("user")
    gpus = row.count("gpu_num")
    cpus = row.count("cpu_num")
    pods = row.count("node_num")
    if pods == 0:
        row.fail("a job runs on at least one node, got 0", "node_num")
    state_text = row.required_text("state")
    state = state_text.upper()
    if state not in STATES:
        row.fail(f"unknown state {state_text!r} (expected {', '.join(STATES)})", "state")
    submit = _time(row, "submit_time", required=True)
    start = _time(row, "start_time", required=False)
    end = _time(row, "end_time", required=True)
    assert submit is not None and end is not None
    annotations: dict[str, str] = {}
    if start is not None:
        if start < submit:
            row.fail(
                f"start_time {row.text('start_time')} is before submit_time {row.text('submit_time')}", "start_time"
            )
        if end < start:
            row.fail(f"end_time {row.text('end_time')} is before start_time {row.text('start_time')}", "end_time")
        runtime = row.seconds("duration", required=False)
        annotations[DURATION] = duration_text(end - start if runtime is None else runtime)
        if not STATES[state]:
            annotations[EXIT_CODE] = str(FAILED_EXIT_CODE)
    else:
        if end < submit:
            row.fail(f"end_time {row.text('end_time')} is before submit_time {row.text('submit_time')}", "end_time")
        annotations[DURATION] = annotations[CANCEL_AFTER] = duration_text(end - submit)
    if user:
        annotations[USER_ANNOTATION] = user
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": f"job-{job_id.lower()}",
            "namespace": NAMESPACE,
            "creationTimestamp": rfc3339(submit),
            "annotations": annotations,
        },
        "spec": {"schedulerName": "volcano", "queue": vc, "minAvailable": pods, "tasks": _tasks(gpus, cpus, pods)},
    }


def _tasks(gpus: int, cpus: int, pods: int) -> list[dict[str, Any]]:
    """Split the job's GPUs and CPUs over its pods as evenly as whole units allow, one task per pod shape."""
    shapes: list[tuple[int, int]] = []
    for i in range(pods):
        shapes.append((gpus // pods + (1 if i < gpus % pods else 0), cpus // pods + (1 if i < cpus % pods else 0)))
    groups: list[tuple[tuple[int, int], int]] = []
    for shape in shapes:
        if groups and groups[-1][0] == shape:
            groups[-1] = (shape, groups[-1][1] + 1)
        else:
            groups.append((shape, 1))
    tasks = []
    for k, ((gpu, cpu), replicas) in enumerate(groups):
        requests: dict[str, str] = {"cpu": str(cpu)}
        if gpu > 0:
            requests[GPU] = str(gpu)
        tasks.append(
            {
                "name": "worker" if len(groups) == 1 else f"worker{k}",
                "replicas": replicas,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "resources": {"requests": requests}}],
                    }
                },
            }
        )
    return tasks


def _vc_gpus(table: Table) -> dict[str, int]:
    """Each VC's GPU count on the last date of ``cluster_gpu_number.csv``."""
    vcs = [c for c in table.header[1:] if c and c != "total"]
    latest: tuple[str, dict[str, int]] | None = None
    for row in table.rows(("date",), kind="a per-VC GPU table (cluster_gpu_number.csv)"):
        date = row.required_text("date")
        counts = {vc: row.count(vc) for vc in vcs}
        if latest is None or date >= latest[0]:
            latest = (date, counts)
    if latest is None:
        raise_empty(table.source, "per-VC GPU table")
    return latest[1]
