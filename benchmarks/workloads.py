"""The scheduling workloads W1..W5: generate them, run each in its own interpreter, tabulate against Volcano.

:func:`ensure_workload` writes a workload with :mod:`benchmarks.gen_workload`
into ``benchmarks/_generated/`` unless an up-to-date copy is there, and
converts it once to JSON, or to block-style YAML (the style of ``kubectl get -o
yaml``), when that format is asked for.
:func:`run_workload` starts ``python -m benchmarks.measure`` on it in a fresh
subprocess (so that peak memory figures do not mix) and returns its record
with the Volcano v1.7 anchor attached; :func:`table` prints records side by
side with the anchors. W5, the steady state, runs on the W1 cluster through
``python -m benchmarks.steady`` instead (:mod:`benchmarks.steady`): its
record is the median of many cycles, and it has no Volcano anchor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

from benchmarks import gen_workload

__all__ = [
    "ANCHORS",
    "GENERATED",
    "STEADY",
    "WORKLOAD_SIZES",
    "Anchor",
    "BenchmarkError",
    "ensure_workload",
    "run_workload",
    "selection",
    "session_table",
    "steady_line",
    "steady_table",
    "table",
]

HERE: Final = Path(__file__).resolve().parent
#: Where generated workload files go (ignored by git and ruff).
GENERATED: Final = HERE / "_generated"
#: Steady-state workloads -> the workload whose cluster they run on (:mod:`benchmarks.steady`).
STEADY: Final = {"W5": "W1"}
#: Workload -> the sizes it has.
WORKLOAD_SIZES: Final = {
    **gen_workload.WORKLOAD_SIZES,
    **{w: gen_workload.WORKLOAD_SIZES[b] for w, b in STEADY.items()},
}
#: ``yaml``: the generator's flow-style file; ``block``: the same scenario in block style; ``json``.
FORMATS: Final = ("yaml", "block", "json")


class BenchmarkError(Exception):
    """A benchmark could not be prepared or run (the message is one line)."""


class Anchor(NamedTuple):
    """What Volcano v1.7 measured on the same workload: one session, in seconds."""

    seconds: float
    #: Whether the figure is an estimate rather than a measurement.
    estimated: bool = False
    #: Volcano's bind count, where it was recorded.
    binds: int | None = None


#: (workload, size) -> Volcano v1.7's session time on it.
ANCHORS: Final[dict[tuple[str, str], Anchor]] = {
    ("W1", "S"): Anchor(0.82),
    ("W1", "M"): Anchor(69.0),
    ("W1", "L"): Anchor(1740.0, estimated=True),
    ("W2", "S"): Anchor(0.32),
    ("W2", "M"): Anchor(32.0, binds=7223),
    ("W3", "S"): Anchor(0.15),
    ("W3", "M"): Anchor(11.8),
    ("W4", "S"): Anchor(0.036),
    ("W4", "M"): Anchor(0.97),
}


def selection(workloads: Sequence[str], sizes: Sequence[str]) -> list[tuple[str, str]]:
    """The (workload, size) pairs to run: each workload at each of ``sizes`` it has, in order.

    ``all`` stands for every workload.

    :raises BenchmarkError: for an unknown workload or size, or when nothing is left.
    """
    names: list[str] = []
    for name in workloads:
        for item in sorted(WORKLOAD_SIZES) if name == "all" else [name.upper()]:
            if item not in WORKLOAD_SIZES:
                raise BenchmarkError(f"unknown workload {name!r} (expected one of {', '.join(sorted(WORKLOAD_SIZES))})")
            if item not in names:
                names.append(item)
    for size in sizes:
        if size not in gen_workload.SIZES:
            raise BenchmarkError(f"unknown size {size!r} (expected S, M or L)")
    pairs = [(w, s) for w in names for s in sizes if s in WORKLOAD_SIZES[w]]
    if not pairs:
        raise BenchmarkError(f"no workload among {', '.join(names)} has size {', '.join(sizes)}")
    return pairs


def _fresh(path: Path, *sources: Path) -> bool:
    """Whether ``path`` exists and is newer than every one of ``sources``."""
    if not path.exists():
        return False
    mtime = path.stat().st_mtime
    return all(mtime >= source.stat().st_mtime for source in sources)


def _atomic_write(path: Path, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` then move the file into place, so a half-written file is never left behind."""
    tmp = str(path.with_name(f".{path.name}.{os.getpid()}.tmp"))
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def ensure_workload(workload: str, size: str, *, seed: int = 1, fmt: str = "yaml", directory: Path = GENERATED) -> Path:
    """The workload's file in ``directory``, generated (or converted) first when missing or stale.

    A file is stale when the generator is newer than it; a converted copy is
    stale when its YAML is newer. The copies hold the scenario mapping, read
    with :func:`volcanolib.kube.read_documents`: ``json`` written with
    :mod:`json`, ``block`` with PyYAML's default block style (keys sorted, as
    ``kubectl get -o yaml`` writes them).
    """
    if fmt not in FORMATS:
        raise BenchmarkError(f"unknown format {fmt!r} (expected {', '.join(FORMATS)})")
    if size not in WORKLOAD_SIZES.get(workload, ""):
        raise BenchmarkError(f"{workload} has no size {size!r}")
    directory.mkdir(parents=True, exist_ok=True)
    yaml_path = directory / f"{workload}-{size}-seed{seed}.yaml"
    generator = Path(gen_workload.__file__)
    if not _fresh(yaml_path, generator):
        _atomic_write(yaml_path, lambda tmp: gen_workload.write(workload, size, seed, tmp))
    if fmt == "yaml":
        return yaml_path
    copy_path = yaml_path.with_suffix(".json" if fmt == "json" else ".block.yaml")
    if not _fresh(copy_path, yaml_path):
        from volcanolib.kube import read_documents

        (doc,) = read_documents(yaml_path)

        def dump(tmp: str) -> None:
            if fmt == "json":
                gen_workload.write_json(doc, tmp)
                return
            with open(tmp, "w", encoding="utf-8") as out:
                import yaml

                yaml.dump(doc, out, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))

        _atomic_write(copy_path, dump)
    return copy_path


def _measure_once(
    path: Path,
    workload: str,
    size: str,
    seed: int,
    fmt: str,
    profile: Path | None,
    steady: Sequence[str] = (),
) -> dict[str, Any]:
    """One ``python -m benchmarks.measure`` subprocess on ``path`` (``benchmarks.steady`` for W5); its record.

    :param steady: extra arguments for ``benchmarks.steady`` (``--cycles``, ...).
    """
    with tempfile.TemporaryDirectory(prefix="volcanolib-bench-") as tmp:
        result_path = Path(tmp) / "result.json"
        command = [
            sys.executable,
            "-m",
            "benchmarks.steady" if workload in STEADY else "benchmarks.measure",
            str(path),
            "--workload",
            workload,
            "--size",
            size,
            "--format",
            fmt,
            "--seed",
            str(seed),
            "--result",
            str(result_path),
            *(steady if workload in STEADY else ()),
        ]
        if profile is not None:
            command += ["--profile", str(profile)]
        env = dict(os.environ)
        root = str(HERE.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        proc = subprocess.run(command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0 or not result_path.exists():
            lines = [line for line in proc.stderr.splitlines() if line.strip()]
            last = lines[-1].strip() if lines else f"exit status {proc.returncode}"
            raise BenchmarkError(f"{workload}-{size} ({fmt}) failed: {last}")
        record: dict[str, Any] = json.loads(result_path.read_text())
    return record


def run_workload(
    workload: str,
    size: str,
    *,
    seed: int = 1,
    fmt: str = "yaml",
    profile: Path | None = None,
    directory: Path = GENERATED,
    repeat: int = 1,
    cycles: int | None = None,
    warmup: int | None = None,
    churn: int | None = None,
) -> dict[str, Any]:
    """Run one workload in fresh ``python -m benchmarks.measure`` subprocesses; return its record.

    A steady-state workload (W5) runs ``python -m benchmarks.steady`` on
    its base workload's file instead, with ``cycles``, ``warmup`` and
    ``churn`` when given (its defaults otherwise); with ``repeat`` its
    record is the run with the median ``cycle_seconds``, every run's figure
    listed in ``cycle_seconds_runs``.

    With ``repeat`` above 1 the workload runs that many times, each in its
    own subprocess, and the record is the run with the median session time,
    with every run's ``load_seconds`` and ``session_seconds`` listed in
    ``load_seconds_runs`` and ``session_seconds_runs``. The record gets
    ``anchor_seconds``, ``anchor_estimated``, ``anchor_binds`` and ``ratio``
    (our session time divided by Volcano's; below 1 is faster) when the
    workload has a Volcano anchor.

    :raises BenchmarkError: when a subprocess fails (its last error line is quoted).
    """
    if repeat < 1:
        raise BenchmarkError(f"repeat must be at least 1, got {repeat}")
    path = ensure_workload(STEADY.get(workload, workload), size, seed=seed, fmt=fmt, directory=directory)
    options = [
        f"--{name}={value}"
        for name, value in (("cycles", cycles), ("warmup", warmup), ("churn", churn))
        if value is not None
    ]
    runs = [_measure_once(path, workload, size, seed, fmt, profile if i == 0 else None, options) for i in range(repeat)]
    key = "cycle_seconds" if workload in STEADY else "session_seconds"
    ordered = sorted(runs, key=lambda r: float(r[key]))
    record = ordered[(len(ordered) - 1) // 2]
    record["repeats"] = repeat
    record["load_seconds_runs"] = [r["load_seconds"] for r in runs]
    record[f"{key}_runs"] = [r[key] for r in runs]
    anchor = ANCHORS.get((workload, size))
    record["anchor_seconds"] = anchor.seconds if anchor else None
    record["anchor_estimated"] = anchor.estimated if anchor else None
    record["anchor_binds"] = anchor.binds if anchor else None
    record["ratio"] = round(record["session_seconds"] / anchor.seconds, 5) if anchor else None
    return record


def steady_line(record: dict[str, Any]) -> str:
    """One line on a W5 record: setup, the median cycle, the binds of each cycle (warm-up ones first)."""
    binds = " ".join(str(n) for n in record["binds_per_cycle"])
    line = (
        f"  setup: load {record['load_seconds']:.3f} s, placement session {record['placement_seconds']:.3f} s "
        f"({record['placement_binds']} binds); cycle median {record['cycle_seconds']:.3f} s "
        f"(wall {record['wall_seconds']:.3f} s); binds per cycle: {binds}"
    )
    if not record["all_bound"]:
        line += "\n  warning: some arrivals were not bound in their cycle (see cycle_records: pending_after)"
    return line


def _seconds(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _layout(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows under a head and a rule; the first two columns left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    lines = [
        "  ".join(
            cell.rjust(w) if i > 1 else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [head, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def table(records: Sequence[dict[str, Any]]) -> str:
    """The records as readable tables: one-session workloads, then steady-state ones (W5).

    See :func:`session_table` and :func:`steady_table`.
    """
    steady = [r for r in records if r.get("kind") == "steady"]
    sessions = [r for r in records if r.get("kind") != "steady"]
    parts = ([session_table(sessions)] if sessions else []) + ([steady_table(steady)] if steady else [])
    return "\n\n".join(parts)


def steady_table(records: Sequence[dict[str, Any]]) -> str:
    """W5 records as a table: the median cycle and the medians of its parts, in seconds.

    ``cycle`` is the Scheduler's session (snapshot, open, the actions,
    close); ``events`` feeding the cycle's arrivals and finishes to the
    cache, ``other`` the rest of ``run_once`` (mostly the garbage
    collector), ``start`` starting the bound pods; ``wall`` all of it, with
    its worst cycle beside it; ``gc`` the collector's share of ``wall``.
    """
    head = (
        "workload",
        "fmt",
        "nodes",
        "pods",
        "churn",
        "cycles",
        "placement",
        "cycle",
        "snapshot",
        "open",
        "actions",
        "close",
        "events",
        "other",
        "start",
        "gc",
        "wall",
        "wall max",
        "binds/cycle",
        "peak MiB",
    )
    rows: list[tuple[str, ...]] = []
    for r in records:
        p = r["parts"]
        actions = sum(v for k, v in p.items() if k not in _STEADY_NOT_ACTIONS)
        measured = [c["binds"] for c in r["cycle_records"] if c["phase"] == "measured"]
        binds = str(min(measured)) if min(measured) == max(measured) else f"{min(measured)}-{max(measured)}"
        rows.append(
            (
                f"{r['workload']}-{r['size']}",
                r["format"],
                str(r["nodes"]),
                str(r["pods"]),
                str(r["churn"]),
                f"{r['warmup']}+{r['cycles']}",
                _seconds(r["placement_seconds"]),
                _seconds(r["cycle_seconds"]),
                _seconds(p["snapshot"]),
                _seconds(p["open"]),
                _seconds(actions),
                _seconds(p["close"]),
                _seconds(p["events"]),
                _seconds(p["run_once_other"]),
                _seconds(p["start"]),
                _seconds(p["gc"]),
                _seconds(r["wall_seconds"]),
                _seconds(r["wall_seconds_max"]),
                binds + ("" if r["all_bound"] else " (!)"),
                f"{r['peak_rss_mib']:.0f}",
            )
        )
    lines = _layout(head, rows)
    for r in records:
        split = ", ".join(
            f"{name} {_seconds(sec)}" for name, sec in r["parts"].items() if name not in _STEADY_NOT_ACTIONS
        )
        lines.append(f"{r['workload']}-{r['size']} ({r['format']}) median actions: {split}")
    return "\n".join(lines)


#: The parts of a W5 record that are not actions.
_STEADY_NOT_ACTIONS: Final = frozenset(
    {"events", "snapshot", "open", "close", "run_once_other", "release", "start", "gc"}
)


def session_table(records: Sequence[dict[str, Any]]) -> str:
    """The records as a readable table, Volcano v1.7's session time and our ratio to it beside ours.

    Times are seconds. ``load`` is reading the file into the model, ``cache``
    feeding the model to the cache; the session is ``snapshot`` + ``open`` +
    the actions + ``close``. ``ours/v1.7`` is our session time divided by
    Volcano's (below 1 is faster); ``~`` marks an estimated anchor.
    """
    head = (
        "workload",
        "fmt",
        "nodes",
        "pods",
        "load",
        "cache",
        "snapshot",
        "open",
        "actions",
        "close",
        "session",
        "v1.7",
        "ours/v1.7",
        "binds",
        "evictions",
        "pipelined",
        "peak MiB",
    )
    rows: list[tuple[str, ...]] = []
    for r in records:
        anchor = r.get("anchor_seconds")
        binds = str(r["binds"])
        if r.get("anchor_binds") is not None:
            binds += f" (v1.7 {r['anchor_binds']})"
        rows.append(
            (
                f"{r['workload']}-{r['size']}",
                r["format"],
                str(r["nodes"]),
                str(r["pods"]),
                _seconds(r["load_seconds"]),
                _seconds(r["cache_seconds"]),
                _seconds(r["snapshot_seconds"]),
                _seconds(r["open_seconds"]),
                _seconds(sum(r["actions"].values())),
                _seconds(r["close_seconds"]),
                _seconds(r["session_seconds"]),
                "-" if anchor is None else ("~" if r.get("anchor_estimated") else "") + _seconds(anchor),
                "-" if r.get("ratio") is None else f"{r['ratio']:.4f}",
                binds,
                str(r["evictions"]),
                str(r["pipelined"]),
                f"{r['peak_rss_mib']:.0f}",
            )
        )
    lines = _layout(head, rows)
    for r in records:
        split = ", ".join(f"{name} {_seconds(sec)}" for name, sec in r["actions"].items())
        lines.append(f"{r['workload']}-{r['size']} ({r['format']}) actions: {split}")
    return "\n".join(lines)
