"""The terminal tables of ``volcanolib replay`` and ``volcanolib compare`` (rich, the ``cli`` extra).

Both read the document :func:`volcanolib.replay.metrics.summarise` returns,
so the tables show exactly the figures of ``--json``: times as durations
(``45s``, ``12m 30s``, ``3h 05m``, ``2d 04h``), utilisation and shares as
percentages, ``-`` where a figure does not exist (no job started, no
deserved share).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from volcanolib._console import Block, TableSpec, print_blocks
from volcanolib.replay.metrics import finished

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "comparison_blocks",
    "comparison_table",
    "duration",
    "ratio",
    "render_comparison",
    "render_summary",
    "summary_blocks",
]

_DISTRIBUTIONS = (("wait", "wait"), ("jct", "jct"))
_STATISTICS = ("mean", "p50", "p95", "p99", "max")


def duration(seconds: float | None) -> str:
    """Simulated seconds as a person reads them: ``7.5s``, ``12m 30s``, ``3h 05m``, ``2d 04h``; ``-`` for ``None``.

    >>> duration(7.5), duration(750), duration(11100), duration(187200)
    ('7.5s', '12m 30s', '3h 05m', '2d 04h')
    """
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}".removesuffix(".0") + "s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d {whole % 86400 // 3600:02d}h"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def ratio(value: float | None) -> str:
    """A ratio (Jain's index) with three decimals; ``-`` for ``None``."""
    return "-" if value is None else f"{value:.3f}"


#: Unfinished jobs named by the summary; the others are counted.
_NAMED = 5


def _unfinished(summary: Mapping[str, Any]) -> list[Block]:
    """A line naming the unfinished jobs (the first few), those no node can take marked so."""
    unplaceable = summary["summary"].get("unplaceable") or {}
    names = [job["name"] for job in summary["jobs"] if not finished(job["phase"])]
    if not names:
        return []
    names.sort(key=lambda name: name not in unplaceable)  # the ones that can never run first
    shown = [f"{name} (fits no node)" if name in unplaceable else name for name in names[:_NAMED]]
    more = f" and {len(names) - _NAMED} more" if len(names) > _NAMED else ""
    return [f"Unfinished: {', '.join(shown)}{more}"]


def summary_blocks(summary: Mapping[str, Any]) -> list[Block]:
    """The lines and tables of :func:`render_summary`."""
    s = summary["summary"]
    blocks: list[Block] = [
        f"Jobs: {s['jobs']} ({s['completed']} completed, {s['failed']} failed, "
        f"{s['cancelled']} cancelled, {s['unfinished']} unfinished)",
        *_unfinished(summary),
        f"Pods evicted (preempted or reclaimed): {s['evicted_pods']}",
        f"Simulated: {duration(s['simulated_seconds'])} over {s['sessions']} session periods, "
        f"makespan {duration(s['makespan'])}",
        "",
        TableSpec(
            ("TIMES", *(k.upper() for k in _STATISTICS)),
            tuple((label, *(duration(s[key][k]) for k in _STATISTICS)) for label, key in _DISTRIBUTIONS),
            frozenset(range(1, len(_STATISTICS) + 1)),
        ),
        "",
        "Utilisation",
    ]
    utilisation = s["utilisation"]
    blocks.append(
        TableSpec(("RESOURCE", "ALLOCATED"), tuple((k, _percent(v)) for k, v in utilisation.items()), frozenset({1}))
        if utilisation
        else "  none"
    )
    queues = summary["queues"]
    blocks += [
        "",
        f"Queues ({len(queues)}), fairness (Jain's index of share / deserved): {ratio(s['fairness']['jain'])}",
    ]
    blocks.append(
        TableSpec(
            ("QUEUE", "JOBS", "EVICTED", "SHARE", "DESERVED", "WAIT MEAN", "WAIT P95", "JCT MEAN", "JCT P95"),
            tuple(
                (
                    q["name"],
                    str(q["jobs"]),
                    str(q["evicted_pods"]),
                    _percent(q["share"]["mean"]),
                    _percent(q["deserved"]["share"]) + (" (weight)" if q["deserved"]["from"] == "weight" else ""),
                    duration(q["wait"]["mean"]),
                    duration(q["wait"]["p95"]),
                    duration(q["jct"]["mean"]),
                    duration(q["jct"]["p95"]),
                )
                for q in queues
            ),
            frozenset({1, 2, 3, 4, 5, 6, 7, 8}),
        )
        if queues
        else "  none"
    )
    return blocks


def render_summary(summary: Mapping[str, Any], console: Console) -> None:
    """Print one replay's summary: job counts, wait and JCT percentiles, utilisation, queues and fairness.

    :param summary: the document :func:`~volcanolib.replay.metrics.summarise` returns.
    :param console: where to print (see :func:`volcanolib._console.output`).
    """
    print_blocks(console, summary_blocks(summary))


def _rows(summary: Mapping[str, Any]) -> dict[str, str]:
    """One run's figures by row label, in the order of the comparison."""
    s = summary["summary"]
    rows = {key: str(s[key]) for key in ("jobs", "completed", "failed", "cancelled", "unfinished")}
    rows["evicted pods"] = str(s["evicted_pods"])
    queues = summary["queues"]
    for label, key in _DISTRIBUTIONS:
        rows.update((f"{label} {k}", duration(s[key][k])) for k in _STATISTICS)
        if key == "wait":  # each queue's wait next to the cluster's: the figures compared first
            for q in queues:
                rows.update((f"wait {k} {q['name']}", duration(q["wait"][k])) for k in ("mean", "p95"))
    rows.update((f"evicted pods {q['name']}", str(q["evicted_pods"])) for q in queues)
    rows["makespan"] = duration(s["makespan"])
    rows.update((f"utilisation {k}", _percent(v)) for k, v in s["utilisation"].items())
    rows["fairness (Jain)"] = ratio(s["fairness"]["jain"])
    rows.update((f"share {q['name']}", _percent(q["share"]["mean"])) for q in summary["queues"])
    rows["session periods"] = str(s["sessions"])
    return rows


def comparison_table(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> TableSpec:
    """One row per figure, one column per run (``-`` where a run lacks the figure, such as a queue it has not)."""
    per_run = [_rows(summary) for _, summary in runs]
    labels: list[str] = []
    for rows in per_run:
        labels += [label for label in rows if label not in labels]
    return TableSpec(
        ("FIGURE", *(name for name, _ in runs)),
        tuple((label, *(rows.get(label, "-") for rows in per_run)) for label in labels),
        frozenset(range(1, len(runs) + 1)),
    )


def comparison_blocks(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Block]:
    """The lines and tables of :func:`render_comparison`."""
    return [comparison_table(runs)]


def render_comparison(runs: Sequence[tuple[str, Mapping[str, Any]]], console: Console) -> None:
    """Print several replays' summaries side by side: one column per run, ``-`` where a run lacks a figure.

    :param runs: ``(name, summary)`` pairs, in the order of the columns.
    :param console: where to print (see :func:`volcanolib._console.output`).
    """
    print_blocks(console, comparison_blocks(runs))
