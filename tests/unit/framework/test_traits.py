"""Plugin traits: what a plugin declares next to its code, and the fast paths a configuration switches off."""

from __future__ import annotations

import logging
from typing import ClassVar

import pytest

from volcanolib import InMemoryCache, Scheduler, Traits
from volcanolib.framework.traits import CLASSES, KEPT_JOB_KEYS, SETTLED_JOBS, trait_names, traits_of

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: keyed-a
  - name: batch-scored
  - name: binpack
"""


class Older:
    job_order_key_is_local: ClassVar[bool] = True
    task_order_key_is_local: ClassVar[bool] = True


class Declared:
    traits: ClassVar[Traits] = Traits(clock_free=True, local_task_keys=True)


def test_traits_are_read_from_the_declaration_and_from_the_older_attributes() -> None:
    assert traits_of(object()) == Traits()
    assert traits_of(Older()) == Traits(local_job_keys=True, local_task_keys=True)
    assert traits_of(Declared) == Traits(clock_free=True, local_task_keys=True)
    assert trait_names(Declared, ["on_session_resume", "node_class_key"]) == [
        "clock-free",
        "local-task-keys",
        "resumes",
        "node-classes",
    ]


def test_the_fast_paths_a_configuration_switches_off_are_logged_once_naming_the_plugins(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="volcanolib.framework.traits"):
        scheduler = Scheduler(InMemoryCache(), CONF)
        scheduler.run_once()
        scheduler.run_once()
    # Third-party plugins that declare nothing: no settled jobs; both check or score nodes without a class key;
    # keyed-a's job key is not declared local.
    assert scheduler.fast_paths_off == {
        SETTLED_JOBS: ["keyed-a", "batch-scored"],
        CLASSES: ["keyed-a", "batch-scored"],
        KEPT_JOB_KEYS: ["keyed-a"],
    }
    logged = [r.message for r in caplog.records if "fast path off" in r.message]
    assert logged == [
        "fast path off: settled jobs (status_through_session), because of plugin(s) keyed-a, batch-scored",
        "fast path off: node classes (node_class_key), because of plugin(s) keyed-a, batch-scored",
        "fast path off: kept job keys (local_job_keys), because of plugin(s) keyed-a",
    ]


def test_the_shipped_default_configuration_switches_no_fast_path_off() -> None:
    assert Scheduler(InMemoryCache()).fast_paths_off == {}
