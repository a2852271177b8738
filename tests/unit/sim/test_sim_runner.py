"""The scenario runner: loading, sessions, the end-of-scenario state, results."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from volcanolib import ConfigError, ManifestError, PodGroupPhase, Registry
from volcanolib.sim import check_scenario, load_scenario, run_scenario, simulate
from volcanolib.sim.report import to_json

Objects = dict[str, Callable[..., dict[str, Any]]]
Write = Callable[..., Path]

CONF = {"actions": "firstfit", "tiers": [{"plugins": [{"name": "scorer", "arguments": {"scores": {"n2": 5}}}]}]}


def scenario(objects: Objects, *extra: dict[str, Any], conf: Any = CONF, **keys: Any) -> dict[str, Any]:
    o = objects
    base = [o["node"]("n1"), o["node"]("n2"), o["group"]("pg1", 2), o["pod"]("p1", "pg1"), o["pod"]("p2", "pg1")]
    data: dict[str, Any] = {"name": "test", "objects": base + list(extra)}
    if conf is not None:
        data["scheduler"] = conf
    data.update(keys)
    return data


def test_binds_phases_and_json(objects: Objects, write: Write, registry: Registry) -> None:
    path = write(scenario(objects))
    result = simulate([path], registry=registry)
    assert result.binds == {"ns1/p1": "n1", "ns1/p2": "n1"}
    report = result.pod_groups["ns1/pg1"]
    # bound pods start running once the scenario ends, so the group is Running
    assert (report.phase, report.scheduled, report.min_member, report.queue) == (PodGroupPhase.RUNNING, 2, 2, "default")
    assert report.allocated.milli_cpu == 2000
    data = json.loads(to_json(result))
    assert data == {
        "binds": {"ns1/p1": "n1", "ns1/p2": "n1"},
        "evictions": [],
        "pipelined": {},
        "podGroups": {"ns1/pg1": {"minMember": 2, "phase": "Running", "scheduled": 2}},
        "sessions": 1,
        "unschedulable": {},
    }
    assert list(result.timings) == [
        "load",
        "cache",
        "scheduler",
        "snapshot",
        "open",
        "firstfit",
        "close",
        "session",
        "bookkeeping",
        "total",
    ]
    assert set(json.loads(to_json(result, timings=True))["timings"]) == set(result.timings)


def test_the_timed_phases_add_up_to_the_total(objects: Objects, write: Write, registry: Registry) -> None:
    path = write(scenario(objects, sessions=3))
    result = simulate([path], registry=registry)
    t = result.timings
    phases = ("load", "cache", "scheduler", "session", "bookkeeping")
    assert all(t[name] > 0 for name in phases)
    assert t["total"] == pytest.approx(sum(t[name] for name in phases), rel=1e-9)
    # the parts of the sessions are inside the sessions
    parts = sum(t[name] for name in ("snapshot", "open", "firstfit", "close"))
    assert 0 < parts <= t["session"]


def test_json_is_identical_across_runs(objects: Objects, write: Write, registry: Registry) -> None:
    path = write(scenario(objects, objects["pod"]("p3", "pg1", cpu="9")))
    first = to_json(simulate([path], registry=registry))
    second = to_json(simulate([path], registry=registry))
    assert first == second
    assert '"ns1/pg1": "0/2 nodes are available: 2 Insufficient cpu."' in first


def test_sessions_complete_binds_and_evictions_in_between(objects: Objects, write: Write, registry: Registry) -> None:
    o = objects
    conf = {"actions": "evictmarked, firstfit", "tiers": []}
    running = o["pod"]("old", "pg0", labels={"evict": "yes"}, nodeName="n1", status={"phase": "Running"})
    data = scenario(o, o["group"]("pg0", 1, "Running"), running, conf=conf, sessions=2)
    result = simulate([write(data)], registry=registry)
    assert result.evictions == ["ns1/old"]
    assert result.binds == {"ns1/p1": "n1", "ns1/p2": "n1"}
    assert len(result.cycles) == 2
    # the evicted pod is not scheduled once Releasing: its group drops to Pending in the first session, and
    # the second, without an enqueue action, admits it (Inqueue), with nothing left to place
    assert [c.session.jobs["ns1/pg0"].pod_group.phase for c in result.cycles if c.session is not None] == [
        PodGroupPhase.PENDING,
        PodGroupPhase.INQUEUE,
    ]
    assert result.pod_groups["ns1/pg0"].phase is PodGroupPhase.INQUEUE
    assert result.pod_groups["ns1/pg0"].scheduled == 0
    assert result.cache.get_task("ns1-old") is None


def test_a_loaded_scenario_can_run_again(objects: Objects, write: Write, registry: Registry) -> None:
    # Binds, evictions and phase changes happen on the cache's copies: the loaded cluster stays as it was.
    o = objects
    conf = {"actions": "evictmarked, firstfit", "tiers": []}
    running = o["pod"]("old", "pg0", labels={"evict": "yes"}, nodeName="n1", status={"phase": "Running"})
    loaded = load_scenario([write(scenario(o, o["group"]("pg0", 1, "Running"), running, conf=conf, sessions=2))])
    before = [(task.key, task.status, task.node_name) for task in loaded.cluster.tasks]
    phases = [pg.phase for pg in loaded.cluster.pod_groups]
    first = run_scenario(loaded, registry=registry)
    assert first.evictions == ["ns1/old"] and len(first.binds) == 2
    assert [(task.key, task.status, task.node_name) for task in loaded.cluster.tasks] == before
    assert [pg.phase for pg in loaded.cluster.pod_groups] == phases
    second = run_scenario(loaded, registry=registry)
    assert to_json(second) == to_json(first)


def test_sessions_option_overrides_the_scenario(objects: Objects, write: Write, registry: Registry) -> None:
    path = write(scenario(objects, sessions=3))
    assert simulate([path], registry=registry).sessions == 3
    assert simulate([path], registry=registry, sessions=1).sessions == 1
    with pytest.raises(ManifestError, match="at least 1"):
        load_scenario([path], sessions=0)


def test_pipelined_pods_of_the_last_session(objects: Objects, write: Write, registry: Registry) -> None:
    result = simulate([write(scenario(objects, conf={"actions": "pipelinelast", "tiers": []}))], registry=registry)
    assert result.pipelined == {"ns1/p1": "n2", "ns1/p2": "n2"}
    assert result.binds == {}
    assert result.pod_groups["ns1/pg1"].phase is PodGroupPhase.INQUEUE


def test_node_scores_are_taken_at_the_first_session_open(objects: Objects, write: Write, registry: Registry) -> None:
    data = scenario(objects, expect={"nodeScores": {"ns1/p1": {"n1": 0, "n2": 5}}})
    sc = load_scenario([write(data)])
    result = run_scenario(sc, registry=registry)
    assert result.node_scores == {"ns1/p1": {"n1": 0.0, "n2": 5.0}}
    assert run_scenario(sc, registry=registry, score_pods=["ns1/p2"]).node_scores == {"ns1/p2": {"n1": 0.0, "n2": 5.0}}


def test_session_hook_sees_every_open_session(objects: Objects, write: Write, registry: Registry) -> None:
    seen: list[tuple[int, int]] = []
    sc = load_scenario([write(scenario(objects, sessions=2))])
    run_scenario(sc, registry=registry, on_session_open=lambda i, ssn: seen.append((i, len(ssn.node_list))))
    assert seen == [(0, 2), (1, 2)]


def test_unschedulable_reasons(objects: Objects, write: Write, registry: Registry) -> None:
    o = objects
    data = scenario(
        o,
        o["group"]("pg2", 1, queue="nowhere"),
        o["pod"]("q1", "pg2"),
        o["pod"]("lost", "ghost"),
        o["group"]("big", 1),
        o["pod"]("huge", "big", cpu="64"),
    )
    result = simulate([write(data)], registry=registry)
    assert result.unschedulable == {
        "ns1/big": "0/2 nodes are available: 2 Insufficient cpu.",
        "ns1/ghost": "PodGroup ns1/ghost does not exist",
        "ns1/pg2": "queue 'nowhere' of PodGroup ns1/pg2 does not exist",
    }
    assert result.pod_groups["ns1/pg2"].phase is PodGroupPhase.INQUEUE


def test_plugin_errors_are_reported_not_raised(objects: Objects, write: Write, registry: Registry) -> None:
    conf = {"actions": "firstfit", "tiers": [{"plugins": [{"name": "broken"}]}]}
    result = simulate([write(scenario(objects, conf=conf))], registry=registry)
    assert result.plugin_errors and "boom" in result.plugin_errors[0]
    assert "pluginErrors" in result.to_dict()


def test_files_are_merged_in_order(objects: Objects, write: Write, registry: Registry) -> None:
    o = objects
    cluster = write({"objects": [o["node"]("n1"), o["node"]("n2")], "scheduler": CONF, "schedulerName": "volcano"})
    jobs = write("\n---\n".join(json.dumps(x) for x in (o["group"]("pg1", 1), o["pod"]("p1", "pg1"))))
    result = simulate([cluster, jobs], registry=registry)
    assert result.binds == {"ns1/p1": "n1"}
    assert result.scenario.sources == (str(cluster), str(jobs))
    assert result.scenario.name == f"{cluster.name}, {jobs.name}"


def test_at_most_one_scheduler_block(objects: Objects, write: Write) -> None:
    first = write({"objects": [], "scheduler": CONF})
    second = write({"objects": [], "scheduler": CONF})
    with pytest.raises(ManifestError) as info:
        load_scenario([first, second])
    assert str(info.value) == f"{second}: scheduler: a second 'scheduler' block (the first is in {first})"


def test_conflicting_settings_are_an_error(write: Write) -> None:
    first = write({"objects": [], "schedulerName": "a"})
    second = write({"objects": [], "schedulerName": "b"})
    with pytest.raises(ManifestError, match="schedulerName: 'b' differs from 'a'"):
        load_scenario([first, second])


def test_conf_file_overrides_the_scheduler_block(
    objects: Objects, write: Write, tmp_path: Path, registry: Registry
) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('actions: "pipelinelast"\ntiers: []\n')
    path = write(scenario(objects))
    sc = load_scenario([path], conf=conf)
    assert sc.config.actions == ("pipelinelast",)
    assert run_scenario(sc, registry=registry).pipelined


def test_scheduler_block_may_be_text(objects: Objects, write: Write) -> None:
    sc = load_scenario([write(scenario(objects, conf='actions: "firstfit"\ntiers: []\n'))])
    assert sc.config.actions == ("firstfit",)
    assert sc.config.source is not None and sc.config.source.endswith(": scheduler")


def test_default_configuration_without_a_scheduler_block(objects: Objects, write: Write) -> None:
    sc = load_scenario([write(scenario(objects, conf=None))])
    assert sc.config.actions == ("enqueue", "allocate", "backfill")


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        ({"objects": "nope"}, ManifestError, "objects: expected a list of Kubernetes objects"),
        ({"name": "x"}, ManifestError, "not a scenario (no 'objects' key) nor a Kubernetes object (no 'kind')"),
        ({"objects": [], "sessions": 0}, ManifestError, "sessions: expected a positive integer, got 0"),
        ({"objects": [], "scheduler": 5}, ConfigError, "scheduler: expected volcano-scheduler.conf text or a mapping"),
        ({"objects": [], "scheduler": {"actions": "allocate", "tiers": "x"}}, ConfigError, "tiers: expected a list"),
        (
            {"objects": [], "expect": {"bindcount": 1}},
            ManifestError,
            "expect: bindcount: unknown key 'bindcount' (did you mean 'bindCount'?)",
        ),
    ],
)
def test_bad_scenarios(write: Write, data: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        load_scenario([write(data)])
    assert message in str(info.value)


def test_unknown_scenario_keys_are_warnings(write: Write) -> None:
    sc = load_scenario([write({"objects": [], "expcet": {}})])
    assert any("unknown scenario key 'expcet' (did you mean 'expect'?)" in w for w in sc.warnings)


def test_unknown_plugin_is_a_config_error_naming_installed_ones(objects: Objects, write: Write) -> None:
    sc = load_scenario(
        [write(scenario(objects, conf={"actions": "allocate", "tiers": [{"plugins": [{"name": "gnag"}]}]}))]
    )
    with pytest.raises(
        ConfigError, match=r"unknown plugin 'gnag' \(did you mean 'gang'\?\); installed plugins: .*gang"
    ):
        run_scenario(sc)


def test_check_outcomes(objects: Objects, write: Write, registry: Registry) -> None:
    good = write(
        scenario(objects, expect={"binds": {"ns1/p1": "n1", "ns1/p2": "n1"}, "podGroupPhases": {"ns1/pg1": "Running"}})
    )
    bad = write(scenario(objects, expect={"binds": {"ns1/p1": "n2"}, "bindCount": 1}))
    plain = write(scenario(objects))
    broken = write("objects: [")
    assert check_scenario(good, registry=registry).ok
    outcome = check_scenario(bad, registry=registry)
    assert outcome.differences == (
        "binds: ns1/p1 expected on n2, bound to n1",
        "binds: ns1/p2 bound to n1, not expected",
        "bindCount: expected 1, got 2",
    )
    empty = check_scenario(plain, registry=registry)
    assert not empty.ok and not empty.bad_input and "no 'expect' block" in (empty.error or "")
    invalid = check_scenario(broken, registry=registry)
    assert invalid.bad_input and "not valid YAML" in (invalid.error or "")


def test_clock_starts_after_the_newest_object(objects: Objects, write: Write, registry: Registry) -> None:
    o = objects
    late = o["pod"]("p9", "pg1")
    late["metadata"]["creationTimestamp"] = "2024-05-01T10:00:00Z"
    seen: list[float] = []
    sc = load_scenario([write(scenario(o, late, sessions=2))])
    run_scenario(sc, registry=registry, on_session_open=lambda i, ssn: seen.append(ssn.clock()))
    assert seen == [1714557601.0, 1714557602.0]


def test_a_group_enqueue_refuses_is_reported_so(objects: Objects, write: Write) -> None:
    o = objects
    conf = {"actions": "enqueue", "tiers": [{"plugins": [{"name": "scripted-a", "arguments": {"vote": "reject"}}]}]}
    group = o["group"]("pg9", 1, "Pending")
    group["spec"]["minResources"] = {"cpu": "1"}
    result = simulate([write(scenario(o, group, o["pod"]("p9", "pg9"), conf=conf))])
    assert result.unschedulable["ns1/pg9"] == "the PodGroup is still Pending: enqueue did not admit it"
    assert result.pod_groups["ns1/pg9"].phase is PodGroupPhase.PENDING
    assert result.pod_groups["ns1/pg1"].phase is PodGroupPhase.INQUEUE


def test_binds_that_did_not_take_effect_are_left_out_with_a_warning(
    objects: Objects, write: Write, registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    scenario_ = load_scenario([write(scenario(objects))])

    def node_goes(index: int, ssn: Any) -> None:  # the node leaves the cluster after the snapshot
        ssn.cache.delete_node("n1")

    with caplog.at_level(logging.WARNING, logger="volcanolib"):
        result = run_scenario(scenario_, registry=registry, on_session_open=node_goes)
    assert result.binds == {}
    assert [(t.key, node, why) for t, node, why in result.cycles[0].failed_binds] == [
        ("ns1/p1", "n1", "task or node no longer exists"),
        ("ns1/p2", "n1", "task or node no longer exists"),
    ]
    assert (
        "session 1: binding ns1/p1 to n1 did not take effect (task or node no longer exists), nor 1 more bind"
        in caplog.messages
    )
