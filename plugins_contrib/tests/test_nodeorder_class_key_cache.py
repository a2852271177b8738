"""nodeorder's node class key, kept per template: the same answers as working it out for every task."""

from __future__ import annotations

from typing import Any

from contrib_testkit import find, node, pod_task, session

CONF = """
actions: ""
tiers:
- plugins:
  - name: nodeorder
"""
PREFERS = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}}
        ]
    }
}
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]


def _keys(ssn: Any, names: list[str]) -> dict[str, Any]:
    plugin = ssn.plugins["nodeorder"]
    return {name: plugin.node_class_key(ssn, find(ssn, f"default/{name}")) for name in names}


def test_a_template_s_answer_is_kept_and_abstentions_too() -> None:
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    tasks = [
        pod_task("plain", job="j"),
        pod_task("prefers", job="j", affinity=PREFERS),
        pod_task("spread", job="j", labels={"app": "web"}, spread=SPREAD),
    ]
    ssn = session(CONF, nodes, tasks)
    first = _keys(ssn, ["plain", "prefers", "spread"])
    again = _keys(ssn, ["plain", "prefers", "spread"])
    # Preferred pod affinity and soft spread read other nodes' pods: no key, asked once or twice.
    assert first["prefers"] is None and again["prefers"] is None
    assert first["spread"] is None and again["spread"] is None
    assert first["plain"] is not None and again["plain"] is first["plain"]
    ssn.close()


def test_no_key_once_a_placed_pod_has_pod_affinity_whatever_the_template_had() -> None:
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    tasks = [pod_task("plain", job="j"), pod_task("web", job="w", affinity=PREFERS, labels={"app": "web"})]
    ssn = session(CONF, nodes, tasks)
    assert _keys(ssn, ["plain"])["plain"] is not None
    # Placing a pod with preferred pod affinity makes it score every node by its domain: no task gets a key.
    ssn.statement().allocate(find(ssn, "default/web"), ssn.nodes["a1"])
    assert _keys(ssn, ["plain"])["plain"] is None
    ssn.close()
