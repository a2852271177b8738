"""Every combination rule, through real sessions and plugins installed from a separate package."""

from __future__ import annotations

from typing import Any

import pytest
import vl_thirdparty

from volcanolib import Code, PluginError, hookimpl
from volcanolib.framework.session import Session
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    vl_thirdparty.Scripted.calls.clear()


def conf(*tiers: list[tuple[str, dict[str, Any]]], switches: dict[str, dict[str, bool]] | None = None) -> str:
    import yaml

    out: dict[str, Any] = {"actions": "", "tiers": []}
    for tier in tiers:
        plugins = []
        for name, args in tier:
            entry: dict[str, Any] = {"name": name, "arguments": {"label": name, **args}}
            entry.update((switches or {}).get(name, {}))
            plugins.append(entry)
        out["tiers"].append({"plugins": plugins})
    return yaml.safe_dump(out)


def session(text: str, nodes: int = 3) -> Session:
    cache = FakeCache()
    for i in range(nodes):
        cache.add_node(build_node(f"n{i}"))
    for name, ts in (("alpha", 2.0), ("beta", 1.0)):
        cache.add_pod_group(build_pod_group(name, creation_timestamp=ts))
        cache.add_task(build_task(f"{name}-t-0", job=name))
    return open_session(cache, text)


def jobs(ssn: Session) -> tuple[Any, Any]:
    return ssn.jobs["default/alpha"], ssn.jobs["default/beta"]


# --------------------------------------------------------------------------- orders


def test_first_nonzero_in_tier_order() -> None:
    ssn = session(
        conf([("scripted-a", {}), ("scripted-b", {"order": "name-desc"})], [("scripted-c", {"order": "name"})])
    )
    alpha, beta = jobs(ssn)
    assert ssn.compare_jobs(alpha, beta) > 0  # b decides: descending names, beta first
    assert ssn.compare_jobs(beta, alpha) < 0


def test_order_falls_back_to_creation_time_then_uid() -> None:
    ssn = session(conf([("scripted-a", {})]))
    alpha, beta = jobs(ssn)
    assert ssn.compare_jobs(beta, alpha) < 0  # beta was created earlier
    beta.creation_timestamp = alpha.creation_timestamp
    assert ssn.compare_jobs(alpha, beta) < 0  # equal times: smaller uid


def test_switch_off_skips_a_plugin() -> None:
    text = conf(
        [("scripted-a", {"order": "name-desc"})],
        [("scripted-b", {"order": "name"})],
        switches={"scripted-a": {"enableJobOrder": False}},
    )
    ssn = session(text)
    alpha, beta = jobs(ssn)
    assert ssn.compare_jobs(alpha, beta) < 0


def test_keys_compose_in_tier_order() -> None:
    # keyed-a abstains (constant key), keyed-b gives a descending key
    ssn = session(conf([("keyed-a", {})], [("keyed-b", {"order": "name-desc"})]))
    alpha, beta = jobs(ssn)
    assert isinstance(ssn.job_key(alpha), tuple)
    assert ssn.job_key(beta) < ssn.job_key(alpha)
    assert ssn.compare_jobs(beta, alpha) < 0


def test_keys_and_comparators_mix_in_tier_order() -> None:
    mixed = session(conf([("keyed-a", {"order": "name-desc"}), ("scripted-b", {"order": "name"})]))
    alpha, beta = jobs(mixed)
    assert mixed.compare_jobs(beta, alpha) < 0
    assert sorted([alpha, beta], key=mixed.job_key) == [beta, alpha]
    later = session(conf([("keyed-a", {})], [("scripted-b", {"order": "name-desc"})]))
    alpha, beta = jobs(later)
    assert sorted([alpha, beta], key=later.job_key) == [beta, alpha]


# --------------------------------------------------------------------------- predicates and scores


def test_all_pass_returns_first_failure_with_plugin_name() -> None:
    ssn = session(conf([("scripted-a", {"fail": ["n1"]})], [("scripted-b", {"unresolvable": ["n1", "n2"]})]))
    task = next(iter(jobs(ssn)[0].tasks.values()))
    assert ssn.predicate(task, ssn.nodes["n0"]).ok
    first = ssn.predicate(task, ssn.nodes["n1"])
    assert first.plugin == "scripted-a" and first.code is Code.UNSCHEDULABLE
    assert ssn.predicate(task, ssn.nodes["n2"]).plugin == "scripted-b"


def test_predicate_nodes_for_allocate_and_for_preempt() -> None:
    from volcanolib.api.fiterrors import FitErrors

    ssn = session(conf([("scripted-a", {"fail": ["n1"]})], [("scripted-b", {"unresolvable": ["n1", "n2"]})]))
    task = next(iter(jobs(ssn)[0].tasks.values()))
    errors = FitErrors(total_nodes=3)
    assert [n.name for n in ssn.predicate_nodes(task, ssn.node_list, fit_errors=errors)] == ["n0"]
    assert errors.error() == "0/3 nodes are available: 1 scripted-a refuses n1, 1 scripted-b refuses n2."
    # for preemption a plain Unschedulable keeps the node (evicting may help) and ends its checks
    assert [n.name for n in ssn.predicate_nodes(task, ssn.node_list, for_preempt=True)] == ["n0", "n1"]


def test_scores_are_summed_over_single_and_batch_plugins() -> None:
    ssn = session(
        conf(
            [("scripted-a", {"scores": {"n0": 10, "n1": 5}})],
            [("batch-scored", {"scores": {"n1": 7, "n2": 1}})],
        )
    )
    task = next(iter(jobs(ssn)[0].tasks.values()))
    assert ssn.node_scores(task, ssn.node_list) == {"n0": 10.0, "n1": 12.0, "n2": 1.0}
    assert ssn.best_node(task, ssn.node_list) is ssn.nodes["n1"]
    assert ssn.node_order(task, ssn.nodes["n2"]) == 1.0


# --------------------------------------------------------------------------- victims


def victim_session(*tiers: list[tuple[str, dict[str, Any]]]) -> tuple[Session, Any, list[Any]]:
    cache = FakeCache()
    cache.add_node(build_node("n0"))
    cache.add_pod_group(build_pod_group("run"))
    for name in ("t1", "t2", "t3"):
        cache.add_task(build_task(name, job="run", node="n0"))
    cache.add_pod_group(build_pod_group("want"))
    cache.add_task(build_task("p", job="want"))
    ssn = open_session(cache, conf(*tiers))
    run = ssn.jobs["default/run"]
    candidates = sorted(run.tasks.values(), key=lambda t: t.name)
    return ssn, ssn.jobs["default/want"].tasks["default-p"], candidates


def names(tasks: Any) -> Any:
    return None if tasks is None else [t.name for t in tasks]


def test_intersection_within_a_tier_decides() -> None:
    ssn, p, cands = victim_session(
        [("scripted-a", {"victims": ["t1", "t2"]}), ("scripted-b", {"victims": ["t2", "t3"]})],
        [("scripted-c", {"victims": ["t3"]})],
    )
    assert names(ssn.preemptable(p, cands)) == ["t2"]


def test_empty_list_ends_the_tier_and_the_next_tier_starts_afresh() -> None:
    ssn, p, cands = victim_session(
        [("scripted-a", {"victims": "none"}), ("scripted-b", {"victims": ["t1"]})],
        [("scripted-c", {"victims": ["t3"]})],
    )
    assert names(ssn.preemptable(p, cands)) == ["t3"]
    # scripted-b was not consulted once scripted-a ended its tier
    assert ("scripted-b", "preemptable") not in vl_thirdparty.Scripted.calls


def test_abstaining_tier_falls_through() -> None:
    ssn, p, cands = victim_session([("scripted-a", {}), ("scripted-b", {})], [("scripted-c", {"victims": ["t2"]})])
    assert names(ssn.preemptable(p, cands)) == ["t2"]


def test_empty_intersection_falls_through_to_a_fresh_tier() -> None:
    ssn, p, cands = victim_session(
        [("scripted-a", {"victims": ["t1"]}), ("scripted-b", {"victims": ["t3"]})],
        [("scripted-c", {"victims": ["t2", "t3"]})],
    )
    assert names(ssn.preemptable(p, cands)) == ["t2", "t3"]


def test_empty_intersection_lets_the_next_plugin_of_the_tier_start_afresh() -> None:
    # Volcano v1.14.1 keeps an empty intersection as a nil list, which the next plugin of the same
    # tier treats as "no list yet": its own list is taken whole.
    ssn, p, cands = victim_session(
        [("scripted-a", {"victims": ["t1"]}), ("scripted-b", {"victims": ["t3"]}), ("scripted-c", {"victims": ["t2"]})],
        [("scripted-d", {"victims": ["t1", "t3"]})],
    )
    assert names(ssn.preemptable(p, cands)) == ["t2"]
    assert names(ssn.reclaimable(p, cands)) == ["t2"]
    # and the lists after the restart are intersected again
    ssn, p, cands = victim_session(
        [
            ("scripted-a", {"victims": ["t1"]}),
            ("scripted-b", {"victims": ["t3"]}),
            ("scripted-c", {"victims": ["t2", "t3"]}),
            ("scripted-d", {"victims": ["t3", "t1"]}),
        ],
    )
    assert names(ssn.preemptable(p, cands)) == ["t3"]


def test_no_tier_with_victims_gives_none() -> None:
    ssn, p, cands = victim_session([("scripted-a", {"victims": "none"})], [("scripted-b", {})])
    assert ssn.preemptable(p, cands) is None
    ssn, p, cands = victim_session([("scripted-a", {"victims": ["t1"]})])
    assert ssn.reclaimable is not ssn.preemptable
    assert names(ssn.reclaimable(p, cands)) == ["t1"]


def test_switch_gates_victim_hooks() -> None:
    text = conf([("scripted-a", {"victims": ["t1"]}), ("scripted-b", {"victims": ["t2"]})])
    import yaml

    data = yaml.safe_load(text)
    data["tiers"][0]["plugins"][1]["enablePreemptable"] = False
    cache_ssn, p, cands = victim_session([("scripted-a", {"victims": ["t1"]})])
    del cache_ssn
    ssn, p, cands = victim_session([("scripted-a", {"victims": ["t1"]}), ("scripted-b", {"victims": ["t2"]})])
    assert ssn.preemptable(p, cands) is None  # empty intersection in the only tier
    cache = FakeCache()
    cache.add_node(build_node("n0"))
    cache.add_pod_group(build_pod_group("run"))
    for name in ("t1", "t2"):
        cache.add_task(build_task(name, job="run", node="n0"))
    gated = open_session(cache, yaml.safe_dump(data))
    run = sorted(gated.jobs["default/run"].tasks.values(), key=lambda t: t.name)
    assert names(gated.preemptable(run[0], run)) == ["t1"]


# --------------------------------------------------------------------------- votes and booleans


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        ([[("scripted-a", {}), ("scripted-b", {"vote": "permit"})], [("scripted-c", {"vote": "reject"})]], True),
        ([[("scripted-a", {}), ("scripted-b", {})], [("scripted-c", {"vote": "reject"})]], False),
        ([[("scripted-a", {"vote": "permit"}), ("scripted-b", {"vote": "reject"})]], False),
        ([[("scripted-a", {})], [("scripted-b", {})]], True),
        ([[("scripted-a", {})], [("scripted-b", {"vote": "permit"}), ("scripted-c", {})]], True),
    ],
)
def test_votes_per_tier(tiers: list[list[tuple[str, dict[str, Any]]]], expected: bool) -> None:
    ssn = session(conf(*tiers))
    alpha, _ = jobs(ssn)
    assert ssn.job_pipelined(alpha) is expected
    assert ssn.job_enqueueable(alpha) is expected


def test_starving_first_tier_with_an_implementation_decides() -> None:
    text = conf(
        [("scripted-a", {"starving": True}), ("scripted-b", {"starving": False})],
        [("scripted-c", {"starving": True})],
    )
    alpha, _ = jobs(s := session(text))
    assert s.job_starving(alpha) is False
    gated = conf(
        [("scripted-a", {"starving": False})],
        [("scripted-c", {"starving": True})],
        switches={"scripted-a": {"enableJobStarving": False}},
    )
    alpha, _ = jobs(s := session(gated))
    assert s.job_starving(alpha) is True


def test_boolean_rules() -> None:
    ssn = session(
        conf(
            [("scripted-a", {"overused": False, "allocatable": True, "ready": True})],
            [("scripted-b", {"overused": True, "allocatable": False, "ready": False, "valid": False})],
        )
    )
    alpha, _ = jobs(ssn)
    queue = ssn.queues["default"]
    task = next(iter(alpha.tasks.values()))
    assert ssn.overused(queue) is True
    assert ssn.allocatable(queue, task) is False
    assert ssn.job_ready(alpha) is False
    status = ssn.job_valid(alpha)
    assert not status.ok and status.plugin == "scripted-b" and status.reasons[0] == "NotValid"


def test_no_implementation_means_the_documented_default() -> None:
    ssn = session("actions: ''\ntiers: []\n")
    alpha, _ = jobs(ssn)
    assert ssn.job_ready(alpha) and ssn.job_pipelined(alpha) and ssn.job_enqueueable(alpha)
    assert not ssn.job_starving(alpha) and not ssn.overused(ssn.queues["default"])
    assert ssn.job_valid(alpha).ok


def test_hooks_are_called_in_tier_order() -> None:
    session(conf([("scripted-b", {}), ("scripted-a", {})], [("scripted-d", {}), ("scripted-c", {})]))
    opened = [p for p, hook in vl_thirdparty.Scripted.calls if hook == "on_session_open"]
    assert opened == ["scripted-b", "scripted-a", "scripted-d", "scripted-c"]


def test_a_raising_plugin_is_reported_by_name_and_hook() -> None:
    ssn = session(conf([("scripted-a", {}), ("scripted-b", {"raiseIn": "job_ready"})]))
    alpha, _ = jobs(ssn)
    with pytest.raises(PluginError) as info:
        ssn.job_ready(alpha)
    assert info.value.plugin == "scripted-b" and info.value.hook == "job_ready"


# --------------------------------------------------------------------------- guards caught in the rule loop


def _tables(fns: dict[str, Any], arity: int) -> tuple[Any, Any]:
    """The same implementations as a guarded table and as one whose entries are not plain guards."""
    from volcanolib.framework.combine import guard

    plain = (tuple((name, guard(name, "hook", fn, "ssn", arity=arity)) for name, fn in fns.items()),)
    wrapped = tuple(tuple((name, lambda *args, _fn=fn: _fn(*args)) for name, fn in tier) for tier in plain)
    return plain, wrapped


def _outcome(call: Any, *args: Any) -> Any:
    try:
        return ("ok", call(*args))
    except PluginError as err:
        cause = err.__cause__
        return ("error", err.plugin, err.hook, type(cause).__name__, str(cause))


@pytest.mark.parametrize("failing", [(), ("b",), ("a", "c")])
def test_notifications_catch_in_the_loop_as_the_guard_does(failing: tuple[str, ...]) -> None:
    from volcanolib.framework.combine import call_all

    def make(name: str, seen: list[str]) -> Any:
        def on_event(ssn: str, event: object) -> None:
            seen.append(f"{name}:{ssn}:{event}")
            if name in failing:
                raise ValueError(f"{name} failed")

        return on_event

    from volcanolib.framework.combine import _unguarded

    plain, wrapped = _tables({"a": make("a", [])}, 1)
    assert _unguarded(plain[0], 1) is not None and _unguarded(wrapped[0], 1) is None
    assert _unguarded(plain[0], 2) is None
    results = []
    for pick in (0, 1):
        seen: list[str] = []
        table = _tables({n: make(n, seen) for n in "abc"}, 1)[pick]
        results.append((_outcome(call_all(table), "e"), seen))
    assert results[0] == results[1]
    assert results[0][1] == ["a:ssn:e", "b:ssn:e", "c:ssn:e"]
    if failing:
        assert results[0][0] == ("error", failing[0], "hook", "ValueError", f"{failing[0]} failed")


@pytest.mark.parametrize("failing", [None, "a", "b"])
def test_victim_intersection_catches_in_the_loop_as_the_guard_does(failing: str | None) -> None:
    from volcanolib.framework.combine import intersect_per_tier

    answers: dict[str, Any] = {"a": [1, 2, 3], "b": [3, 2], "c": None, "d": []}

    def make(name: str) -> Any:
        def victims(ssn: str, actor: object, candidates: list[int]) -> Any:
            if name == failing:
                raise KeyError(name)
            return answers[name]

        return victims

    for first_tier in (("a", "b"), ("c",), ("d", "a")):
        outcomes = []
        for pick in (0, 1):
            tier1 = _tables({n: make(n) for n in first_tier}, 2)[pick][0]
            tier2 = _tables({"b": make("b")}, 2)[pick][0]
            outcomes.append(_outcome(intersect_per_tier((tier1, tier2)), "actor", [1, 2, 3]))
        assert outcomes[0] == outcomes[1]


class _Exact:
    """A plugin whose hooks take the session first, so that the session's rules may call them directly."""

    name = "exact"

    def __init__(self, arguments: Any) -> None:
        pass

    @hookimpl
    def on_allocate(self, ssn: Any, event: Any) -> None:
        pass

    @hookimpl
    def preemptable(self, ssn: Any, preemptor: Any, preemptees: Any) -> Any:
        return list(preemptees)


def test_traced_events_and_victim_hooks_stay_traced(monkeypatch: pytest.MonkeyPatch, caplog: Any) -> None:
    # Tracing wraps the guards (functools.wraps copies their attributes); the rules that call guarded
    # functions directly must still go through it.
    import logging

    from volcanolib import Registry
    from volcanolib.framework.dispatch import TRACE_ENV

    monkeypatch.setenv(TRACE_ENV, "1")
    cache = FakeCache()
    cache.add_node(build_node("n0"))
    cache.add_pod_group(build_pod_group("run"))
    cache.add_task(build_task("t1", job="run", node="n0"))
    ssn = open_session(
        cache,
        "actions: ''\ntiers:\n- plugins:\n  - name: exact\n  - name: exact2\n",
        registry=Registry(plugins={"exact": _Exact, "exact2": _Exact}),
    )
    task = ssn.jobs["default/run"].tasks["default-t1"]
    with caplog.at_level(logging.DEBUG, logger="volcanolib.trace"):
        assert ssn.preemptable(task, [task]) == [task]
        ssn._fire_allocate(task)
    traced = [r.getMessage().split("(")[0] for r in caplog.records if r.name == "volcanolib.trace"]
    assert traced == ["exact.preemptable", "exact2.preemptable", "exact.on_allocate", "exact2.on_allocate"]
