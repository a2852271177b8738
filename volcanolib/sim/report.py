"""Showing results: tables for a person, JSON for a program.

:func:`to_json` is byte-stable: the same result always gives the same text
(keys sorted, no timings unless asked for). The tables are drawn by rich
(the ``cli`` extra) through :mod:`volcanolib._console`: styled and wrapped on
a terminal, plain lines in a file or a pipe; ``format_*`` give the plain
text, ``*_blocks`` the lines and tables to draw.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from volcanolib._console import Block, TableSpec, render_text, write
from volcanolib.api.resource import Resource
from volcanolib.errors import VolcanolibError
from volcanolib.sim.explain import Explanation
from volcanolib.sim.runner import CheckOutcome, SimulationResult

__all__ = [
    "explanation_blocks",
    "format_check",
    "format_explanation",
    "format_result",
    "format_timings",
    "plugin_blocks",
    "result_blocks",
    "table",
    "to_json",
    "write_result",
]

_MAX_PODS_PER_NODE = 6


def to_json(result: SimulationResult, *, timings: bool = False) -> str:
    """The result as JSON (``volcanolib simulate --json``): sorted keys, two-space indent, final newline."""
    return json.dumps(result.to_dict(timings=timings), sort_keys=True, indent=2) + "\n"


def table(
    headers: Sequence[str], rows: Iterable[Sequence[object]], *, right: Iterable[int] = (), indent: int = 2
) -> TableSpec:
    """A table of text cells for :mod:`volcanolib._console`, drawn by rich (``right``: columns aligned right)."""
    return TableSpec(tuple(headers), tuple(tuple(str(c) for c in row) for row in rows), frozenset(right), indent)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _section(title: str, count: int, body: TableSpec | None) -> list[Block]:
    return [f"{title} ({count})", body if body is not None and body.rows else "  none", ""]


def result_blocks(result: SimulationResult) -> list[Block]:
    """The lines and tables of :func:`format_result` (without the timings)."""
    scenario = result.scenario
    cluster = scenario.cluster
    blocks: list[Block] = [
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
    blocks += _section("Binds", len(result.binds), table(("NODE", "COUNT", "PODS"), rows))
    blocks += _section("Evictions", len(result.evictions), table(("POD",), [(p,) for p in result.evictions]))
    blocks += _section("Pipelined", len(result.pipelined), table(("POD", "NODE"), result.pipelined.items()))
    group_rows = [
        (uid, r.queue, r.phase.value, f"{r.scheduled}/{r.min_member}") for uid, r in result.pod_groups.items()
    ]
    blocks += _section(
        "Pod groups", len(group_rows), table(("POD GROUP", "QUEUE", "PHASE", "SCHEDULED/MIN"), group_rows)
    )
    blocks += _section(
        "Pending", len(result.unschedulable), table(("POD GROUP", "REASON"), result.unschedulable.items())
    )
    if result.plugin_errors:
        blocks += [f"Plugin errors ({len(result.plugin_errors)})", *(f"  {e}" for e in result.plugin_errors), ""]
    return blocks[:-1]  # no blank line at the end


def format_result(result: SimulationResult, *, timings: bool = False) -> str:
    """The result as tables: binds per node, evictions, pipelined pods, pod groups, pending reasons.

    Plain text, as ``volcanolib simulate`` writes it to a file or a pipe
    (:mod:`volcanolib._console`); it needs rich (the ``cli`` extra).

    :raises MissingExtraError: rich is not installed.
    """
    text = render_text(result_blocks(result))
    return text + "\n" + format_timings(result.timings) if timings else text


def _timing_blocks(timings: Mapping[str, float]) -> list[Block]:
    return ["Timings (seconds)", table(("STEP", "SECONDS"), ((k, f"{v:.6f}") for k, v in timings.items()), right=(1,))]


def format_timings(timings: Mapping[str, float]) -> str:
    """The ``Timings (seconds)`` table that ends ``format_result(..., timings=True)``."""
    return render_text(_timing_blocks(timings))


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
        if as_json:
            out.write(to_json(result))
        else:
            write(out, result_blocks(result))
        return
    begin = time.perf_counter()
    if as_json:
        data = result.to_dict()
        data["timings"] = _TIMINGS_MARK
        text = json.dumps(data, sort_keys=True, indent=2) + "\n"
        head, tail = text.split(f"\n  {json.dumps('timings')}: {json.dumps(_TIMINGS_MARK)}", 1)
        out.write(head)
    else:
        write(out, [*result_blocks(result), ""])
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
        write(out, _timing_blocks(result.timings))


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


def explanation_blocks(exp: Explanation, *, max_nodes: int = 20, max_pods: int = 10) -> list[Block]:
    """The lines and tables of :func:`format_explanation`."""
    report = exp.report
    head = f"PodGroup {exp.pod_group}"
    if report is not None:
        pods = _plural(report.scheduled, "pod")
        head += f" (queue {report.queue}): {report.phase.value}, {pods} scheduled, minMember {report.min_member}"
    blocks: list[Block] = [head]
    if exp.reason:
        blocks.append(f"Scheduler's reason (last session): {exp.reason}")
    elif not exp.pods:
        blocks.append("Nothing is pending.")
    blocks.extend(exp.notes)
    if exp.shortfall is not None:
        blocks.extend(f"Short of queue room: {q.text()}." for q in exp.shortfall.queue)
    if exp.pods:
        blocks += ["", f"Pending pods, checked node by node on the cluster {exp.state}:"]
    shown_pods = exp.pods[:max_pods] if max_pods else exp.pods
    rooms = {room.pod: room for room in exp.room}
    for pod in shown_pods:
        similar = f" (and {_plural(pod.similar, 'more pod')} like it)" if pod.similar else ""
        blocks.append(f"  {pod.pod}{similar}: requests {pod.request.describe(readable=True)}")
        blocks.append(f"    {pod.summary}")
        room = rooms.get(pod.pod)
        if room is not None:
            blocks.append(f"    Room: {room.text()}.")
        rows = [(n.node, n.plugin or "-", n.reason) for n in pod.nodes]
        hidden = len(rows) - max_nodes if max_nodes and len(rows) > max_nodes else 0
        if rows:
            blocks.append(table(("NODE", "PLUGIN", "REASON"), rows[: len(rows) - hidden], indent=4))
        if hidden:
            blocks.append(f"    ... {_plural(hidden, 'more node')} (--max-nodes 0 shows all)")
    if len(shown_pods) < len(exp.pods):
        blocks.append(f"  ... {_plural(len(exp.pods) - len(shown_pods), 'more distinct pending pod')}")
    if exp.queue_views:
        blocks.append("")
        blocks.append(f"Queue {exp.queue}, as the plugins see it:")
        for plugin, view in exp.queue_views:
            blocks.append(f"  {plugin}:")
            blocks += _view_lines(view)
    return blocks


def format_explanation(exp: Explanation, *, max_nodes: int = 20, max_pods: int = 10) -> str:
    """Why a PodGroup is pending: its state, the scheduler's reason, per pod per node, the queue's view.

    Plain text, as ``volcanolib explain`` writes it to a file or a pipe; it
    needs rich (the ``cli`` extra).

    :param max_nodes: node rows shown per pod (0: all).
    :param max_pods: distinct pending pods shown (0: all).
    :raises MissingExtraError: rich is not installed.
    """
    return render_text(explanation_blocks(exp, max_nodes=max_nodes, max_pods=max_pods))


def plugin_blocks(plugins: Sequence[Mapping[str, Any]], actions: Sequence[Mapping[str, Any]]) -> list[Block]:
    """The tables of ``volcanolib plugins``: plugins (name, distribution, traits, hooks), actions, the broken ones.

    :param plugins: rows with ``name``, ``distribution``, ``traits``, ``hooks``, ``broken`` and, when
        broken, ``error``.
    :param actions: rows with ``name``, ``distribution``, ``target``, ``broken`` and, when broken, ``error``.
    """
    blocks: list[Block] = [
        f"Plugins ({len(plugins)})",
        table(
            ("NAME", "DISTRIBUTION", "TRAITS", "HOOKS"),
            (
                (
                    p["name"],
                    p["distribution"] or "-",
                    ", ".join(p.get("traits", ())) or "-",
                    f"BROKEN: {p['error']}" if p["broken"] else ", ".join(p["hooks"]) or "-",
                )
                for p in plugins
            ),
        ),
        "",
        f"Actions ({len(actions)})",
        table(
            ("NAME", "DISTRIBUTION", "CLASS"),
            (
                (a["name"], a["distribution"] or "-", f"BROKEN: {a['error']}" if a["broken"] else a["target"])
                for a in actions
            ),
        ),
    ]
    broken = [row["name"] for row in (*plugins, *actions) if row["broken"]]
    if broken:
        blocks += ["", f"Broken ({len(broken)}): {', '.join(broken)}; a configuration naming one of them is refused."]
    return blocks
