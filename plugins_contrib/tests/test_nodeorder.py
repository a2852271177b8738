"""nodeorder: the Kubernetes score formulas, weights, normalisation and batch / per-node agreement."""

from __future__ import annotations

import math
from typing import Any

import pytest
from contrib_testkit import GI, find, node, pod_task, random_moves, session

from volcanolib.api.node import Taint

NAMES = (
    "leastrequested",
    "mostrequested",
    "balancedresource",
    "nodeaffinity",
    "podaffinity",
    "tainttoleration",
    "imagelocality",
    "podtopologyspread",
)
MIB = 1024 * 1024


def only(**weights: int) -> str:
    """A configuration with nodeorder alone, every weight 0 except the given ones."""
    args = {f"{name}.weight": weights.get(name, 0) for name in NAMES}
    body = ", ".join(f"{k}: {v}" for k, v in args.items())
    return f"""
actions: ""
tiers:
- plugins:
  - name: nodeorder
    arguments: {{{body}}}
"""


def preferred_pod_term(kind: str, weight: int, app: str) -> dict[str, Any]:
    """An affinity with one preferred ``kind`` (podAffinity, podAntiAffinity) term on ``app`` pods by zone."""
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "zone"}
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": weight, "podAffinityTerm": term}]}}


def scores(ssn: Any, key: str) -> dict[str, float]:
    return ssn.node_scores(find(ssn, key), ssn.node_list)


def test_default_weights_of_the_current_release() -> None:
    conf = """
actions: ""
tiers:
- plugins:
  - name: nodeorder
"""
    ssn = session(conf, [node("n1")], [pod_task("p", job="j")])
    assert ssn.plugins["nodeorder"].weights == {
        "leastrequested.weight": 1,
        "mostrequested.weight": 0,
        "balancedresource.weight": 1,
        "nodeaffinity.weight": 2,
        "podaffinity.weight": 2,
        "tainttoleration.weight": 3,
        "imagelocality.weight": 1,
        "podtopologyspread.weight": 2,
    }
    # 1 cpu / 1Gi on 4 cpu / 8Gi: least (75*50 + 87*50)//100 = 81, balanced |0.25-0.125|/2 -> 93, taints 100*3.
    assert scores(ssn, "default/p") == {"n1": 81 + 93 + 300}


def test_least_allocated_counts_existing_pods_and_request_defaults() -> None:
    nodes = [node("n1", "4", "8Gi"), node("n2", "2", "4Gi")]
    tasks = [
        pod_task("old", node="n1", cpu="1", memory="2Gi"),
        pod_task("best-effort-old", node="n2", cpu=None, memory=None),
        pod_task("p", job="j", cpu="1", memory="1Gi"),
        pod_task("be", job="j", cpu=None, memory=None),
    ]
    ssn = session(only(leastrequested=2), nodes, tasks)
    # n1: cpu (4000-2000)*100//4000 = 50, memory (8-3)/8 -> 62; (50*50 + 62*50)//100 = 56, x2.
    # n2: the best-effort pod counts 100m / 200Mi: cpu (2000-1100)*100//2000 = 45,
    #     memory (4096-1024-200)Mi*100//4096Mi = 70; (45+70)//2 = 57, x2.
    assert scores(ssn, "default/p") == {"n1": 112, "n2": 114}
    # A best-effort task is scored as asking 100m / 200Mi.
    be_n1 = ((4000 - 1100) * 100 // 4000 * 50 + (8 * GI - 2 * GI - 200 * MIB) * 100 // (8 * GI) * 50) // 100
    assert scores(ssn, "default/be")["n1"] == 2 * be_n1


def test_most_allocated_caps_requests_at_capacity() -> None:
    nodes = [node("n1", "4", "8Gi"), node("n2", "1", "8Gi")]
    tasks = [pod_task("old", node="n1", cpu="1", memory="2Gi"), pod_task("p", job="j", cpu="2", memory="2Gi")]
    ssn = session(only(mostrequested=1), nodes, tasks)
    # n1: cpu 3000*100//4000 = 75, memory 4/8 -> 50: 62. n2: cpu over capacity counts as full (100), memory 25: 62.
    assert scores(ssn, "default/p") == {"n1": 62, "n2": 62}


def test_balanced_allocation_with_two_and_three_resources() -> None:
    gpu = {"nvidia.com/gpu": "4"}
    nodes = [node("n1", "2", "2Gi"), node("n2", "4", "2Gi"), node("g", "4", "4Gi", scalars=gpu)]
    tasks = [
        pod_task("p", job="j", cpu="1", memory="1Gi"),
        pod_task("gp", job="j", cpu="1", memory="2Gi", scalars={"nvidia.com/gpu": "3"}),
        pod_task("be", job="j", cpu=None, memory=None),
    ]
    ssn = session(only(balancedresource=10), nodes, tasks)
    assert scores(ssn, "default/p")["n1"] == 1000
    assert scores(ssn, "default/p")["n2"] == 870  # fractions 0.25 / 0.5
    fractions = [0.25, 0.5, 0.75]
    mean = sum(fractions) / 3
    std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / 3)
    assert scores(ssn, "default/gp")["g"] == int((1 - std) * 100) * 10
    # n1 has no GPU: only cpu 0.5 and memory 1.0 count -> std 0.25.
    assert scores(ssn, "default/gp")["n1"] == 750
    assert scores(ssn, "default/be") == {"n1": 0, "n2": 0, "g": 0}, "best-effort tasks skip the plugin"


def test_node_affinity_preferred_terms_are_summed_not_normalised() -> None:
    """Volcano v1.14.1 adds the Kubernetes NodeAffinity score node by node, without its normalisation."""
    pref = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 2, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
                {"weight": 3, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}},
            ]
        }
    }
    nodes = [
        node("both", labels={"zone": "a", "ssd": "1"}),
        node("zone", labels={"zone": "a"}),
        node("none"),
    ]
    ssn = session(only(nodeaffinity=2), nodes, [pod_task("p", job="j", affinity=pref), pod_task("q", job="j")])
    assert scores(ssn, "default/p") == {"both": 10, "zone": 4, "none": 0}
    # The score of a node does not depend on the other candidates.
    assert ssn.node_scores(find(ssn, "default/p"), [ssn.nodes["zone"], ssn.nodes["none"]]) == {"zone": 4, "none": 0}
    assert scores(ssn, "default/q") == {"both": 0, "zone": 0, "none": 0}


def test_taint_toleration_counts_prefer_no_schedule_reversed() -> None:
    nodes = [
        node("clean"),
        node("one", taints=[Taint("a", "1", "PreferNoSchedule")]),
        node("two", taints=[Taint("a", "1", "PreferNoSchedule"), Taint("b", "2", "PreferNoSchedule")]),
        node("hard", taints=[Taint("c", "3", "NoSchedule")]),
    ]
    tasks = [
        pod_task("p", job="j"),
        pod_task("tolerant", job="j", tolerations=[{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}]),
    ]
    ssn = session(only(tainttoleration=3), nodes, tasks)
    assert scores(ssn, "default/p") == {"clean": 300, "one": 150, "two": 0, "hard": 300}
    assert scores(ssn, "default/tolerant") == {"clean": 300, "one": 300, "two": 0, "hard": 300}
    ssn = session(only(tainttoleration=3), [node("x"), node("y")], [pod_task("p", job="j")])
    assert scores(ssn, "default/p") == {"x": 300, "y": 300}


def test_pod_affinity_preferred_terms_by_topology() -> None:
    nodes = [
        node("a1", labels={"zone": "a"}),
        node("a2", labels={"zone": "a"}),
        node("b1", labels={"zone": "b"}),
    ]
    pref = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"},
                }
            ]
        },
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 4,
                    "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"},
                }
            ]
        },
    }
    tasks = [
        pod_task("db", node="a1", labels={"app": "db"}),
        pod_task("web", node="b1", labels={"app": "web"}),
        pod_task("p", job="j", affinity=pref),
        pod_task("q", job="j"),
    ]
    ssn = session(only(podaffinity=2), nodes, tasks)
    # zone a: +10, zone b: -4 -> min-max over candidates: a 100, b 0.
    assert scores(ssn, "default/p") == {"a1": 200, "a2": 200, "b1": 0}
    assert scores(ssn, "default/q") == {"a1": 0, "a2": 0, "b1": 0}, "nothing applies: skipped"


def test_existing_pods_preferred_affinity_attracts_the_task() -> None:
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    likes_web = preferred_pod_term("podAffinity", 5, "web")
    tasks = [
        pod_task("cache", node="b1", labels={"app": "cache"}, affinity=likes_web),
        pod_task("w", job="j", labels={"app": "web"}),
    ]
    ssn = session(only(podaffinity=1), nodes, tasks)
    assert scores(ssn, "default/w") == {"a1": 0, "b1": 100}


def test_pods_with_affinity_placed_this_session_score_only_tasks_with_terms_of_their_own() -> None:
    """Volcano lists the nodes holding pods with affinity once, when the session opens: a task without
    preferred terms of its own does not see a pod with affinity placed since then on another node."""
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    likes_web = preferred_pod_term("podAffinity", 5, "web")
    avoids_db = preferred_pod_term("podAntiAffinity", 1, "db")
    tasks = [
        pod_task("cache", job="c", labels={"app": "cache"}, affinity=likes_web),
        pod_task("w", job="j", labels={"app": "web"}),
        pod_task("w2", job="k", labels={"app": "web"}, affinity=avoids_db),
    ]
    ssn = session(only(podaffinity=1), nodes, tasks)
    ssn.allocate(find(ssn, "default/cache"), ssn.nodes["b1"])
    assert scores(ssn, "default/w") == {"a1": 0, "b1": 0}
    assert scores(ssn, "default/w2") == {"a1": 0, "b1": 100}


def test_soft_topology_spread_prefers_the_emptier_domain() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    nodes = [
        node("a1", labels={"zone": "a"}),
        node("a2", labels={"zone": "a"}),
        node("b1", labels={"zone": "b"}),
        node("x"),
    ]
    tasks = [
        pod_task("w0", node="a1", labels={"app": "web"}),
        pod_task("w1", node="a2", labels={"app": "web"}),
        pod_task("p", job="j", labels={"app": "web"}, spread=spread),
    ]
    ssn = session(only(podtopologyspread=2), nodes, tasks)
    # 2 domains -> weight log(4); zone a: round(2*log 4) = 3, zone b: 0; normalised (3+0-s)*100//3.
    assert scores(ssn, "default/p") == {"a1": 0, "a2": 0, "b1": 200, "x": 0}


def test_image_locality() -> None:
    size = 500 * MIB
    nodes = [node("has", images={"nginx:1.25": size, "redis:latest": 2000 * MIB}), node("bare")]
    tasks = [
        pod_task("p", job="j", images=["nginx:1.25"]),
        pod_task("r", job="j", images=["redis"]),
        pod_task("none", job="j"),
    ]
    ssn = session(only(imagelocality=1), nodes, tasks)
    # 500Mi present on 1 of 2 nodes scales to 250Mi: 100 * (250 - 23) // (1000 - 23).
    assert scores(ssn, "default/p") == {"has": 100 * (250 - 23) // (1000 - 23), "bare": 0}
    # ``redis`` means ``redis:latest``; 1000Mi after scaling reaches the per-container cap.
    assert scores(ssn, "default/r") == {"has": 100, "bare": 0}
    assert scores(ssn, "default/none") == {"has": 0, "bare": 0}


def test_scores_follow_session_placements_and_discards() -> None:
    ssn = session(
        only(leastrequested=1),
        [node("n1", "4", "8Gi"), node("n2", "4", "8Gi")],
        [pod_task("a", job="j", cpu="2", memory="4Gi"), pod_task("b", job="j", cpu="1", memory="1Gi")],
    )
    a, b = find(ssn, "default/a"), find(ssn, "default/b")
    before = scores(ssn, "default/b")
    assert before["n1"] == before["n2"]
    stmt = ssn.statement()
    stmt.allocate(a, ssn.nodes["n1"])
    after = ssn.node_scores(b, ssn.node_list)
    assert after["n1"] < after["n2"]
    assert after["n1"] == ((4000 - 3000) * 100 // 4000 * 50 + (8 * GI - 5 * GI) * 100 // (8 * GI) * 50) // 100
    stmt.discard()
    assert ssn.node_scores(b, ssn.node_list) == before


@pytest.mark.parametrize(
    "weights",
    [
        {"leastrequested": 1, "balancedresource": 1},
        {"mostrequested": 3, "imagelocality": 2},
        {"leastrequested": 1, "tainttoleration": 3},
    ],
)
def test_batch_and_per_node_scores_agree_for_per_node_plugins(weights: dict[str, int]) -> None:
    nodes = [
        node("n1", "4", "8Gi", images={"app:v1": 800 * MIB}),
        node("n2", "8", "8Gi"),
        node("n3", "2", "16Gi", images={"app:v1": 800 * MIB}),
    ]
    tasks = [
        pod_task("old", node="n2", cpu="3", memory="1Gi"),
        pod_task("p", job="j", cpu="1", memory="3Gi", images=["app:v1"]),
    ]
    ssn = session(only(**weights), nodes, tasks)
    task = find(ssn, "default/p")
    batch = ssn.node_scores(task, ssn.node_list)
    assert {n.name: ssn.node_order(task, n) for n in ssn.node_list} == batch
    assert len(set(batch.values())) > 1, "the nodes score differently"


def test_normalised_scores_depend_on_the_candidate_set() -> None:
    nodes = [node("clean"), node("one", taints=[Taint("a", "1", "PreferNoSchedule")])]
    ssn = session(only(tainttoleration=1), nodes, [pod_task("p", job="j")])
    task = find(ssn, "default/p")
    assert ssn.node_scores(task, ssn.node_list) == {"clean": 100, "one": 0}
    assert ssn.node_order(task, ssn.nodes["one"]) == 0, "alone, its one taint is still the maximum"


def test_zero_weights_give_no_opinion() -> None:
    ssn = session(only(), [node("n1"), node("n2", "8", "1Gi")], [pod_task("p", job="j")])
    assert scores(ssn, "default/p") == {"n1": 0, "n2": 0}


def test_most_allocated_prefers_the_fuller_node() -> None:
    nodes = [node("n1", "2", "4Gi", pods=10), node("n2", "4", "8Gi", pods=10)]
    ssn = session(only(mostrequested=1), nodes, [pod_task("p1", job="j", cpu="1", memory="1G")])
    # n1: cpu 50, memory 10^9 * 100 // 4Gi = 23 -> 36; n2: 25 and 11 -> 18.
    assert scores(ssn, "default/p1") == {"n1": 36, "n2": 18}


def test_node_request_sums_stay_exact_whenever_they_are_first_read() -> None:
    import random

    from volcanolib_contrib._nodepods import Usage

    from volcanolib.api.task import TaskStatus

    rng = random.Random(9)
    nodes = [node(f"n{i}", "64", "256Gi", scalars={"nvidia.com/gpu": "8"}) for i in range(6)]
    tasks = []
    for i in range(30):
        placed = rng.random() < 0.5
        gpu = {"nvidia.com/gpu": str(rng.randint(1, 2))} if rng.random() < 0.3 else None
        cpu = None if rng.random() < 0.1 else f"{rng.randint(1, 4)}"
        tasks.append(
            pod_task(
                f"t{i}",
                job=f"j{i % 5}",
                node=f"n{rng.randrange(6)}" if placed else "",
                status=TaskStatus.RUNNING if placed else None,
                cpu=cpu,
                scalars=gpu,
            )
        )
    ssn = session(only(leastrequested=1, balancedresource=1), nodes, tasks)
    pods = ssn.plugins["nodeorder"]._pods
    all_tasks = [t for job in ssn.jobs.values() for t in job.tasks.values()]

    def count_early() -> None:
        if rng.random() < 0.3:
            pods.usage(rng.choice(ssn.node_list).name)  # some nodes are counted early

    for _ in range(8):
        stmt = random_moves(ssn, rng, all_tasks, 6, after_move=count_early)
        if rng.random() < 0.4:
            stmt.discard()
        else:
            stmt.commit()
    for n in ssn.node_list:
        recount = Usage()
        for task in pods.pods(n):
            recount.apply(task, 1)
        kept = pods.usage(n.name)
        assert (kept.cpu, kept.memory, kept.nz_cpu, kept.nz_memory) == (
            recount.cpu,
            recount.memory,
            recount.nz_cpu,
            recount.nz_memory,
        )
        assert {k: v for k, v in kept.scalars.items() if v} == {k: v for k, v in recount.scalars.items() if v}


def test_node_class_key_only_for_tasks_without_preferred_pod_affinity() -> None:
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    near = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
    prefers = preferred_pod_term("podAffinity", 5, "web")
    requires = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
            ]
        }
    }
    tasks = [
        pod_task("plain", job="j"),
        pod_task("near", job="j", affinity=near),
        pod_task("prefers", job="j", affinity=prefers),
        pod_task("requires", job="j", affinity=requires),
    ]
    ssn = session(only(podaffinity=1), nodes, tasks)
    plugin = ssn.plugins["nodeorder"]
    keys = {
        name: plugin.node_class_key(ssn, find(ssn, f"default/{name}"))
        for name in ("plain", "near", "prefers", "requires")
    }
    # Only preferred pod (anti-)affinity terms score against other nodes' pods; required ones do not score.
    assert keys["prefers"] is None
    assert keys["plain"] is not None and keys["near"] is not None and keys["requires"] is not None
    assert keys["plain"].token == keys["near"].token == keys["requires"].token


def test_counting_a_node_s_pods_at_once_adds_as_pod_by_pod() -> None:
    import random

    from volcanolib_contrib._nodepods import Usage

    from volcanolib.api.resource import Resource
    from volcanolib.api.task import TaskInfo

    rng = random.Random(4)
    amounts = [0, 0.5, 1, 250, 2**53, float("inf")]
    for _ in range(200):
        tasks = []
        for i in range(rng.randrange(6)):
            scalars = {"pods": 1}
            if rng.random() < 0.4:
                scalars["example.com/gpu"] = rng.choice(amounts)
            req = Resource(rng.choice(amounts), rng.choice(amounts), scalars)
            tasks.append(TaskInfo(f"u{i}", f"t{i}", "default", "", req))
        one_by_one, at_once = Usage(), Usage()
        for task in tasks:
            one_by_one.apply(task, 1)
        at_once.add_all(tasks)
        state = [(u.cpu, u.memory, u.nz_cpu, u.nz_memory, u.scalars, u.exact) for u in (one_by_one, at_once)]
        assert state[0] == state[1]


def test_pods_with_affinity_are_found_as_when_every_task_is_asked() -> None:
    from volcanolib_contrib._nodepods import pods_where

    from volcanolib.api.task import TaskStatus

    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    near = {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term}]}
    }
    nodes = [node("n1"), node("n2")]
    tasks = [
        pod_task("a", job="j", node="n1", status=TaskStatus.RUNNING, affinity=anti),
        pod_task("b", job="j", node="n1", status=TaskStatus.RUNNING),
        pod_task("c", job="j", node="n2", status=TaskStatus.RUNNING, affinity=near),
        pod_task("d", job="j", node="n2", status=TaskStatus.RUNNING, affinity={}),
    ]
    ssn = session(only(podaffinity=1) + "  - name: predicates\n", nodes, tasks)
    for wanted in (ssn.plugins["nodeorder"]._has_affinity, ssn.plugins["predicates"]._has_required_anti):
        every = pods_where(ssn.node_list, wanted)
        assert pods_where(ssn.node_list, wanted, affinity_only=True) == every
        assert list(every) and len(every) < 4
