"""Tests of the teamfence plugin, written with volcanolib's test kit.

They run against the installed package: ``pip install -e .`` first, then
``python -m pytest`` in the package folder.
"""

from __future__ import annotations

import functools
import random

import pytest
from teamfence import NO_DEADLINE, TeamFenceArguments, TeamFencePlugin, parse_deadline

from volcanolib import (
    Code,
    ConfigError,
    InMemoryCache,
    PodGroup,
    PodGroupPhase,
    Registry,
    Scheduler,
    parse_arguments,
)
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session, run_session

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: teamfence
    arguments:
      teamfence.fencedTeams: [interns]
- plugins:
  - name: binpack
"""


def fenced_cluster() -> FakeCache:
    """Two shared nodes and one node open to the interns."""
    cache = FakeCache()
    cache.add_node(build_node("shared-1", cpu="4"))
    cache.add_node(build_node("shared-2", cpu="4"))
    cache.add_node(build_node("sandbox", cpu="4", labels={"example.com/teams": "interns, qa"}))
    return cache


def plugin(**arguments: object) -> TeamFencePlugin:
    return TeamFencePlugin(parse_arguments(TeamFenceArguments, arguments, owner="plugin 'teamfence'"))


# ---------------------------------------------------------------------- discovery and arguments


def test_the_plugin_is_found_through_its_entry_point() -> None:
    provider = Registry().plugins()["teamfence"]
    assert provider.distribution == "volcanolib-example-teamfence"
    assert provider.load() is TeamFencePlugin


def test_defaults() -> None:
    fence = plugin()
    assert fence.team_label == "team"
    assert fence.node_label == "example.com/teams"
    assert fence.deadline_annotation == "example.com/deadline"
    assert fence.fenced_teams == frozenset()


@pytest.mark.parametrize("value", [["interns", "qa"], "interns, qa", ("qa", "interns")])
def test_fenced_teams_as_a_list_or_a_string(value: object) -> None:
    assert plugin(**{"teamfence.fencedTeams": value}).fenced_teams == {"interns", "qa"}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("teamfence.teamLabel", 7, "expected a string, got 7"),
        ("teamfence.nodeLabel", "  ", "must not be empty"),
        ("teamfence.deadlineAnnotation", ["a"], "expected a string"),
        ("teamfence.fencedTeams", 3, "expected a list of team names or a comma-separated string, got 3"),
        ("teamfence.fencedTeams", ["interns", 5], "expected a list of team names"),
        ("teamfence.fencedTeams", "interns,,qa", "expected a list of team names"),
    ],
)
def test_bad_arguments_name_the_key(key: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        plugin(**{key: value})
    assert info.value.key == f"plugin 'teamfence' arguments.{key}"


def test_a_configuration_with_a_bad_argument_is_refused_with_its_source() -> None:
    bad = CONF.replace("[interns]", "{interns: true}")
    with pytest.raises(ConfigError, match=r"plugin 'teamfence' arguments\.teamfence\.fencedTeams"):
        Scheduler(InMemoryCache(), bad)


# ---------------------------------------------------------------------- fence


def test_fenced_team_lands_only_on_a_node_open_to_it() -> None:
    cache = fenced_cluster()
    cache.add_pod_group(build_pod_group("study", min_member=2))
    for i in range(2):
        cache.add_task(build_task(f"study-{i}", job="study", cpu="1", labels={"team": "interns"}))
    result = run_session(cache, CONF)
    assert {node for _, node in result.binds} == {"sandbox"}
    assert cache.bound == {"default/study-0": "sandbox", "default/study-1": "sandbox"}


def test_other_teams_may_use_any_node() -> None:
    cache = fenced_cluster()
    cache.add_pod_group(build_pod_group("web", min_member=3))
    for i in range(3):
        cache.add_task(build_task(f"web-{i}", job="web", cpu="4", labels={"team": "platform"}))
    run_session(cache, CONF)
    assert sorted(cache.bound.values()) == ["sandbox", "shared-1", "shared-2"]


def test_a_fenced_gang_that_outgrows_its_nodes_waits_whole() -> None:
    cache = fenced_cluster()
    cache.add_pod_group(build_pod_group("big", min_member=2))
    for i in range(2):
        cache.add_task(build_task(f"big-{i}", job="big", cpu="3", labels={"team": "interns"}))
    result = run_session(cache, CONF)
    assert result.binds == ()
    assert result.session is not None
    job = result.session.jobs["default/big"]
    assert "1/2 tasks in gang unschedulable" in job.job_fit_errors
    # The second task found no node: the sandbox is full and the fence closes the others.
    (why,) = (errors.error() for errors in job.nodes_fit_errors.values())
    assert why == "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) not open to team interns."


def test_the_team_may_come_from_the_pod_group() -> None:
    cache = fenced_cluster()
    cache.add_pod_group(PodGroup("study", labels={"team": "interns"}, phase=PodGroupPhase.INQUEUE))
    cache.add_task(build_task("study-0", job="study", cpu="1"))
    run_session(cache, CONF)
    assert cache.bound == {"default/study-0": "sandbox"}


def test_predicate_status_and_batch_predicate_agree() -> None:
    cache = fenced_cluster()
    cache.add_pod_group(build_pod_group("study"))
    cache.add_task(build_task("study-0", job="study", labels={"team": "interns"}))
    cache.add_task(build_task("free-0", job="study", labels={"team": "platform"}))
    ssn = open_session(cache, CONF)
    try:
        fence = ssn.plugins["teamfence"]
        nodes = ssn.node_list
        job = ssn.jobs["default/study"]
        intern = next(t for t in job.tasks.values() if t.name == "study-0")
        other = next(t for t in job.tasks.values() if t.name == "free-0")

        status = fence.predicate(ssn, intern, ssn.nodes["shared-1"])
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ("node(s) not open to team interns",)
        assert fence.predicate(ssn, intern, ssn.nodes["sandbox"]).ok
        assert set(fence.batch_predicate(ssn, intern, nodes)) == {"shared-1", "shared-2"}
        assert fence.batch_predicate(ssn, other, nodes) == {}
        # Through the session, the failure is attributed to the plugin by its configured name.
        assert ssn.predicate(intern, ssn.nodes["shared-2"]).plugin == "teamfence"
    finally:
        ssn.close()


def test_label_keys_are_configurable() -> None:
    conf = CONF.replace(
        "teamfence.fencedTeams: [interns]",
        "{teamfence.fencedTeams: gpu-guests, teamfence.teamLabel: org, teamfence.nodeLabel: guests}",
    )
    cache = InMemoryCache()
    cache.add_node(build_node("a", labels={"example.com/teams": "gpu-guests"}))
    cache.add_node(build_node("b", labels={"guests": "gpu-guests"}))
    cache.add_pod_group(build_pod_group("job"))
    cache.add_task(build_task("job-0", job="job", labels={"org": "gpu-guests"}))
    result = run_session(cache, conf)
    assert [node for _, node in result.binds] == ["b"]


# ---------------------------------------------------------------------- deadline order


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1970-01-01T00:01:00Z", 60.0),
        ("1970-01-01T00:01:00", 60.0),
        ("1970-01-01T01:01:00+01:00", 60.0),
        ("", NO_DEADLINE),
        (None, NO_DEADLINE),
        ("soon", NO_DEADLINE),
    ],
)
def test_parse_deadline(raw: str | None, expected: float) -> None:
    assert parse_deadline(raw) == expected


def deadline_cluster(deadlines: dict[str, str | None]) -> InMemoryCache:
    """One node with room for one job; one single-task job per entry, created in dict order."""
    cache = InMemoryCache()
    cache.add_node(build_node("only", cpu="2"))
    for created, (name, deadline) in enumerate(deadlines.items()):
        annotations = {"example.com/deadline": deadline} if deadline else {}
        cache.add_pod_group(build_pod_group(name, annotations=annotations, creation_timestamp=created))
        cache.add_task(build_task(f"{name}-0", job=name, cpu="2"))
    return cache


def test_the_earliest_deadline_goes_first() -> None:
    cache = deadline_cluster(
        {"undated": None, "friday": "2030-01-04T17:00:00Z", "monday": "2029-12-31T09:00:00Z"},
    )
    result = run_session(cache, CONF)
    assert [task.name for task, _ in result.binds] == ["monday-0"]


def test_jobs_without_a_deadline_keep_the_default_order() -> None:
    cache = deadline_cluster({"first": None, "second": None})
    result = run_session(cache, CONF)
    assert [task.name for task, _ in result.binds] == ["first-0"]


def test_job_order_and_job_order_key_agree() -> None:
    rng = random.Random(7)
    choices = [None, "garbage", "2030-01-01T00:00:00Z", "2030-01-01T00:00:00+02:00", "2030-06-01T12:00:00"]
    cache = deadline_cluster({f"job{i}": rng.choice(choices) for i in range(30)})
    ssn = open_session(cache, CONF)
    try:
        fence = ssn.plugins["teamfence"]
        jobs = list(ssn.jobs.values())
        for left in jobs:
            for right in jobs:
                by_key = (fence.job_order_key(ssn, left) > fence.job_order_key(ssn, right)) - (
                    fence.job_order_key(ssn, left) < fence.job_order_key(ssn, right)
                )
                assert fence.job_order(ssn, left, right) == by_key
        by_cmp = sorted(jobs, key=functools.cmp_to_key(lambda a, b: fence.job_order(ssn, a, b)))
        keys = [fence.job_order_key(ssn, job) for job in by_cmp]
        assert keys == sorted(keys)
    finally:
        ssn.close()
