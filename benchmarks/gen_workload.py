#!/usr/bin/env python3
"""Generate performance-workload scenario files (docs/scenario-format.md): test clusters of 100 to 5,000 nodes.

Deterministic for a given (workload, size, seed). Needs only volcanolib
(for its default tiers); the YAML is written directly, in flow style, so
that 50,000-pod files stay small and fast to write. A file named *.json (or
--format json) gets the same scenario as JSON, which volcanolib reads
faster than YAML (benchmarks/README.md, "Loading manifests").

Workloads (benchmarks/README.md says what each measures and Volcano's times):
  W1  gang-homogeneous   nodes 32 cpu / 128Gi / 110 pods; jobs of T=100
                         pods (1 cpu, 2Gi), minMember = T, queue default,
                         all Pending; default conf + binpack.
                         S: 100 nodes / 1,000 pods; M: 1,000 / 10,000;
                         L: 5,000 / 50,000.
  W2  mixed-overloaded   3 node shapes (16/64Gi, 32/128Gi, 64/256Gi+8 gpu),
                         queues q1..q4 (weights 1..4), jobs of 1-64 tasks with
                         random requests (cpu 0.5-8, memory 1-32Gi, 20% of
                         jobs 1-8 nvidia.com/gpu), minMember in [1, size],
                         3 PriorityClasses, pods ~ 10 x nodes (demand > capacity
                         on every resource; the achieved ratios are written in
                         the file's `name`). Sizes S/M/L by node count.
  W3  preempt            every node full of low-priority Running pods (jobs of
                         10, minMember 1, queue default) + Inqueue
                         high-priority gang jobs (20 pods, minMember 20) asking
                         ~20% of the cluster; actions enqueue, allocate, preempt.
                         Sizes S, M.
  W4  reclaim            queues qa, qb (weight 1 each); qa's Running pods fill
                         the cluster (jobs of 10, minMember 1), qb has Inqueue
                         gang jobs (10 pods, minMember 10) asking 50% of the
                         cluster; actions enqueue, allocate, reclaim. Sizes S, M.

Usage:
  gen_workload.py W1 S [--seed 1] [-o FILE]          (FILE.json: JSON; default W1-S.yaml)
  gen_workload.py W1 L -o w1l.json                   (the 5,000-node, 50,000-pod cluster, as JSON)
  gen_workload.py --all [--seed 1] [--format json] --outdir DIR   (every workload/size)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import textwrap
from collections.abc import Callable
from typing import Any

from volcanolib.framework.config import DEFAULT_CONFIG_TEXT

SIZES = {"S": 100, "M": 1000, "L": 5000}
#: What ``write`` can write: the flow-style YAML, or the same scenario as JSON.
FORMATS = ("yaml", "json")
WORKLOAD_SIZES = {"W1": "SML", "W2": "SML", "W3": "SM", "W4": "SM"}

#: The tiers of the library's default configuration, indented under the scenario's ``scheduler:`` key.
DEFAULT_TIERS = textwrap.indent(DEFAULT_CONFIG_TEXT[DEFAULT_CONFIG_TEXT.index("tiers:") :], "  ")


def conf(actions: str) -> str:
    """The scenario's ``scheduler`` block: the given actions and the default tiers."""
    return f'scheduler:\n  actions: "{actions}"\n{DEFAULT_TIERS}'


def fmt_cpu(milli: int) -> str:
    """A cpu quantity: whole cores as ``"4"``, otherwise millicores as ``"500m"``."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def res_map(cpu_m: int, mem_gi: int, gpu: int = 0) -> str:
    """A flow-style resource list."""
    s = f'{{cpu: "{fmt_cpu(cpu_m)}", memory: {mem_gi}Gi'
    if gpu:
        s += f', nvidia.com/gpu: "{gpu}"'
    return s + "}"


class Out:
    """The object lines of a scenario, one flow-style mapping per line."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, s: str) -> None:
        """Append one line."""
        self.lines.append(s)

    def node(
        self, name: str, cpu: int, mem_gi: int, pods: int = 110, gpu: int = 0, labels: dict[str, str] | None = None
    ) -> None:
        """A Ready Node whose allocatable equals its capacity."""
        lab = ", labels: {{{}}}".format(", ".join(f"{k}: {v}" for k, v in labels.items())) if labels else ""
        res = self._nres(cpu, mem_gi, pods, gpu)
        self.add(
            f"- {{apiVersion: v1, kind: Node, metadata: {{name: {name}{lab}}}, spec: {{unschedulable: false}}, "
            f'status: {{allocatable: {res}, capacity: {res}, conditions: [{{type: Ready, status: "True"}}]}}}}'
        )

    @staticmethod
    def _nres(cpu: int, mem_gi: int, pods: int, gpu: int) -> str:
        s = f'{{cpu: "{cpu}", memory: {mem_gi}Gi, pods: "{pods}"'
        if gpu:
            s += f', nvidia.com/gpu: "{gpu}"'
        return s + "}"

    def queue(self, name: str, weight: int) -> None:
        """An Open, reclaimable Queue."""
        self.add(
            f"- {{apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {{name: {name}}}, "
            f"spec: {{weight: {weight}, reclaimable: true}}, status: {{state: Open}}}}"
        )

    def pclass(self, name: str, value: int) -> None:
        """A PriorityClass."""
        self.add(
            f"- {{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {{name: {name}}}, value: {value}}}"
        )

    def podgroup(
        self, ns: str, name: str, min_member: int, queue: str, phase: str, min_res: str, pc: str | None = None
    ) -> None:
        """A PodGroup in the given phase."""
        pcs = f", priorityClassName: {pc}" if pc else ""
        self.add(
            "- {apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup, "
            f"metadata: {{name: {name}, namespace: {ns}}}, "
            f"spec: {{minMember: {min_member}, queue: {queue}{pcs}, minResources: {min_res}}}, "
            f"status: {{phase: {phase}}}}}"
        )

    def pod(
        self, ns: str, name: str, group: str, req: str, node: str = "", phase: str = "Pending", pc: str | None = None
    ) -> None:
        """A pod of one container, in a PodGroup, placed on ``node`` when given."""
        pcs = f", priorityClassName: {pc}" if pc else ""
        nn = f", nodeName: {node}" if node else ""
        self.add(
            f"- {{apiVersion: v1, kind: Pod, metadata: {{name: {name}, namespace: {ns}, "
            f"annotations: {{scheduling.k8s.io/group-name: {group}}}}}, spec: {{schedulerName: volcano{pcs}{nn}, "
            f"containers: [{{name: c, resources: {{requests: {req}}}}}]}}, status: {{phase: {phase}}}}}"
        )


def header(name: str, actions: str, sessions: int = 1) -> str:
    """The scenario's top-level keys up to ``objects:``."""
    return f"name: {name}\nschedulerName: volcano\nsessions: {sessions}\n{conf(actions)}objects:\n"


def gen_w1(size: str, rng: random.Random) -> tuple[str, Out]:
    """W1 gang-homogeneous."""
    n = SIZES[size]
    jobs, t = n // 10, 100
    o = Out()
    for i in range(n):
        o.node(f"n{i:05d}", 32, 128)
    for j in range(jobs):
        g = f"job{j:04d}"
        o.podgroup("w1", g, t, "default", "Pending", res_map(1000 * t, 2 * t))
        for k in range(t):
            o.pod("w1", f"{g}-{k}", g, res_map(1000, 2))
    return header(f"W1-{size} gang-homogeneous {n} nodes {jobs * t} pods", "enqueue, allocate, backfill"), o


def gen_w2(size: str, rng: random.Random) -> tuple[str, Out]:
    """W2 mixed-overloaded."""
    n = SIZES[size]
    o = Out()
    cap = {"cpu": 0, "mem": 0, "gpu": 0}
    for i in range(n):
        shape = i % 3
        if shape == 0:
            o.node(f"n{i:05d}", 16, 64, labels={"shape": "small"})
            cap["cpu"] += 16
            cap["mem"] += 64
        elif shape == 1:
            o.node(f"n{i:05d}", 32, 128, labels={"shape": "medium"})
            cap["cpu"] += 32
            cap["mem"] += 128
        else:
            o.node(f"n{i:05d}", 64, 256, gpu=8, labels={"shape": "gpu"})
            cap["cpu"] += 64
            cap["mem"] += 256
            cap["gpu"] += 8
    for qi in range(4):
        o.queue(f"q{qi + 1}", qi + 1)
    classes = [("low", 100), ("mid", 1000), ("high", 10000)]
    for name, v in classes:
        o.pclass(name, v)
    target_pods = 10 * n
    dem = {"cpu": 0.0, "mem": 0.0, "gpu": 0.0}
    pods = 0
    j = 0
    cpu_choices = [500, 1000, 2000, 4000, 8000]
    cpu_weights = [1, 1, 1, 2, 5]
    while pods < target_pods:
        size_j = min(rng.randint(1, 64), target_pods - pods)
        cpu = rng.choices(cpu_choices, cpu_weights)[0]
        mem = max(1, min(32, round(cpu / 1000.0 * rng.choice([2, 4, 8]))))
        gpu = rng.randint(1, 8) if rng.random() < 0.2 else 0
        min_member = rng.randint(1, size_j)
        q = f"q{rng.randint(1, 4)}"
        pc = rng.choice(classes)[0]
        ns = f"ns{rng.randint(1, 4)}"
        g = f"job{j:05d}"
        o.podgroup(ns, g, min_member, q, "Pending", res_map(cpu * min_member, mem * min_member, gpu * min_member), pc)
        for k in range(size_j):
            o.pod(ns, f"{g}-{k}", g, res_map(cpu, mem, gpu), pc=pc)
        pods += size_j
        dem["cpu"] += cpu / 1000.0 * size_j
        dem["mem"] += mem * size_j
        dem["gpu"] += gpu * size_j
        j += 1
    ratio = "demand/capacity cpu {:.2f} mem {:.2f} gpu {:.2f}".format(
        dem["cpu"] / cap["cpu"], dem["mem"] / cap["mem"], dem["gpu"] / max(1, cap["gpu"])
    )
    return header(
        f"W2-{size} mixed-overloaded {n} nodes {pods} pods {j} jobs, {ratio}", "enqueue, allocate, backfill"
    ), o


def gen_w3(size: str, rng: random.Random) -> tuple[str, Out]:
    """W3 preempt."""
    n = SIZES[size]
    o = Out()
    o.pclass("low", 10)
    o.pclass("high", 1000)
    for i in range(n):
        o.node(f"n{i:05d}", 32, 128)
    # 8 low-priority Running pods of 4 cpu / 16Gi per node: every node full
    per_node = 8
    running = [(i, k) for i in range(n) for k in range(per_node)]
    rng.shuffle(running)
    for j in range(len(running) // 10):
        g = f"low{j:05d}"
        o.podgroup("w3", g, 1, "default", "Running", res_map(4000, 16), "low")
        for k, (ni, _) in enumerate(running[j * 10 : (j + 1) * 10]):
            o.pod("w3", f"{g}-{k}", g, res_map(4000, 16), node=f"n{ni:05d}", phase="Running", pc="low")
    # high-priority gang jobs asking ~20% of the cluster's cpu
    hjobs = max(1, round(n * 32 * 0.2 / (20 * 4)))
    for j in range(hjobs):
        g = f"high{j:04d}"
        o.podgroup("w3", g, 20, "default", "Inqueue", res_map(4000 * 20, 16 * 20), "high")
        for k in range(20):
            o.pod("w3", f"{g}-{k}", g, res_map(4000, 16), pc="high")
    return header(
        f"W3-{size} preempt {n} nodes {len(running)} running low + {hjobs * 20} pending high pods",
        "enqueue, allocate, preempt",
    ), o


def gen_w4(size: str, rng: random.Random) -> tuple[str, Out]:
    """W4 reclaim."""
    n = SIZES[size]
    o = Out()
    o.queue("qa", 1)
    o.queue("qb", 1)
    for i in range(n):
        o.node(f"n{i:05d}", 32, 128)
    per_node = 8
    running = [(i, k) for i in range(n) for k in range(per_node)]
    rng.shuffle(running)
    for j in range(len(running) // 10):
        g = f"a{j:05d}"
        o.podgroup("w4a", g, 1, "qa", "Running", res_map(4000, 16))
        for k, (ni, _) in enumerate(running[j * 10 : (j + 1) * 10]):
            o.pod("w4a", f"{g}-{k}", g, res_map(4000, 16), node=f"n{ni:05d}", phase="Running")
    bjobs = max(1, round(n * 32 * 0.5 / (10 * 4)))
    for j in range(bjobs):
        g = f"b{j:05d}"
        o.podgroup("w4b", g, 10, "qb", "Inqueue", res_map(4000 * 10, 16 * 10))
        for k in range(10):
            o.pod("w4b", f"{g}-{k}", g, res_map(4000, 16))
    return header(
        f"W4-{size} reclaim {n} nodes {len(running)} running (qa) + {bjobs * 10} pending (qb) pods",
        "enqueue, allocate, reclaim",
    ), o


GEN: dict[str, Callable[[str, random.Random], tuple[str, Out]]] = {
    "W1": gen_w1,
    "W2": gen_w2,
    "W3": gen_w3,
    "W4": gen_w4,
}


def format_of(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format a file is written in: ``fmt`` when given, else JSON for a name ending in ``.json``, else YAML."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise SystemExit(f"unknown format {fmt!r} (expected {' or '.join(FORMATS)})")
        return fmt
    return "json" if os.fspath(path).lower().endswith(".json") else "yaml"


def write_json(scenario: Any, path: str | os.PathLike[str]) -> None:
    """Write a scenario (as read from its YAML) as JSON, on one line."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(scenario, f)
        f.write("\n")


def write(workload: str, size: str, seed: int, path: str | os.PathLike[str], fmt: str | None = None) -> None:
    """Write one workload at one size to ``path``: flow-style YAML, or JSON (:func:`format_of`)."""
    if size not in WORKLOAD_SIZES[workload]:
        raise SystemExit(f"{workload} has no size {size} (sizes: {WORKLOAD_SIZES[workload]})")
    rng = random.Random(f"{workload}-{size}-{seed}")
    head, o = GEN[workload](size, rng)
    text = head + "\n".join(o.lines) + "\n"
    if format_of(path, fmt) == "json":
        from volcanolib.kube import parse_documents

        (scenario,) = parse_documents(text, source=f"{workload}-{size}")
        write_json(scenario, path)
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv: list[str] | None = None) -> None:
    """The command line (see the usage above)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", nargs="?", choices=sorted(GEN))
    ap.add_argument("size", nargs="?", choices=sorted(SIZES))
    ap.add_argument("--seed", type=int, default=1, help="the generator's seed (default 1)")
    ap.add_argument("-o", "--out", help="the file to write (default WORKLOAD-SIZE.yaml; a .json name writes JSON)")
    ap.add_argument("--format", choices=FORMATS, help="yaml or json (default: by the file name's suffix)")
    ap.add_argument("--all", action="store_true", help="every workload at every size, into --outdir")
    ap.add_argument("--outdir", default=".", help="where --all writes (default .)")
    a = ap.parse_args(argv)
    if a.all:
        os.makedirs(a.outdir, exist_ok=True)
        suffix = "json" if a.format == "json" else "yaml"
        for w, sizes in sorted(WORKLOAD_SIZES.items()):
            for s in sizes:
                p = os.path.join(a.outdir, f"{w}-{s}.{suffix}")
                write(w, s, a.seed, p, a.format)
                print(p)
        return
    if not a.workload or not a.size:
        ap.error("give WORKLOAD SIZE or --all")
    suffix = "json" if a.format == "json" else "yaml"
    write(a.workload, a.size, a.seed, a.out or f"{a.workload}-{a.size}.{suffix}", a.format)


if __name__ == "__main__":
    main()
