"""A sweep's results: one table (CSV and JSON) and a comparison plot.

The JSON file is the list of rows as :func:`~volcanolib.sweep.run.run_sweep`
returns them (parameters, ``summary`` and ``queues`` as ``replay --json``
writes them, ``error``). The CSV file has one row per point with the same
figures flattened into columns: the parameters, ``error``, the summary's
counts (``evicted_pods`` included), ``wait_*`` and ``jct_*`` statistics,
``makespan``, ``utilisation_<resource>``, ``jain``, and per queue
``<queue>:wait_p50``, ``<queue>:wait_p95``, ``<queue>:jct_p50``,
``<queue>:share_mean`` and ``<queue>:evicted_pods``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from volcanolib.errors import VolcanolibError
from volcanolib.replay.plot import require_matplotlib

__all__ = ["flatten", "plot_sweep", "write_results"]

_STATS = ("mean", "p50", "p95", "p99", "max")
_COUNTS = ("jobs", "completed", "failed", "cancelled", "unfinished", "evicted_pods")
_QUEUE_FIGURES = (("wait", "p50"), ("wait", "p95"), ("jct", "p50"), ("share", "mean"))


def flatten(row: Mapping[str, Any]) -> dict[str, Any]:
    """One results row as flat CSV columns (missing figures are empty)."""
    flat: dict[str, Any] = {
        "configuration": row["configuration"],
        "load": row["load"],
        "seed": row["seed"],
        "error": row.get("error") or "",
    }
    summary = row.get("summary") or {}
    for count in _COUNTS:
        flat[count] = summary.get(count, "")
    for figure in ("wait", "jct"):
        stats = summary.get(figure) or {}
        for stat in _STATS:
            flat[f"{figure}_{stat}"] = stats.get(stat, "")
    flat["makespan"] = summary.get("makespan", "")
    for resource, value in sorted((summary.get("utilisation") or {}).items()):
        flat[f"utilisation_{resource}"] = value
    flat["jain"] = (summary.get("fairness") or {}).get("jain", "")
    for queue in row.get("queues") or []:
        for figure, stat in _QUEUE_FIGURES:
            flat[f"{queue['name']}:{figure}_{stat}"] = (queue.get(figure) or {}).get(stat, "")
        flat[f"{queue['name']}:evicted_pods"] = queue.get("evicted_pods", "")
    return flat


def write_results(rows: Sequence[Mapping[str, Any]], directory: Path) -> tuple[Path, Path]:
    """Write ``results.json`` and ``results.csv`` into ``directory``; return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / "results.json"
    json_path.write_text(json.dumps(list(rows), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    flat = [flatten(r) for r in rows]
    columns: list[str] = []
    for f in flat:
        columns.extend(c for c in f if c not in columns)
    csv_path = directory / "results.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(flat)
    return json_path, csv_path


def plot_sweep(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Draw the sweep's comparison: per configuration and load, the wait p50 and p95 and JCT p50 of
    every queue, averaged over seeds (error bars: the seeds' range). ``.png`` or ``.svg``.

    The same rows give the same SVG bytes.

    :raises MissingExtraError: matplotlib (the ``plot`` extra) is not installed.
    :raises VolcanolibError: the suffix is unknown, or the file cannot be written (one line naming it).
    """
    if path.suffix.lower() not in (".png", ".svg"):
        raise VolcanolibError(f"{path}: --plot writes .png or .svg, not {path.suffix or 'a file without suffix'}")
    require_matplotlib()
    import matplotlib
    from matplotlib.figure import Figure

    ok = [r for r in rows if r.get("error") is None and r.get("summary")]
    groups: dict[tuple[str, float], list[Mapping[str, Any]]] = {}
    for r in ok:
        groups.setdefault((r["configuration"], r["load"]), []).append(r)
    labels = [f"{conf.replace('[', chr(10) + '[')}\nload {load:g}" for conf, load in groups]
    queues = sorted({q["name"] for r in ok for q in r.get("queues") or [] if q.get("jobs")})
    panels = [("wait p50 (s)", "wait", "p50"), ("wait p95 (s)", "wait", "p95"), ("JCT p50 (s)", "jct", "p50")]
    # As the replay's plots: no pyplot state, and the same rows give the same SVG bytes.
    with matplotlib.rc_context({"svg.hashsalt": "volcanolib", "svg.fonttype": "path"}):
        fig = Figure(figsize=(max(6.0, 1.2 * len(labels) + 2), 3.2 * len(panels)))
        axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
        _draw(axes, panels, groups, labels, queues)
        fig.tight_layout()
        try:
            fig.savefig(path, metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
        except OSError as exc:
            raise VolcanolibError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def _draw(
    axes: Any,
    panels: Sequence[tuple[str, str, str]],
    groups: Mapping[tuple[str, float], Sequence[Mapping[str, Any]]],
    labels: Sequence[str],
    queues: Sequence[str],
) -> None:
    """Draw each panel: a group of bars per configuration and load, in it a bar for all jobs and one per queue."""
    width = 0.8 / max(1, len(queues) + 1)
    for ax, (title, figure, stat) in zip(axes, panels, strict=True):
        series = [("all jobs", None), *((q, q) for q in queues)]
        for si, (name, queue) in enumerate(series):
            means, lows, highs = [], [], []
            for members in groups.values():
                values = []
                for r in members:
                    if queue is None:
                        block = r["summary"].get(figure) or {}
                    else:
                        block = next((q.get(figure) or {} for q in r["queues"] if q["name"] == queue), {})
                    if isinstance(block.get(stat), (int, float)):
                        values.append(float(block[stat]))
                mean = sum(values) / len(values) if values else 0.0
                means.append(mean)
                lows.append(mean - min(values) if values else 0.0)
                highs.append(max(values) - mean if values else 0.0)
            xs = [i + (si - len(series) / 2 + 0.5) * width for i in range(len(groups))]
            ax.bar(xs, means, width, yerr=[lows, highs], label=name, capsize=2)
        ax.set_title(title)
        ax.set_xticks(range(len(groups)), labels, fontsize=7)
    axes[0].legend(fontsize=8)
