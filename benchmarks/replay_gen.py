"""Generators for the replay benchmarks: a synthetic day of Volcano Jobs, and a synthetic trace in the openb schema.

Both are seeded and deterministic: the same arguments give the same objects
(and the same bytes once written).

``day_objects`` (``replay-day``): 1,000 nodes (800 CPU nodes of 32 cores and
128 GiB, 200 GPU nodes of 64 cores, 512 GiB and 8 GPUs), three queues
(weights 3, 2, 1), and N Volcano Jobs of 1 to 64 pods (about 5 on average; each
job a gang) arriving uniformly at random over 24 hours, one job in five on
GPUs, runtimes log-normal (median one hour).

``openb_tables`` (``replay-openb``): the real trace's size (1,523 nodes, 8,152
pods over about 150 days) in its schema, since the trace itself is not
redistributed here. Nodes follow the approximate shares of the public node
list's shapes (about a fifth CPU-only, most GPU nodes 8-GPU G2 or 2-GPU T4
machines); most pods ask for one GPU, nearly half of those a fraction of it;
a few long-running services are created over the first 115 days, the rest
arrive over the last 35, as in the trace; pod phases, scheduling delays and
lifetimes are drawn so that every time rule of the openb reader is exercised.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from volcanolib.replay.traces import export_objects
from volcanolib.replay.traces._objects import duration_text, node, queue, rfc3339
from volcanolib.replay.traces.openb import POD_COLUMNS

__all__ = [
    "DAY",
    "DAY_NODES",
    "OPENB_DAYS",
    "OPENB_NODES",
    "OPENB_PODS",
    "day_objects",
    "openb_tables",
    "write_day",
    "write_openb",
]

DAY: Final = 86_400
DAY_NODES: Final = 1_000
#: Job sizes (pods) and their weights: mean about 5, at most 64.
JOB_SIZES: Final = ((1, 50), (2, 15), (4, 12), (8, 12), (16, 7), (32, 3), (64, 1))
#: Queues and weights, and the share of jobs each receives.
DAY_QUEUES: Final = (("production", 3, 0.3), ("research", 2, 0.4), ("batch", 1, 0.3))
GPU_JOB_SHARE: Final = 0.2
#: Log-normal runtime: median one hour.
RUNTIME_MU: Final = math.log(3_600)
RUNTIME_SIGMA: Final = 1.0
RUNTIME_MAX: Final = 2 * DAY

OPENB_NODES: Final = 1_523
OPENB_PODS: Final = 8_152
OPENB_DAYS: Final = 150
#: Node shapes (cpu_milli, memory_mib, gpus, model) and their approximate share of the openb node list.
OPENB_SHAPES: Final = (
    ((32_000, 262_144, 0, ""), 0.14),
    ((96_000, 524_288, 0, ""), 0.08),
    ((96_000, 393_216, 8, "G2"), 0.37),
    ((104_000, 524_288, 2, "T4"), 0.22),
    ((96_000, 393_216, 4, "T4"), 0.02),
    ((64_000, 262_144, 2, "P100"), 0.04),
    ((16_000, 122_880, 2, "P100"), 0.03),
    ((32_000, 131_072, 4, "V100M16"), 0.04),
    ((64_000, 262_144, 8, "V100M16"), 0.01),
    ((96_000, 786_432, 8, "V100M32"), 0.02),
    ((128_000, 786_432, 8, "G3"), 0.03),
)
#: GPUs per pod and their shares (0: CPU-only).
OPENB_GPUS: Final = ((0, 0.12), (1, 0.80), (2, 0.03), (4, 0.02), (8, 0.03))
#: The share of one-GPU pods that ask for a fraction of it.
OPENB_FRACTIONAL: Final = 0.45
OPENB_QOS: Final = (("LS", 0.45), ("BE", 0.45), ("Burstable", 0.08), ("Guaranteed", 0.02))
OPENB_PHASES: Final = (("Running", 0.60), ("Failed", 0.20), ("Succeeded", 0.10), ("Pending", 0.10))
OPENB_SPECS: Final = ("G2", "T4", "V100M16|V100M32", "P100", "G3")
#: The share of pods that are long-running services created over the first part of the trace.
OPENB_LONG_RUNNING: Final = 0.02


def _pick(rng: random.Random, table: Sequence[tuple[Any, float]]) -> Any:
    return rng.choices([v for v, _ in table], weights=[w for _, w in table])[0]


def day_objects(jobs: int, *, seed: int = 1, nodes: int = DAY_NODES) -> list[dict[str, Any]]:
    """The ``replay-day`` workload: nodes, three queues and ``jobs`` Volcano Jobs over 24 hours."""
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [queue(name, weight) for name, weight, _ in DAY_QUEUES]
    gpu_nodes = nodes // 5
    for i in range(nodes - gpu_nodes):
        objects.append(node(f"cpu-{i:04d}", cpu_milli=32_000, memory_mib=131_072, gpus=0, model=""))
    for i in range(gpu_nodes):
        objects.append(node(f"gpu-{i:04d}", cpu_milli=64_000, memory_mib=524_288, gpus=8, model="G2"))
    arrivals = sorted(rng.uniform(0, DAY) for _ in range(jobs))
    queues = [(name, share) for name, _, share in DAY_QUEUES]
    for i, arrival in enumerate(arrivals):
        size = _pick(rng, JOB_SIZES)
        if rng.random() < GPU_JOB_SHARE:
            requests = {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}
        else:
            cpu = rng.choice((1, 2, 4, 8))
            requests = {"cpu": str(cpu), "memory": f"{4 * cpu}Gi"}
        runtime = min(RUNTIME_MAX, round(rng.lognormvariate(RUNTIME_MU, RUNTIME_SIGMA)))
        objects.append(
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": {
                    "name": f"job-{i:05d}",
                    "namespace": "default",
                    "creationTimestamp": rfc3339(round(arrival, 3)),
                    "annotations": {"volcanolib.io/duration": duration_text(runtime)},
                },
                "spec": {
                    "schedulerName": "volcano",
                    "queue": _pick(rng, queues),
                    "minAvailable": size,
                    "tasks": [
                        {
                            "name": "worker",
                            "replicas": size,
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [{"name": "main", "resources": {"requests": requests}}],
                                }
                            },
                        }
                    ],
                },
            }
        )
    return objects


def write_day(path: Path, jobs: int, *, seed: int = 1) -> None:
    """Write the ``replay-day`` workload as a replay file (JSON for a ``.json`` path)."""
    export_objects(day_objects(jobs, seed=seed), path, source=f"benchmarks replay-day: {jobs} jobs, seed {seed}")


def openb_tables(
    *, nodes: int = OPENB_NODES, pods: int = OPENB_PODS, seed: int = 1, gpu_spec: float = 0.1
) -> tuple[list[list[str]], list[list[str]]]:
    """The rows (header first) of a synthetic openb node list and pod list.

    :param gpu_spec: the share of GPU pods that require GPU models (``gpu_spec``).
    """
    rng = random.Random(seed)
    node_rows = [["sn", "cpu_milli", "memory_mib", "gpu", "model"]]
    for i in range(nodes):
        cpu, memory, gpus, model = _pick(rng, OPENB_SHAPES)
        node_rows.append([f"synth-node-{i:04d}", str(cpu), str(memory), str(gpus), model])
    end = OPENB_DAYS * DAY
    busy_from = end - 35 * DAY
    pod_rows = [list(POD_COLUMNS)]
    times: list[tuple[float, list[str]]] = []
    for _ in range(pods):
        gpus = _pick(rng, OPENB_GPUS)
        milli = 1000 if gpus else 0
        if gpus == 1 and rng.random() < OPENB_FRACTIONAL:
            milli = rng.randrange(50, 1000, 10)
        per = max(1, gpus)
        cpu = min(88_000, rng.choice((2_000, 4_000, 6_000, 8_000, 12_000, 16_000)) * per)
        memory = min(327_680, rng.choice((8_192, 15_258, 16_384, 30_517, 32_768, 49_152)) * per)
        spec = rng.choice(OPENB_SPECS) if gpus and rng.random() < gpu_spec else ""
        qos = _pick(rng, OPENB_QOS)
        if rng.random() < OPENB_LONG_RUNNING:
            creation = rng.uniform(0, busy_from)
            phase, scheduled, deletion = "Running", creation, float(end)
        else:
            creation = rng.uniform(busy_from, end)
            phase = _pick(rng, OPENB_PHASES)
            if phase == "Pending":
                scheduled = None
                deletion = creation + rng.lognormvariate(math.log(120), 1.0)
            else:
                scheduled = creation + (0.0 if rng.random() < 0.7 else rng.expovariate(1 / 30))
                median = 300 if phase == "Failed" else 1_800
                deletion = scheduled + rng.lognormvariate(math.log(median), 1.5)
            deletion = min(deletion, float(end))
            if scheduled is not None:
                scheduled = min(scheduled, deletion)
        row = [
            "",
            str(cpu),
            str(memory),
            str(gpus),
            str(milli),
            spec,
            qos,
            phase,
            str(int(creation)),
            str(int(deletion)),
            "" if scheduled is None else str(int(scheduled)),
        ]
        times.append((int(creation), row))
    times.sort(key=lambda item: item[0])
    for i, (_, row) in enumerate(times):
        row[0] = f"synth-pod-{i:04d}"
        pod_rows.append(row)
    return node_rows, pod_rows


def write_openb(
    directory: Path, *, nodes: int = OPENB_NODES, pods: int = OPENB_PODS, seed: int = 1
) -> tuple[Path, Path]:
    """Write ``nodes.csv`` and ``pods.csv`` of a synthetic openb trace into ``directory``; return their paths."""
    node_rows, pod_rows = openb_tables(nodes=nodes, pods=pods, seed=seed)
    directory.mkdir(parents=True, exist_ok=True)
    paths = (directory / "nodes.csv", directory / "pods.csv")
    for path, rows in zip(paths, (node_rows, pod_rows), strict=True):
        path.write_text("".join(",".join(row) + "\n" for row in rows), encoding="utf-8")
    return paths
