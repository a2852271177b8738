"""predicates: Kubernetes filters, their reasons and codes, pod tracking through events, batch agreement."""

from __future__ import annotations

from typing import Any

import pytest
from contrib_testkit import find, node, pod_task, session

from volcanolib.api.fiterrors import FitErrors
from volcanolib.api.node import Taint
from volcanolib.api.task import TaskStatus
from volcanolib.framework.status import Code

CONF = """
actions: ""
tiers:
- plugins:
  - name: predicates
"""
HOST = "kubernetes.io/hostname"


def conf_with(**arguments: Any) -> str:
    args = ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in arguments.items())
    return CONF + f"    arguments: {{{args}}}\n"


def check(ssn: Any, key: str, node_name: str) -> tuple[Code, tuple[str, ...]]:
    status = ssn.predicate(find(ssn, key), ssn.nodes[node_name])
    return status.code, status.reasons


# ---------------------------------------------------------------------------- stable filters


def test_unschedulable_node_refused_unless_tolerated() -> None:
    tolerate = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    ssn = session(
        CONF,
        [node("n1", unschedulable=True)],
        [pod_task("plain", job="j"), pod_task("tolerant", job="j", tolerations=[tolerate])],
    )
    assert check(ssn, "default/plain", "n1") == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) were unschedulable",))
    assert check(ssn, "default/tolerant", "n1") == (Code.SUCCESS, ())


def test_node_selector_and_required_affinity_operators() -> None:
    def required(*terms: dict[str, Any]) -> dict[str, Any]:
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}

    def expr(key: str, op: str, *values: str) -> dict[str, Any]:
        return {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}

    nodes = [
        node("a", labels={"zone": "z1", "cores": "8", "disk": "ssd"}),
        node("b", labels={"zone": "z2", "cores": "16"}),
        node("c", labels={"cores": "x"}),
    ]
    tasks = [
        pod_task("sel", job="j", node_selector={"disk": "ssd"}),
        pod_task("in", job="j", affinity=required(expr("zone", "In", "z2"))),
        pod_task("notin", job="j", affinity=required(expr("zone", "NotIn", "z1"))),
        pod_task("exists", job="j", affinity=required(expr("zone", "Exists"))),
        pod_task("absent", job="j", affinity=required(expr("disk", "DoesNotExist"))),
        pod_task("gt", job="j", affinity=required(expr("cores", "Gt", "10"))),
        pod_task("lt", job="j", affinity=required(expr("cores", "Lt", "10"))),
        pod_task("or", job="j", affinity=required(expr("zone", "In", "z1"), expr("cores", "Gt", "12"))),
        pod_task(
            "field",
            job="j",
            affinity=required({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}),
        ),
        pod_task("empty", job="j", affinity=required()),
        pod_task("badgt", job="j", affinity=required(expr("cores", "Gt", "many"))),
    ]
    ssn = session(CONF, nodes, tasks)
    fits = {
        t: [n for n in "abc" if ssn.predicate(find(ssn, f"default/{t}"), ssn.nodes[n]).ok]
        for t in ("sel", "in", "notin", "exists", "absent", "gt", "lt", "or", "field", "empty", "badgt")
    }
    assert fits == {
        "sel": ["a"],
        "in": ["b"],
        "notin": ["b", "c"],
        "exists": ["a", "b"],
        "absent": ["b", "c"],
        "gt": ["b"],
        "lt": ["a"],
        "or": ["a", "b"],
        "field": ["c"],
        "empty": [],
        "badgt": [],
    }
    code, reasons = check(ssn, "default/in", "a")
    assert code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert reasons == ("node(s) didn't match Pod's node affinity/selector",)


def test_taints_need_tolerations_for_no_schedule_and_no_execute_only() -> None:
    nodes = [
        node("ns", taints=[Taint("gpu", "true", "NoSchedule")]),
        node("ne", taints=[Taint("maint", "", "NoExecute")]),
        node("pref", taints=[Taint("slow", "yes", "PreferNoSchedule")]),
    ]
    tasks = [
        pod_task("none", job="j"),
        pod_task("eq", job="j", tolerations=[{"key": "gpu", "operator": "Equal", "value": "true"}]),
        pod_task("wrongvalue", job="j", tolerations=[{"key": "gpu", "value": "false"}]),
        pod_task("all", job="j", tolerations=[{"operator": "Exists"}]),
        pod_task("wrongeffect", job="j", tolerations=[{"key": "maint", "operator": "Exists", "effect": "NoSchedule"}]),
    ]
    ssn = session(CONF, nodes, tasks)
    assert check(ssn, "default/none", "ns") == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("node(s) had untolerated taint {gpu: true}",),
    )
    assert check(ssn, "default/none", "ne")[1] == ("node(s) had untolerated taint {maint: }",)
    assert check(ssn, "default/none", "pref")[0] is Code.SUCCESS
    assert check(ssn, "default/eq", "ns")[0] is Code.SUCCESS
    assert check(ssn, "default/wrongvalue", "ns")[0] is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert check(ssn, "default/all", "ns")[0] is Code.SUCCESS
    assert check(ssn, "default/all", "ne")[0] is Code.SUCCESS
    assert check(ssn, "default/wrongeffect", "ne")[0] is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_disabled_filters_pass() -> None:
    nodes = [node("n1", labels={"zone": "a"}, taints=[Taint("k", "v", "NoSchedule")])]
    tasks = [pod_task("p", job="j", node_selector={"zone": "b"})]
    ssn = session(
        conf_with(**{"predicate.NodeAffinityEnable": False, "predicate.TaintTolerationEnable": False}), nodes, tasks
    )
    assert check(ssn, "default/p", "n1") == (Code.SUCCESS, ())


# ---------------------------------------------------------------------------- pod count


def test_pod_count_is_unschedulable_and_combines_with_other_reasons() -> None:
    nodes = [node("full", pods=1, labels={"zone": "a"}), node("free", pods=2)]
    tasks = [
        pod_task("running", node="full"),
        pod_task("p", job="j"),
        pod_task("q", job="j", node_selector={"zone": "b"}),
    ]
    ssn = session(CONF, nodes, tasks)
    assert check(ssn, "default/p", "full") == (Code.UNSCHEDULABLE, ("node(s) pod number exceeded",))
    assert check(ssn, "default/p", "free")[0] is Code.SUCCESS
    assert check(ssn, "default/q", "full") == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("node(s) pod number exceeded", "node(s) didn't match Pod's node affinity/selector"),
    )
    # preempt keeps a node failing only on the pod count (evicting frees a slot).
    kept = ssn.predicate_nodes(find(ssn, "default/p"), ssn.node_list, for_preempt=True)
    assert [n.name for n in kept] == ["full", "free"]


def test_pod_count_follows_allocations_evictions_and_discards() -> None:
    nodes = [node("n1", pods=2)]
    tasks = [pod_task("old", node="n1", job="o"), pod_task("a", job="j"), pod_task("b", job="j")]
    ssn = session(CONF, nodes, tasks)
    n1 = ssn.nodes["n1"]
    a, b, old = find(ssn, "default/a"), find(ssn, "default/b"), find(ssn, "default/old")
    assert ssn.predicate(b, n1).ok
    stmt = ssn.statement()
    stmt.allocate(a, n1)
    assert ssn.predicate(b, n1).reasons == ("node(s) pod number exceeded",)
    evict = ssn.statement()
    evict.evict(old, "test")
    assert ssn.predicate(b, n1).ok, "an evicted pod no longer counts"
    evict.discard()
    assert not ssn.predicate(b, n1).ok, "undoing the eviction counts it again"
    stmt.discard()
    assert ssn.predicate(b, n1).ok


# ---------------------------------------------------------------------------- ports


def test_host_ports_conflict_by_protocol_ip_and_port() -> None:
    nodes = [node("n1"), node("n2")]
    tasks = [
        pod_task("web", node="n1", host_ports=[("TCP", "10.0.0.1", 80)]),
        pod_task("any80", job="j", host_ports=[("TCP", "0.0.0.0", 80)]),
        pod_task("other-ip", job="j", host_ports=[("TCP", "10.0.0.2", 80)]),
        pod_task("udp", job="j", host_ports=[("UDP", "0.0.0.0", 80)]),
        pod_task("same-ip", job="j", host_ports=[("TCP", "10.0.0.1", 80)]),
    ]
    ssn = session(CONF, nodes, tasks)
    assert check(ssn, "default/any80", "n1") == (
        Code.UNSCHEDULABLE,
        ("node(s) didn't have free ports for the requested pod ports",),
    )
    assert check(ssn, "default/any80", "n2")[0] is Code.SUCCESS
    assert check(ssn, "default/other-ip", "n1")[0] is Code.SUCCESS
    assert check(ssn, "default/udp", "n1")[0] is Code.SUCCESS
    assert check(ssn, "default/same-ip", "n1")[0] is Code.UNSCHEDULABLE


# ---------------------------------------------------------------------------- inter-pod affinity


def _term(key: str = HOST, **match: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": dict(match)}, "topologyKey": key}


def test_required_pod_affinity_needs_a_matching_pod_in_the_domain() -> None:
    nodes = [node("n1", labels={HOST: "n1", "zone": "a"}), node("n2", labels={HOST: "n2", "zone": "a"}), node("n3")]
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("zone", app="db")]}}
    tasks = [
        pod_task("db", node="n1", labels={"app": "db"}),
        pod_task("web", job="j", affinity=affinity),
    ]
    ssn = session(CONF, nodes, tasks)
    assert check(ssn, "default/web", "n2")[0] is Code.SUCCESS, "same zone as the db pod"
    assert check(ssn, "default/web", "n3") == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("node(s) didn't match pod affinity rules",),
    )


def test_first_pod_of_a_self_affine_group_may_go_anywhere_with_the_label() -> None:
    nodes = [node("n1", labels={"zone": "a"}), node("n2")]
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("zone", app="cache")]}}
    ssn = session(CONF, nodes, [pod_task("c1", job="j", labels={"app": "cache"}, affinity=affinity)])
    assert check(ssn, "default/c1", "n1")[0] is Code.SUCCESS
    assert check(ssn, "default/c1", "n2")[0] is Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "no topology label"


def test_anti_affinity_of_the_pod_and_of_placed_pods_is_unschedulable() -> None:
    nodes = [node("n1", labels={HOST: "n1"}), node("n2", labels={HOST: "n2"})]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(role="worker")]}}
    tasks = [
        pod_task(
            "guard",
            node="n2",
            labels={"role": "guard"},
            affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(role="worker")]}},
        ),
        pod_task("w0", node="n1", labels={"role": "worker"}),
        pod_task("w1", job="j", labels={"role": "worker"}, affinity=anti),
        pod_task("plain", job="j", labels={"role": "worker"}),
    ]
    ssn = session(CONF, nodes, tasks)
    assert check(ssn, "default/w1", "n1") == (Code.UNSCHEDULABLE, ("node(s) didn't match pod anti-affinity rules",))
    assert check(ssn, "default/plain", "n2") == (
        Code.UNSCHEDULABLE,
        ("node(s) didn't satisfy existing pods anti-affinity rules",),
    )
    assert check(ssn, "default/plain", "n1")[0] is Code.SUCCESS


def test_anti_affinity_sees_session_placements_and_their_rollback() -> None:
    nodes = [node("n1", labels={HOST: "n1"}), node("n2", labels={HOST: "n2"})]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(role="worker")]}}
    tasks = [
        pod_task("w1", job="j", labels={"role": "worker"}, affinity=anti),
        pod_task("w2", job="j", labels={"role": "worker"}, affinity=anti),
    ]
    ssn = session(CONF, nodes, tasks)
    w1, w2, n1 = find(ssn, "default/w1"), find(ssn, "default/w2"), ssn.nodes["n1"]
    assert ssn.predicate(w2, n1).ok
    stmt = ssn.statement()
    stmt.allocate(w1, n1)
    assert ssn.predicate(w2, n1).code is Code.UNSCHEDULABLE
    assert [n.name for n in ssn.predicate_nodes(w2, ssn.node_list)] == ["n2"]
    stmt.discard()
    assert ssn.predicate(w2, n1).ok


def test_placed_pods_anti_affinity_counts_only_on_nodes_listed_when_the_session_opened() -> None:
    # Volcano v1.14.1 lists the nodes holding a pod with required anti-affinity once per session:
    # such a pod placed during it on another node does not keep others away; one placed on a
    # listed node does.
    nodes = [node("n1", labels={HOST: "n1"}), node("n2", labels={HOST: "n2"})]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(role="worker")]}}
    tasks = [
        pod_task("guard0", node="n2", labels={"role": "guard"}, affinity=anti),
        pod_task("guard1", job="g", labels={"role": "guard"}, affinity=anti),
        pod_task("guard2", job="g", labels={"role": "guard"}, affinity=anti),
        pod_task("plain", job="j", labels={"role": "worker"}),
    ]
    ssn = session(CONF, nodes, tasks)
    stmt = ssn.statement()
    stmt.allocate(find(ssn, "default/guard1"), ssn.nodes["n1"])
    assert check(ssn, "default/plain", "n1")[0] is Code.SUCCESS, "n1 was not listed at open"
    stmt.discard()
    stmt = ssn.statement()
    stmt.evict(find(ssn, "default/guard0"), "test")
    stmt.allocate(find(ssn, "default/guard2"), ssn.nodes["n2"])
    assert check(ssn, "default/plain", "n2") == (
        Code.UNSCHEDULABLE,
        ("node(s) didn't satisfy existing pods anti-affinity rules",),
    ), "n2 was listed: its new guard counts"


def test_anti_affinity_follows_evictions_and_their_undo() -> None:
    # What preempt's dry runs rely on: a tentatively evicted pod stops counting for the
    # anti-affinity of the pod and of the placed pods, a pod that stays still counts.
    nodes = [node("n1", labels={HOST: "n1", "zone": "a"}), node("n2", labels={HOST: "n2", "zone": "a"})]
    anti_web = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("zone", app="web")]}}
    anti_api = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(app="api")]}}
    tasks = [
        pod_task("web1", node="n1", job="o", labels={"app": "web"}),
        pod_task("web2", node="n2", job="o", labels={"app": "web"}),
        pod_task("guard", node="n1", job="o", affinity=anti_api),
        pod_task("api", job="j", labels={"app": "api"}, affinity=anti_web),
    ]
    ssn = session(CONF, nodes, tasks)
    api, n1 = find(ssn, "default/api"), ssn.nodes["n1"]
    web1, web2, guard = find(ssn, "default/web1"), find(ssn, "default/web2"), find(ssn, "default/guard")
    stmt = ssn.statement()
    stmt.evict(web1, "test")
    stmt.evict(guard, "test")
    assert ssn.predicate(api, n1).reasons == ("node(s) didn't match pod anti-affinity rules",), "web2 stays in zone a"
    stmt.evict(web2, "test")
    assert ssn.predicate(api, n1).ok
    stmt.discard()
    assert ssn.predicate(api, n1).reasons == ("node(s) didn't match pod anti-affinity rules",)
    again = ssn.statement()
    again.evict(web1, "test")
    again.evict(web2, "test")
    assert ssn.predicate(api, n1).reasons == ("node(s) didn't satisfy existing pods anti-affinity rules",)
    again.discard()
    assert web1.status is TaskStatus.RUNNING and guard.status is TaskStatus.RUNNING


def test_namespaces_of_affinity_terms() -> None:
    nodes = [node("n1", labels={HOST: "n1"})]
    anti_same_ns = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(app="x")]}}
    anti_all_ns = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{**_term(app="x"), "namespaceSelector": {}}]
        }
    }
    anti_named = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{**_term(app="x"), "namespaces": ["other"]}]
        }
    }
    tasks = [
        pod_task("x", node="n1", namespace="other", labels={"app": "x"}),
        pod_task("same", job="j", affinity=anti_same_ns),
        pod_task("all", job="j", affinity=anti_all_ns),
        pod_task("named", job="j", affinity=anti_named),
    ]
    ssn = session(CONF, nodes, tasks)
    assert check(ssn, "default/same", "n1")[0] is Code.SUCCESS, "the term only looks at its own namespace"
    assert check(ssn, "default/all", "n1")[0] is Code.UNSCHEDULABLE
    assert check(ssn, "default/named", "n1")[0] is Code.UNSCHEDULABLE


# ---------------------------------------------------------------------------- topology spread


def test_hard_topology_spread_limits_skew_and_needs_the_label() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"}), node("x")]
    tasks = [
        pod_task("w0", node="a1", labels={"app": "web"}),
        pod_task("w1", job="j", labels={"app": "web"}, spread=spread),
        pod_task("other", job="j", labels={"app": "db"}, spread=spread),
    ]
    ssn = session(CONF, nodes, tasks)
    # zone a has 1, zone b 0: another web pod in a would make the skew 2.
    assert check(ssn, "default/w1", "a1") == (
        Code.UNSCHEDULABLE,
        ("node(s) didn't match pod topology spread constraints",),
    )
    assert check(ssn, "default/w1", "b1")[0] is Code.SUCCESS
    assert check(ssn, "default/w1", "x") == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("node(s) didn't match pod topology spread constraints (missing required label)",),
    )
    assert check(ssn, "default/other", "a1")[0] is Code.SUCCESS, "a pod the selector does not match adds no skew"
    soft = [{**spread[0], "whenUnsatisfiable": "ScheduleAnyway"}]
    ssn = session(
        CONF,
        nodes,
        [pod_task("w0", node="a1", labels={"app": "web"}), pod_task("s", job="j", labels={"app": "web"}, spread=soft)],
    )
    assert check(ssn, "default/s", "a1")[0] is Code.SUCCESS, "soft constraints do not filter"


def test_spread_min_domains_counts_missing_domains_as_empty() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "minDomains": 3,
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    tasks = [
        pod_task("w0", node="a1", labels={"app": "web"}),
        pod_task("w1", node="b1", labels={"app": "web"}),
        pod_task("w2", job="j", labels={"app": "web"}, spread=spread),
    ]
    ssn = session(CONF, nodes, tasks)
    # Two domains exist but three are wanted: the global minimum is taken as 0.
    assert check(ssn, "default/w2", "a1")[0] is Code.UNSCHEDULABLE
    ssn = session(
        CONF,
        nodes,
        [*tasks[:2], pod_task("w3", job="j", labels={"app": "web"}, spread=[{**spread[0], "minDomains": 2}])],
    )
    assert check(ssn, "default/w3", "a1")[0] is Code.SUCCESS


# ---------------------------------------------------------------------------- options


def test_cache_enable_reports_cached_failures_as_errors() -> None:
    nodes = [node("n1", labels={"zone": "a"})]
    ann = {"volcano.sh/template-uid": "job-worker"}
    tasks = [
        pod_task("w0", job="j", role="worker", annotations=ann, node_selector={"zone": "b"}),
        pod_task("w1", job="j", role="worker", annotations=ann, node_selector={"zone": "b"}),
    ]
    ssn = session(conf_with(**{"predicate.CacheEnable": True}), nodes, tasks)
    first = check(ssn, "default/w0", "n1")
    second = check(ssn, "default/w1", "n1")
    assert first == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",))
    assert second == (Code.ERROR, ("plugin equivalence cache predicates failed",))
    ssn = session(CONF, nodes, tasks)
    assert check(ssn, "default/w0", "n1") == check(ssn, "default/w1", "n1")


def test_proportional_keeps_cpu_and_memory_for_gpu_tasks() -> None:
    nodes = [node("gpu", cpu="8", memory="64Gi", scalars={"nvidia.com/gpu": "2"}), node("cpu", cpu="8", memory="64Gi")]
    args = {
        "predicate.ProportionalEnable": True,
        "predicate.resources": "nvidia.com/gpu",
        "predicate.resources.nvidia.com/gpu.cpu": 3,
        "predicate.resources.nvidia.com/gpu.memory": 8,
    }
    tasks = [
        pod_task("cpu-heavy", job="j", cpu="3", memory="1Gi"),
        pod_task("cpu-light", job="j", cpu="1", memory="1Gi"),
        pod_task("gpu-task", job="j", cpu="7", memory="1Gi", scalars={"nvidia.com/gpu": "1"}),
    ]
    ssn = session(conf_with(**args), nodes, tasks)
    # 2 idle GPUs reserve 6 cpu: 8 - 3 = 5 < 6 fails, 8 - 1 = 7 fits; GPU tasks are exempt.
    assert check(ssn, "default/cpu-heavy", "gpu") == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("proportional of resource nvidia.com/gpu check failed",),
    )
    assert check(ssn, "default/cpu-heavy", "cpu")[0] is Code.SUCCESS
    assert check(ssn, "default/cpu-light", "gpu")[0] is Code.SUCCESS
    assert check(ssn, "default/gpu-task", "gpu")[0] is Code.SUCCESS


def test_pre_predicate_rejects_unparsable_terms() -> None:
    bad = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}}
    ssn = session(CONF, [node("n1")], [pod_task("bad", job="j", affinity=bad), pod_task("ok", job="j")])
    assert ssn.pre_predicate(find(ssn, "default/bad")).code is Code.ERROR
    assert ssn.pre_predicate(find(ssn, "default/ok")).ok


# ---------------------------------------------------------------------------- batch agreement


def _mixed_cluster() -> tuple[list[Any], list[Any]]:
    nodes = [
        node("n0", labels={HOST: "n0", "zone": "a", "disk": "ssd"}, pods=2),
        node("n1", labels={HOST: "n1", "zone": "a"}, taints=[Taint("gpu", "1", "NoSchedule")]),
        node("n2", labels={HOST: "n2", "zone": "b", "disk": "ssd"}, unschedulable=True),
        node("n3", labels={HOST: "n3", "zone": "b"}, pods=1),
        node("n4", labels={HOST: "n4"}),
    ]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(app="w")]}}
    spread = [{"maxSkew": 1, "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "w"}}}]
    tasks = [
        pod_task("r0", node="n0", labels={"app": "w"}, host_ports=[("TCP", "", 8080)]),
        pod_task("r1", node="n3", labels={"app": "x"}),
        pod_task("plain", job="j"),
        pod_task("sel", job="j", node_selector={"disk": "ssd"}),
        pod_task("tol", job="j", tolerations=[{"operator": "Exists"}]),
        pod_task("port", job="j", host_ports=[("TCP", "", 8080)]),
        pod_task("anti", job="j", labels={"app": "w"}, affinity=anti),
        pod_task("spread", job="j", labels={"app": "w"}, spread=spread),
        pod_task(
            "mix",
            job="j",
            labels={"app": "w"},
            node_selector={"zone": "a"},
            affinity=anti,
            host_ports=[("TCP", "", 8080)],
            spread=spread,
        ),
    ]
    return nodes, tasks


@pytest.mark.parametrize("name", ["plain", "sel", "tol", "port", "anti", "spread", "mix"])
def test_batch_predicate_agrees_with_predicate(name: str) -> None:
    nodes, tasks = _mixed_cluster()
    ssn = session(CONF, nodes, tasks)
    plugin = ssn.plugins["predicates"]
    task = find(ssn, f"default/{name}")
    batch = plugin.batch_predicate(ssn, task, ssn.node_list)
    single = {n.name: plugin.predicate(ssn, task, n) for n in ssn.node_list}
    assert {k: v for k, v in single.items() if not v.ok} == dict(batch)
    subset = ssn.node_list[1:4]
    assert dict(plugin.batch_predicate(ssn, task, subset)) == {
        n.name: single[n.name] for n in subset if not single[n.name].ok
    }
    errors = FitErrors()
    feasible = ssn.predicate_nodes(task, ssn.node_list, fit_errors=errors)
    assert [n.name for n in feasible] == [n for n, s in single.items() if s.ok]
    assert set(errors.nodes) == {n for n, s in single.items() if not s.ok}


def test_batch_predicate_of_full_nodes_and_stable_failures() -> None:
    nodes, tasks = _mixed_cluster()
    ssn = session(CONF, nodes, tasks)
    plain = find(ssn, "default/plain")
    failures = dict(ssn.plugins["predicates"].batch_predicate(ssn, plain, ssn.node_list))
    assert failures == {
        "n1": failures["n1"],
        "n2": failures["n2"],
        "n3": failures["n3"],
    }
    assert failures["n3"].reasons == ("node(s) pod number exceeded",)
    assert failures["n3"].code is Code.UNSCHEDULABLE
    assert failures["n2"].reasons == ("node(s) were unschedulable",)
    stmt = ssn.statement()
    stmt.allocate(find(ssn, "default/tol"), ssn.nodes["n0"])
    assert "n0" in ssn.plugins["predicates"].batch_predicate(ssn, plain, ssn.node_list), "n0 is now full"


def test_terminated_status_tasks_do_not_occupy_slots() -> None:
    ssn = session(
        CONF,
        [node("n1", pods=1)],
        [pod_task("done", node="n1", status=TaskStatus.SUCCEEDED), pod_task("p", job="j")],
    )
    assert check(ssn, "default/p", "n1")[0] is Code.SUCCESS


@pytest.mark.parametrize("guard", [False, True])
@pytest.mark.parametrize("proportional", [False, True])
def test_plain_templates_get_the_pod_dependent_answer_of_the_full_computation(guard: bool, proportional: bool) -> None:
    # A template without pod terms, spread or host ports skips the pod-dependent states; the answer
    # must be the one working them out gives, with and without placed anti-affinity pods.
    nodes = [node("n1", labels={HOST: "n1", "zone": "a"}), node("n2", labels={HOST: "n2", "zone": "b"})]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(role="worker")]}}
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"role": "worker"}}}]  # fmt: skip
    tasks = [
        pod_task("plain", job="j", labels={"role": "worker"}),
        pod_task("other", job="j", labels={"role": "db"}),
        pod_task("anti", job="j", labels={"role": "worker"}, affinity=anti),
        pod_task("spread", job="j", labels={"role": "worker"}, spread=spread),
        pod_task("ports", job="j", host_ports=[("TCP", "", 8080)]),
    ]
    if guard:
        tasks.append(pod_task("guard", node="n1", job="o", labels={"role": "guard"}, affinity=anti))
    gpu = {"predicate.ProportionalEnable": True, "predicate.resources": "nvidia.com/gpu"}
    conf = conf_with(**gpu) if proportional else CONF
    ssn = session(conf, nodes, tasks)
    plugin = ssn.plugins["predicates"]
    plains = 0
    for name in ("plain", "other", "anti", "spread", "ports"):
        task = find(ssn, f"default/{name}")
        spec = plugin._spec(task)
        plains += spec.plain
        needed, affinity, spreading = plugin._dynamic_state(task, spec)
        spec.plain = False  # the full computation
        plugin._dynamic.clear()
        full = plugin._dynamic_state(task, spec)
        assert (needed, affinity is None, spreading is None) == (full[0], full[1] is None, full[2] is None), name
    assert plains == 2
