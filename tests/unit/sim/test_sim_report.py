"""Tables for a person, and explanations of pending PodGroups."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from volcanolib import ManifestError, Registry
from volcanolib._console import render_text
from volcanolib.sim import check_scenario, explain, simulate
from volcanolib.sim.report import format_check, format_explanation, format_result, table, to_json, write_result

Objects = dict[str, Callable[..., dict[str, Any]]]
Write = Callable[..., Path]
WORKER = {"volcano.sh/task-spec": "worker"}


def cluster(o: Objects, conf: dict[str, Any] | None = None, **keys: Any) -> dict[str, Any]:
    return {
        "name": "report test",
        "scheduler": conf
        or {"actions": "firstfit", "tiers": [{"plugins": [{"name": "scorer", "arguments": {"refuse": ["n3"]}}]}]},
        "objects": [
            o["node"]("n1", cpu="2"),
            o["node"]("n2", cpu="1"),
            o["node"]("n3", cpu="8"),
            o["group"]("small", 1),
            o["pod"]("s1", "small"),
            o["group"]("big", 2, queue="q1"),
            o["pod"]("b1", "big", cpu="4", labels=WORKER),
            o["pod"]("b2", "big", cpu="4", labels=WORKER),
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"}},
        ],
        **keys,
    }


def test_table_aligns_columns_and_numbers_right() -> None:
    text = render_text([table(("A", "BB", "N"), [("xxx", "y", 5), ("z", "long text", 12)], right=(2,))])
    assert text == "  A    BB          N\n  xxx  y           5\n  z    long text  12\n"


def test_result_tables(objects: Objects, write: Write, registry: Registry) -> None:
    result = simulate([write(cluster(objects))], registry=registry)
    text = format_result(result)
    assert text.splitlines()[:3] == [
        "Scenario: report test",
        "Cluster: 3 nodes, 3 pods, 2 pod groups, 1 queue listed",
        "Ran: 1 session (seed 0), actions: firstfit",
    ]
    assert "Binds (1)\n  NODE  COUNT  PODS\n  n1    1      ns1/s1\n" in text
    assert "Evictions (0)\n  none\n" in text
    assert "  ns1/big    q1       Inqueue  0/2\n" in text
    assert "  ns1/small  default  Running  1/1\n" in text
    assert "Pending (1)\n  POD GROUP  REASON\n  ns1/big    0/3 nodes are available: 3 Insufficient cpu.\n" in text
    assert "Timings" not in text and "Timings (seconds)" in format_result(result, timings=True)


@pytest.mark.parametrize("as_json", [False, True])
def test_written_result_times_its_own_output(objects: Objects, write: Write, registry: Registry, as_json: bool) -> None:
    result = simulate([write(cluster(objects))], registry=registry)
    before = dict(result.timings)
    out = io.StringIO()
    write_result(result, out, as_json=as_json, timings=True, started=time.perf_counter() - 5.0)
    assert list(result.timings) == [*(k for k in before if k != "total"), "output", "total"]
    assert result.timings["output"] > 0 and result.timings["total"] >= 5.0
    # the same text as rendering the result with its final timings
    assert out.getvalue() == (to_json(result, timings=True) if as_json else format_result(result, timings=True))


def test_written_result_without_a_start_adds_the_output_to_the_total(
    objects: Objects, write: Write, registry: Registry
) -> None:
    result = simulate([write(cluster(objects))], registry=registry)
    total = result.timings["total"]
    write_result(result, io.StringIO(), as_json=True, timings=True)
    assert result.timings["total"] == pytest.approx(total + result.timings["output"])
    out = io.StringIO()
    write_result(result, out)
    assert out.getvalue() == format_result(result)


def test_explanation_per_pod_per_node_per_plugin(objects: Objects, write: Write, registry: Registry) -> None:
    result = simulate([write(cluster(objects))], registry=registry)
    exp = explain(result, "ns1/big", registry=registry)
    assert exp.reason == "0/3 nodes are available: 3 Insufficient cpu."
    (pod,) = exp.pods  # b1 and b2 share a template: one answer
    assert pod.pod == "ns1/b1" and pod.similar == 1
    assert [(v.node, v.plugin, v.reason) for v in pod.nodes] == [
        ("n1", "allocate", "Insufficient cpu (requested 4, free 1)"),
        ("n2", "allocate", "Insufficient cpu (requested 4, free 1)"),
        ("n3", "scorer", "node(s) refused by the scorer: n3"),
    ]
    assert pod.summary == "0/3 nodes are available: 1 node(s) refused by the scorer: n3, 2 Insufficient cpu."
    assert exp.queue_views == (("scorer", {"deserved": exp.queue_views[0][1]["deserved"], "note": "queue q1"}),)  # type: ignore[index]
    text = format_explanation(exp)
    assert text.startswith("PodGroup ns1/big (queue q1): Inqueue, 0 pods scheduled, minMember 2\n")
    assert "  ns1/b1 (and 1 more pod like it): requests cpu 4\n" in text
    assert "    n3    scorer    node(s) refused by the scorer: n3\n" in text
    assert "Queue q1, as the plugins see it:\n  scorer:\n    deserved: cpu 2\n    note: queue q1\n" in text
    assert "more node" in format_explanation(exp, max_nodes=1)


def test_explaining_a_scheduled_group(objects: Objects, write: Write, registry: Registry) -> None:
    result = simulate([write(cluster(objects))], registry=registry)
    exp = explain(result, "small", registry=registry)
    assert exp.pod_group == "ns1/small" and exp.pods == () and exp.reason is None
    assert "Nothing is pending." in format_explanation(exp)


def test_explaining_a_group_with_a_missing_queue(objects: Objects, write: Write, registry: Registry) -> None:
    data = cluster(objects)
    data["objects"].append(objects["group"]("lost", 1, queue="nowhere"))
    data["objects"].append(objects["pod"]("l1", "lost"))
    result = simulate([write(data)], registry=registry)
    exp = explain(result, "ns1/lost", registry=registry)
    assert exp.notes == ("Not in the session: queue 'nowhere' of PodGroup ns1/lost does not exist",)


def test_explaining_an_unknown_group(objects: Objects, write: Write, registry: Registry) -> None:
    result = simulate([write(cluster(objects))], registry=registry)
    with pytest.raises(ManifestError, match=r"no PodGroup 'ns1/bg' in the scenario; did you mean ns1/big"):
        explain(result, "ns1/bg", registry=registry)


def test_check_lines(objects: Objects, write: Write, registry: Registry) -> None:
    good = write(cluster(objects, expect={"bindCount": 1}))
    bad = write(cluster(objects, expect={"bindCount": 2}))
    assert format_check(check_scenario(good, registry=registry)) == f"PASS {good} (report test)\n"
    assert format_check(check_scenario(bad, registry=registry)) == (
        f"FAIL {bad} (report test): 1 difference\n  bindCount: expected 2, got 1\n"
    )
    missing = write("objects: [")
    line = format_check(check_scenario(missing, registry=registry))
    assert line.startswith(f"ERROR {missing}: not valid YAML")
    assert line.count(str(missing)) == 1
