"""Tests of the inorder action, written with volcanolib's test kit.

They run against the installed package: ``pip install -e .`` first, then
``python -m pytest`` in the package folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from inorder import InOrder, InOrderArguments

from volcanolib import ConfigError, Registry, Resource, Scheduler, argument_table, load_config
from volcanolib.sim import simulate
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_queue, build_task, run_session

HERE = Path(__file__).resolve().parents[1]
CONF = """
actions: "inorder"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: proportion
  - name: binpack
configurations:
- name: inorder
  arguments:
    inorder.lookahead: {lookahead}
"""


def conf(lookahead: int = 0) -> str:
    """The test configuration: inorder alone, with the given lookahead."""
    return CONF.format(lookahead=lookahead)


def add_job(cache: FakeCache, name: str, pods: int, cpu: str, *, created: float, queue: str = "default") -> None:
    """A gang of ``pods`` pods asking ``cpu`` each, every pod needed."""
    cache.add_pod_group(build_pod_group(name, min_member=pods, queue=queue, creation_timestamp=created))
    for i in range(pods):
        cache.add_task(build_task(f"{name}-{i}", job=name, cpu=cpu, creation_timestamp=created))


def two_nodes() -> FakeCache:
    cache = FakeCache()
    cache.add_queue(build_queue("default"))
    cache.add_node(build_node("node-1", cpu="4", memory="16Gi"))
    cache.add_node(build_node("node-2", cpu="4", memory="16Gi"))
    return cache


# ---------------------------------------------------------------------- discovery and configuration


def test_the_action_is_found_through_its_entry_point() -> None:
    provider = Registry().actions()["inorder"]
    assert provider.distribution == "volcanolib-example-inorder"
    assert provider.load() is InOrder


def test_the_example_configuration_names_the_action_and_sets_its_argument() -> None:
    config = load_config(HERE / "volcano-scheduler.conf")
    scheduler = Scheduler(FakeCache(), config)
    assert [action.name for action in scheduler.host.actions] == ["enqueue", "inorder", "backfill"]
    inorder = scheduler.host.actions[1]
    assert isinstance(inorder, InOrder) and inorder.arguments.lookahead == 1


def test_the_arguments_are_declared() -> None:
    assert InOrder().arguments.lookahead == 0
    assert argument_table(InOrderArguments).splitlines()[2] == (
        "| `inorder.lookahead` | int | `0` | How many jobs behind a blocked job of the same queue may still be tried. |"
    )


@pytest.mark.parametrize(
    ("value", "message"), [(-1, "must be 0 or more, got -1"), ("two", "expected an integer, got 'two'")]
)
def test_a_bad_lookahead_refuses_the_configuration(value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        Scheduler(FakeCache(), CONF.format(lookahead=value))
    assert info.value.key == "action 'inorder' arguments.inorder.lookahead"


# ---------------------------------------------------------------------- the example cluster


def test_the_example_cluster_starts_only_the_job_within_the_lookahead() -> None:
    result = simulate([HERE / "cluster.yaml"], conf=HERE / "volcano-scheduler.conf")
    assert list(result.binds) == ["ml/lint-0"]
    assert result.pod_groups["ml/train"].scheduled == 0


def test_allocate_would_let_the_small_jobs_pass_the_gang() -> None:
    result = simulate([HERE / "cluster.yaml"])  # the default configuration
    assert sorted(result.binds) == ["ml/lint-0", "ml/test-0"]


# ---------------------------------------------------------------------- placement


def test_jobs_that_fit_are_placed_whole_in_order() -> None:
    cache = two_nodes()
    add_job(cache, "first", 2, "3", created=0)
    add_job(cache, "second", 2, "1", created=1)
    result = run_session(cache, conf())
    assert result.plugin_errors == ()
    assert sorted(cache.bound) == ["default/first-0", "default/first-1", "default/second-0", "default/second-1"]
    assert {cache.bound["default/first-0"], cache.bound["default/first-1"]} == {"node-1", "node-2"}


@pytest.mark.parametrize(
    ("lookahead", "bound"), [(0, []), (1, ["default/small-0"]), (5, ["default/small-0", "default/tiny-0"])]
)
def test_a_blocked_job_holds_back_all_but_the_lookahead(lookahead: int, bound: list[str]) -> None:
    cache = two_nodes()
    add_job(cache, "big", 3, "4", created=0)  # 12 cpus on a cluster of 8: cannot be placed
    add_job(cache, "small", 1, "1", created=1)
    add_job(cache, "tiny", 1, "1", created=2)
    run_session(cache, conf(lookahead))
    assert sorted(cache.bound) == bound


def test_a_job_that_cannot_be_placed_whole_leaves_every_node_as_it_was() -> None:
    cache = two_nodes()
    add_job(cache, "big", 3, "4", created=0)
    result = run_session(cache, conf())
    assert cache.bound == {}
    assert result.session is not None
    for node in result.session.node_list:
        assert node.tasks == {} and node.idle.milli_cpu == 4000


def test_each_queue_has_its_own_line() -> None:
    cache = two_nodes()
    cache.add_queue(build_queue("other"))
    add_job(cache, "big", 3, "4", created=0)
    add_job(cache, "small", 1, "1", created=1)
    add_job(cache, "elsewhere", 1, "1", created=2, queue="other")
    run_session(cache, conf())
    assert sorted(cache.bound) == ["default/elsewhere-0"]


def test_a_queue_never_takes_more_than_its_capability() -> None:
    cache = FakeCache()
    cache.add_queue(build_queue("capped", capability=Resource.from_list({"cpu": "2"})))
    cache.add_node(build_node("node-1", cpu="8", memory="16Gi"))
    add_job(cache, "wide", 3, "1", created=0, queue="capped")  # 3 cpus > the queue's 2
    add_job(cache, "narrow", 2, "1", created=1, queue="capped")
    run_session(cache, conf(lookahead=1))
    assert sorted(cache.bound) == ["default/narrow-0", "default/narrow-1"]
