"""Kubernetes objects in API form, as trace readers build them, and the values they hold.

Every trace format turns its rows into the same objects (Nodes,
PriorityClasses, Queues, bare Pods, Volcano Jobs) carrying the replay
annotations of spec/replay.md, so that a converted trace is an ordinary
replay file.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, NoReturn

from volcanolib.api.outcomes import DURATION_ANNOTATION, EXIT_CODE_ANNOTATION
from volcanolib.errors import TraceError
from volcanolib.kube import parse_documents, source_name
from volcanolib.manifests.documents import read_text
from volcanolib.replay.traces._table import Table

__all__ = [
    "CANCEL_AFTER",
    "DURATION",
    "EXIT_CODE",
    "GPU",
    "GPU_MODEL_LABEL",
    "NODE_COLUMNS",
    "cpu_quantity",
    "duration_text",
    "memory_quantity",
    "node",
    "priority_class",
    "queue",
    "is_node_list",
    "raise_empty",
    "read_nodes",
    "rfc3339",
]

#: How long a pod runs once started, and the exit code it then ends with (non-zero: Failed).
DURATION: Final = DURATION_ANNOTATION
EXIT_CODE: Final = EXIT_CODE_ANNOTATION
#: How long the user waits for the job to start before deleting it.
CANCEL_AFTER: Final = "volcanolib.io/cancel-after"
#: The extended resource GPUs are requested and offered as.
GPU: Final = "nvidia.com/gpu"
#: The node label holding the GPU model, the key the trace authors' own simulator uses.
GPU_MODEL_LABEL: Final = "alibabacloud.com/gpu-card-model"
#: Pods a node may hold (the kubelet default), written out so that the loader does not warn.
NODE_PODS: Final = "110"
#: The columns of a node list (the openb node schema, shared by formats whose trace has no node list).
NODE_COLUMNS: Final = ("sn", "cpu_milli", "memory_mib", "gpu", "model")

_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def rfc3339(seconds: float) -> str:
    """Seconds since 1970-01-01T00:00:00Z as an RFC 3339 time (``1970-01-02T03:04:05Z``); fractions kept."""
    whole = int(seconds // 1)
    text = (_EPOCH + _dt.timedelta(seconds=whole)).strftime("%Y-%m-%dT%H:%M:%S")
    fraction = seconds - whole
    if fraction:
        text += f"{fraction:.6f}".lstrip("0").rstrip("0")
    return text + "Z"


def duration_text(seconds: float) -> str:
    """A duration the replay annotations accept: whole seconds as ``90s``, fractions as ``1.5s``."""
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:.6f}".rstrip("0").rstrip(".") + "s"


def cpu_quantity(milli: int) -> str:
    """A CPU quantity: whole cores as ``12``, others in millicores (``3152m``)."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def memory_quantity(mib: int) -> str:
    """A memory quantity in MiB (``16384Mi``), as the traces give it."""
    return f"{mib}Mi"


def node(name: str, *, cpu_milli: int, memory_mib: int, gpus: int, model: str) -> dict[str, Any]:
    """A Ready Node with that allocatable, ``nvidia.com/gpu`` when ``gpus`` > 0, and the GPU model label."""
    allocatable: dict[str, str] = {"cpu": cpu_quantity(cpu_milli), "memory": memory_quantity(memory_mib)}
    if gpus > 0:
        allocatable[GPU] = str(gpus)
    allocatable["pods"] = NODE_PODS
    labels = {"kubernetes.io/hostname": name}
    if model:
        labels[GPU_MODEL_LABEL] = model
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def priority_class(name: str, value: int, description: str) -> dict[str, Any]:
    """A PriorityClass."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": description,
    }


def queue(name: str, weight: int) -> dict[str, Any]:
    """An Open, reclaimable Volcano Queue."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight, "reclaimable": True},
        "status": {"state": "Open"},
    }


def read_nodes(path: str | Path) -> list[dict[str, Any]]:
    """The objects of a ``--nodes`` file.

    A node list in the openb schema (``sn,cpu_milli,memory_mib,gpu,model``:
    a ``.csv`` file, or any file whose first line is that header, such as a
    pipe) gives one Node per row; any other file is read as Kubernetes
    manifests (YAML or JSON: Nodes, and Queues or PriorityClasses if
    wanted), returned as they are. The file is read once.

    :raises TraceError: naming the file, row and column of a bad row.
    :raises ManifestError: when a manifest file cannot be read or parsed.
    """
    if str(path).lower().endswith(".csv"):
        return _node_list(Table.read(path))
    source = source_name(path)
    text = read_text(path)
    table = Table(source, text.removeprefix("\ufeff"))
    if is_node_list(table):
        return _node_list(table)
    objects: list[dict[str, Any]] = []
    for doc in parse_documents(text, source=source):
        if isinstance(doc, Mapping) and "kind" not in doc and isinstance(doc.get("objects"), list):
            objects.extend(doc["objects"])  # a scenario or replay file
        else:
            objects.append(doc)
    return objects


def _node_list(table: Table) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for row in table.rows(NODE_COLUMNS, kind="a node list"):
        name = row.required_text("sn")
        first = seen.setdefault(name, row.line)
        if first != row.line:
            row.fail(f"node {name!r} is already listed at row {first}", "sn")
        nodes.append(
            node(
                name,
                cpu_milli=row.count("cpu_milli"),
                memory_mib=row.count("memory_mib"),
                gpus=row.count("gpu"),
                model=row.text("model"),
            )
        )
    if not nodes:
        raise_empty(table.source, "node list")
    return nodes


def raise_empty(source: str, kind: str) -> NoReturn:
    """Refuse a table with a header and no row."""
    raise TraceError(f"the {kind} has no rows", source=source)


def is_node_list(table: Table) -> bool:
    """Whether a table's header is the node list's (so that it was given in the place of a trace)."""
    return set(NODE_COLUMNS) <= set(table.header)
