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


def test_templates_with_equal_tokens_share_one_key_that_reads_nodes_alike() -> None:
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"}), node("c1", cpu="8")]
    near = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
    tasks = [
        pod_task("one", job="j1", node="a1"),
        pod_task("two", job="j2", cpu="2"),
        pod_task("near", job="j3", affinity=near),
        pod_task("image", job="j4", images=["registry/app:1"]),
    ]
    ssn = session(CONF, nodes, tasks)
    keys = _keys(ssn, ["one", "two", "near", "image"])
    assert len({find(ssn, f"default/{name}").template for name in keys}) == 4
    # Other templates, the same token: one key object; a task with images reads them, so its token differs.
    assert keys["one"] is keys["two"] is keys["near"]
    assert keys["image"] is not None and keys["image"].token != keys["one"].token
    fresh = session(CONF, nodes, tasks)
    alone = fresh.plugins["nodeorder"].node_class_key(fresh, find(fresh, "default/near"))
    assert [keys["near"].key(n) for n in ssn.node_list] == [alone.key(n) for n in fresh.node_list]
    ssn.close()
    fresh.close()
