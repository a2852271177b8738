"""Showing results: tables for a person, JSON for a program.

:func:`to_json` is byte-stable: the same result always gives the same text
(keys sorted, no timings unless asked for).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from volcanolib.api.resource import Resource
from volcanolib.errors import VolcanolibError
from volcanolib.sim.explain import Explanation
from volcanolib.sim.runner import CheckOutcome, SimulationResult

__all__ = ["format_check", "format_explanation", "format_result", "format_timings", "table", "to_json", "write_result"]

_MAX_PODS_PER_NODE = 6


def to_json(result: SimulationResult, *, timings: bool = False) -> str:
    """The result as JSON (``volcanolib simulate --json``): sorted keys, two-space indent, final newline."""
    return json.dumps(result.to_dict(timings=timings), sort_keys=True, indent=2) + "\n"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, indent: str = "  ") -> list[str]:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    text_rows = [[str(cell) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in text_rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers), *text_rows]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + row[-1:]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _section(title: str, count: int, body: list[str]) -> list[str]:
    return [f"{title} ({count})", *(body or ["  none"]), ""]


def format_result(result: SimulationResult, *, timings: bool = False) -> str:
    """The result as tables: binds per node, evictions, pipelined pods, pod groups, pending reasons."""
    scenario = result.scenario
    cluster = scenario.cluster
    lines = [
        f"Scenario: {scenario.name}",
        f"Cluster: {_plural(len(cluster.nodes), 'node')}, {_plural(len(cluster.tasks), 'pod')}, "
        f"{_plural(len(result.pod_groups), 'pod group')}, {_plural(len(cluster.queues), 'queue')} listed",
        f"Ran: {_plural(result.sessions, 'session')} (seed {result.seed}), actions: "
        f"{', '.join(scenario.config.actions) or 'none'}",
        "",
    ]
    per_node: dict[str, list[str]] = {}
    for pod, node in result.binds.items():
        per_node.setdefault(node, []).append(pod)
    rows = []
    for node in sorted(per_node):
        pods = per_node[node]
        shown = ", ".join(pods[:_MAX_PODS_PER_NODE])
        if len(pods) > _MAX_PODS_PER_NODE:
            shown += f" and {len(pods) - _MAX_PODS_PER_NODE} more"
        rows.append((node, len(pods), shown))
    lines += _section("Binds", len(result.binds), table(("NODE", "COUNT", "PODS"), rows) if rows else [])
    lines += _section(
        "Evictions",
        len(result.evictions),
        table(("POD",), [(p,) for p in result.evictions]) if result.evictions else [],
    )
    lines += _section(
        "Pipelined",
        len(result.pipelined),
        table(("POD", "NODE"), result.pipelined.items()) if result.pipelined else [],
    )
    group_rows = [
        (uid, r.queue, r.phase.value, f"{r.scheduled}/{r.min_member}") for uid, r in result.pod_groups.items()
    ]
    lines += _section(
        "Pod groups",
        len(group_rows),
        table(("POD GROUP", "QUEUE", "PHASE", "SCHEDULED/MIN"), group_rows) if group_rows else [],
    )
    lines += _section(
        "Pending",
        len(result.unschedulable),
        table(("POD GROUP", "REASON"), result.unschedulable.items()) if result.unschedulable else [],
    )
    if result.plugin_errors:
        lines += _section("Plugin errors", len(result.plugin_errors), [f"  {e}" for e in result.plugin_errors])
    text = "\n".join(lines).rstrip("\n") + "\n"
    return text + "\n" + format_timings(result.timings) if timings else text


def format_timings(timings: Mapping[str, float]) -> str:
    """The ``Timings (seconds)`` table that ends ``format_result(..., timings=True)``."""
    rows = table(("STEP", "SECONDS"), ((k, f"{v:.6f}") for k, v in timings.items()))
    return "\n".join(["Timings (seconds)", *rows]) + "\n"


#: Stands for the timings in the JSON text until they are known; not valid in any name.
_TIMINGS_MARK = "\0timings\0"


def write_result(
    result: SimulationResult,
    out: TextIO,
    *,
    as_json: bool = False,
    timings: bool = False,
    started: float | None = None,
) -> None:
    """Write the result as :func:`to_json` (``as_json``) or :func:`format_result` would give it.

    With ``timings``, the time spent rendering and writing the output is
    recorded in ``result.timings`` as ``output``, and ``total`` becomes the
    time since ``started`` (a :func:`time.perf_counter` value) when it is
    given, else grows by the output's time; only then are the timings
    rendered and written (last, or in their place in the JSON). So the
    timings count the output too, and the text is the same as
    ``to_json(result, timings=True)`` (or ``format_result``) gives with the
    final timings.
    """
    if not timings:
        out.write(to_json(result) if as_json else format_result(result))
        return
    begin = time.perf_counter()
    if as_json:
        data = result.to_dict()
        data["timings"] = _TIMINGS_MARK
        text = json.dumps(data, sort_keys=True, indent=2) + "\n"
        head, tail = text.split(f"\n  {json.dumps('timings')}: {json.dumps(_TIMINGS_MARK)}", 1)
        out.write(head)
    else:
        out.write(format_result(result) + "\n")
    out.flush()
    end = time.perf_counter()
    total = result.timings.pop("total", None)
    result.timings["output"] = end - begin
    if started is not None:
        result.timings["total"] = end - started
    elif total is not None:
        result.timings["total"] = total + end - begin
    if as_json:
        shown = json.dumps({k: round(v, 6) for k, v in result.timings.items()}, sort_keys=True, indent=2)
        out.write(f"\n  {json.dumps('timings')}: " + shown.replace("\n", "\n  ") + tail)
    else:
        out.write(format_timings(result.timings))


def format_check(outcome: CheckOutcome) -> str:
    """One line per file (``PASS``, ``FAIL``, ``ERROR``), then the differences, indented."""
    if outcome.error is not None:
        status = "ERROR" if outcome.bad_input else "FAIL"
        return f"{status} {outcome.source}: {outcome.error}\n"
    if outcome.ok:
        return f"PASS {outcome.source} ({outcome.name})\n"
    lines = [f"FAIL {outcome.source} ({outcome.name}): {_plural(len(outcome.differences), 'difference')}"]
    lines += [f"  {d}" for d in outcome.differences]
    return "\n".join(lines) + "\n"


def _view_lines(view: object) -> list[str]:
    if isinstance(view, Mapping):
        out = []
        for key, value in view.items():
            if isinstance(value, Resource):
                shown = value.describe(with_pods=True, readable=True)
            elif isinstance(value, Mapping):
                shown = _quantities_text(value)
            else:
                shown = str(value)
            out.append(f"    {key}: {shown}")
        return out
    return [f"    {line}" for line in str(view).splitlines()]


def _quantities_text(value: Mapping[Any, Any]) -> str:
    """A mapping of Kubernetes quantities as a person reads it; any other mapping as ``key value`` pairs."""
    if value and all(isinstance(v, str) for v in value.values()):
        try:
            res = Resource.from_list(value)
        except VolcanolibError:
            pass
        else:
            if len(res.all_names()) >= len(value):
                return res.describe(with_pods=True, readable=True)
    return ", ".join(f"{k} {v}" for k, v in value.items()) or "-"


def format_explanation(exp: Explanation, *, max_nodes: int = 20, max_pods: int = 10) -> str:
    """Why a PodGroup is pending: its state, the scheduler's reason, per pod per node, the queue's view.

    :param max_nodes: node rows shown per pod (0: all).
    :param max_pods: distinct pending pods shown (0: all).
    """
    report = exp.report
    head = f"PodGroup {exp.pod_group}"
    if report is not None:
        pods = _plural(report.scheduled, "pod")
        head += f" (queue {report.queue}): {report.phase.value}, {pods} scheduled, minMember {report.min_member}"
    lines = [head]
    if exp.reason:
        lines.append(f"Scheduler's reason (last session): {exp.reason}")
    elif not exp.pods:
        lines.append("Nothing is pending.")
    for note in exp.notes:
        lines.append(note)
    if exp.pods:
        lines += ["", "Pending pods, checked node by node on the cluster as the scenario left it:"]
    shown_pods = exp.pods[:max_pods] if max_pods else exp.pods
    for pod in shown_pods:
        similar = f" (and {_plural(pod.similar, 'more pod')} like it)" if pod.similar else ""
        lines.append(f"  {pod.pod}{similar}: requests {pod.request.describe(readable=True)}")
        lines.append(f"    {pod.summary}")
        rows = [(n.node, n.plugin or "-", n.reason) for n in pod.nodes]
        if max_nodes and len(rows) > max_nodes:
            hidden = len(rows) - max_nodes
            rows = rows[:max_nodes]
            lines += table(("NODE", "PLUGIN", "REASON"), rows, indent="    ")
            lines.append(f"    ... {_plural(hidden, 'more node')} (--max-nodes 0 shows all)")
        elif rows:
            lines += table(("NODE", "PLUGIN", "REASON"), rows, indent="    ")
    if len(shown_pods) < len(exp.pods):
        lines.append(f"  ... {_plural(len(exp.pods) - len(shown_pods), 'more distinct pending pod')}")
    if exp.queue_views:
        lines.append("")
        lines.append(f"Queue {exp.queue}, as the plugins see it:")
        for plugin, view in exp.queue_views:
            lines.append(f"  {plugin}:")
            lines += _view_lines(view)
    return "\n".join(lines) + "\n"


def plugins_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Rows of ``volcanolib plugins``: name, distribution, hooks."""
    return table(
        ("NAME", "DISTRIBUTION", "HOOKS"),
        (
            (r["name"], r["distribution"] or "-", ", ".join(r["hooks"]) if r.get("hooks") else r.get("error", "-"))
            for r in rows
        ),
    )
