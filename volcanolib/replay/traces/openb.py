"""The Alibaba GPU cluster trace v2023 ("openb"): node and pod lists -> Nodes, PriorityClasses, bare Pods.

The trace (the ``cluster-trace-gpu-v2023`` files of Alibaba's clusterdata
repository, used by the FGD paper at USENIX ATC'23) has two tables:

- the node list, ``sn,cpu_milli,memory_mib,gpu,model``: one Node each;
- the pod list, ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,
  pod_phase,creation_time,deletion_time,scheduled_time`` (times in seconds
  from the start of the trace): one bare Pod each, arriving at
  ``creation_time`` (second 0 is 1970-01-01T00:00:00Z).

Runtime and patience follow spec/replay.md: a pod that was scheduled in the
trace runs ``deletion_time - scheduled_time`` and ends Failed when its
``pod_phase`` is Failed; a pod that never was gets ``deletion_time -
creation_time`` as its patience and, should it start in the replay, as its
runtime. ``docs/traces.md`` has the column-by-column mapping, the QoS ->
PriorityClass table and the handling of fractional GPUs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from volcanolib.errors import ManifestError, TraceError
from volcanolib.replay.traces._objects import (
    CANCEL_AFTER,
    DURATION,
    EXIT_CODE,
    GPU,
    GPU_MODEL_LABEL,
    cpu_quantity,
    duration_text,
    is_node_list,
    memory_quantity,
    priority_class,
    raise_empty,
    read_nodes,
    rfc3339,
)
from volcanolib.replay.traces._table import Row, Table

__all__ = [
    "FAILED_EXIT_CODE",
    "GPU_COUNT_ANNOTATION",
    "GPU_MILLI_ANNOTATION",
    "NAMESPACE",
    "POD_COLUMNS",
    "QOS_CLASSES",
    "QOS_LABEL",
    "read_openb",
]

log = logging.getLogger("volcanolib.replay")

#: The columns of the openb pod list.
POD_COLUMNS: Final = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
#: ``qos`` -> (PriorityClass name, value). Alibaba's latency-sensitive (LS) services first,
#: then Kubernetes' QoS order (Guaranteed, Burstable), best effort (BE) last.
QOS_CLASSES: Final[Mapping[str, tuple[str, int]]] = {
    "LS": ("openb-ls", 4000),
    "Guaranteed": ("openb-guaranteed", 3000),
    "Burstable": ("openb-burstable", 2000),
    "BE": ("openb-be", 1000),
}
_QOS_DESCRIPTIONS: Final = {
    "LS": "openb qos LS: latency-sensitive services",
    "Guaranteed": "openb qos Guaranteed",
    "Burstable": "openb qos Burstable",
    "BE": "openb qos BE: best effort",
}
#: Spellings of ``qos`` read as one of :data:`QOS_CLASSES` (lower case -> key).
_QOS_NAMES: Final = {**{q.lower(): q for q in QOS_CLASSES}, "besteffort": "BE"}
_PHASES: Final = {p.lower(): p for p in ("Succeeded", "Running", "Pending", "Failed")}
#: The namespace of the pods.
NAMESPACE: Final = "default"
#: The pod label holding the trace's ``qos``.
QOS_LABEL: Final = "volcanolib.io/qos"
#: The exit code of a pod whose ``pod_phase`` is Failed.
FAILED_EXIT_CODE: Final = 1
#: A shared GPU pod's fraction of one GPU, in thousandths (kept for a GPU-sharing plugin; the trace authors' key).
GPU_MILLI_ANNOTATION: Final = "alibabacloud.com/gpu-milli"
#: The GPUs a pod asked for in the trace (the trace authors' key).
GPU_COUNT_ANNOTATION: Final = "alibabacloud.com/gpu-count"


def read_openb(paths: Sequence[Path], nodes: Path | None) -> list[dict[str, Any]]:
    """Read openb pod lists and their node list into Kubernetes objects.

    :param paths: one or more pod lists (their pods are merged; names must differ).
    :param nodes: the node list (``.csv`` in the openb schema, or YAML/JSON Node manifests).
    :returns: the PriorityClasses of the QoS classes used, the Nodes, then one
        Pod per row in file order.
    :raises TraceError: naming the file, row and column of the first bad row.
    :raises ManifestError: when no node list or no pod list is given.
    """
    if nodes is None:
        raise ManifestError("the openb format needs the node list: --nodes NODES.csv")
    if not paths:
        raise ManifestError("no openb pod list given")
    node_objects = read_nodes(nodes)
    pods: list[dict[str, Any]] = []
    seen: dict[str, tuple[str, int]] = {}
    used: set[str] = set()
    for path in paths:
        table = Table.read(path)
        if is_node_list(table):
            raise TraceError("this is a node list, not a pod list: give it with --nodes", source=table.source, row=1)
        before = len(pods)
        for row in table.rows(POD_COLUMNS, kind="an openb pod list"):
            pod, qos = _pod(row)
            name = pod["metadata"]["name"]
            first = seen.setdefault(name, (row.source, row.line))
            if first != (row.source, row.line):
                where = f"row {first[1]}" if first[0] == row.source else f"{first[0]} row {first[1]}"
                row.fail(f"pod {name!r} is already listed at {where}", "name")
            used.add(qos)
            pods.append(pod)
        if len(pods) == before:
            raise_empty(table.source, "openb pod list")
    _warn_unknown_models(pods, node_objects)
    classes = [
        priority_class(name, value, _QOS_DESCRIPTIONS[q]) for q, (name, value) in QOS_CLASSES.items() if q in used
    ]
    return [*classes, *node_objects, *pods]


def _pod(row: Row) -> tuple[dict[str, Any], str]:
    name = row.required_text("name")
    cpu_milli = row.count("cpu_milli")
    memory_mib = row.count("memory_mib")
    num_gpu = row.count("num_gpu")
    gpu_milli = row.count("gpu_milli", maximum=1000)
    if num_gpu == 0 and gpu_milli > 0:
        row.fail(f"{gpu_milli} thousandths of a GPU but num_gpu is 0", "gpu_milli")
    models = [m.strip() for m in row.text("gpu_spec").split("|") if m.strip()]
    qos_text = row.required_text("qos")
    qos = _QOS_NAMES.get(qos_text.lower())
    if qos is None:
        row.fail(f"unknown qos {qos_text!r} (expected {', '.join(QOS_CLASSES)})", "qos")
    phase_text = row.required_text("pod_phase")
    phase = _PHASES.get(phase_text.lower())
    if phase is None:
        row.fail(f"unknown pod_phase {phase_text!r} (expected {', '.join(_PHASES.values())})", "pod_phase")
    creation = row.seconds("creation_time")
    deletion = row.seconds("deletion_time")
    scheduled = row.seconds("scheduled_time", required=False)
    assert creation is not None and deletion is not None
    if deletion < creation:
        row.fail(
            f"deletion_time {row.text('deletion_time')} is before creation_time {row.text('creation_time')}",
            "deletion_time",
        )
    annotations: dict[str, str] = {}
    if scheduled is not None:
        if scheduled < creation:
            row.fail(
                f"scheduled_time {row.text('scheduled_time')} is before creation_time {row.text('creation_time')}",
                "scheduled_time",
            )
        if scheduled > deletion:
            row.fail(
                f"scheduled_time {row.text('scheduled_time')} is after deletion_time {row.text('deletion_time')}",
                "scheduled_time",
            )
        annotations[DURATION] = duration_text(deletion - scheduled)
        if phase == "Failed":
            annotations[EXIT_CODE] = str(FAILED_EXIT_CODE)
    else:
        annotations[DURATION] = annotations[CANCEL_AFTER] = duration_text(deletion - creation)
    requests: dict[str, str] = {"cpu": cpu_quantity(cpu_milli), "memory": memory_quantity(memory_mib)}
    if num_gpu > 0:
        requests[GPU] = str(num_gpu)  # a fraction of one GPU (num_gpu 1, gpu_milli < 1000) asks for a whole one
        annotations[GPU_COUNT_ANNOTATION] = str(num_gpu)
        if num_gpu == 1:
            annotations[GPU_MILLI_ANNOTATION] = str(gpu_milli)
    spec: dict[str, Any] = {
        "schedulerName": "volcano",
        "priorityClassName": QOS_CLASSES[qos][0],
        "restartPolicy": "Never",
        "containers": [{"name": "main", "resources": {"requests": requests}}],
    }
    if models:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "In", "values": models}]}
                    ]
                }
            }
        }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "creationTimestamp": rfc3339(creation),
            "labels": {QOS_LABEL: qos},
            "annotations": annotations,
        },
        "spec": spec,
    }
    return pod, qos


def _warn_unknown_models(pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> None:
    """Warn about GPU models that pods require and no node has (those pods can never be placed)."""
    offered: set[str] = set()
    for obj in nodes:
        labels = obj.get("metadata", {}).get("labels") if isinstance(obj, dict) else None
        if isinstance(labels, dict) and isinstance(labels.get(GPU_MODEL_LABEL), str):
            offered.add(labels[GPU_MODEL_LABEL])
    missing: dict[str, int] = {}
    for pod in pods:
        affinity = pod["spec"].get("affinity")
        if affinity is None:
            continue
        terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        models = terms[0]["matchExpressions"][0]["values"]
        if not any(m in offered for m in models):
            key = "|".join(models)
            missing[key] = missing.get(key, 0) + 1
    for key, count in sorted(missing.items()):
        log.warning("%d pod(s) require GPU model %s, which no node has: they will never be placed", count, key)
