"""Hooks declare their rule and switch as data; the hook list, the switches and the session derive from it."""

from __future__ import annotations

import inspect
from typing import Any

import pluggy
import pytest
import vl_thirdparty

from volcanolib import PluginConfigError, PluginError, Registry, Scheduler, hookimpl, parse_config
from volcanolib.framework import combine, hookspecs
from volcanolib.framework._answers import HookAnswers
from volcanolib.framework.compiled import _BUILT
from volcanolib.framework.config import HOOK_SWITCHES, KNOWN_SWITCHES
from volcanolib.framework.dispatch import compile_tables
from volcanolib.framework.hookspecs import HOOK_NAMES, SPECS
from volcanolib.framework.registry import PluginHost
from volcanolib.framework.session import Session
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

#: Orders whose key form and tie-break the session compiles from the declarations.
ORDERS = {"job_order", "job_order_key", "queue_order", "queue_order_key", "task_order", "task_order_key"}
#: Hooks the session combines by hand with more than their own table: the victim queue order with the queue
#: order, node checks and scores with their batch forms, node class keys with the plugins that must answer.
BUILT_BY_HAND = {
    "victim_queue_order",
    "predicate",
    "batch_predicate",
    "node_order",
    "batch_node_order",
    "node_class_key",
    "on_session_open",
    "on_session_resume",
    "on_session_close",
}
#: Hooks whose rule has a builder but which the session calls plugin by plugin, timing each plugin:
#: on_session_resume stands in for on_session_open, in the same tier order, for the plugins that may resume.
RESUMED = {"on_session_open", "on_session_resume", "on_session_close"}


def test_every_pluggy_spec_is_declared_with_the_same_arguments() -> None:
    pm = pluggy.PluginManager(hookspecs.NAME)
    pm.add_hookspecs(hookspecs)
    marked = {name for name, _ in inspect.getmembers(hookspecs) if hasattr(_, f"{hookspecs.NAME}_spec")}
    assert marked == set(SPECS) == set(HOOK_NAMES)
    for name, spec in SPECS.items():
        assert tuple(getattr(pm.hook, name).spec.argnames) == spec.argnames, name
        assert spec.argnames[0] == "ssn", name


def test_faster_forms_name_a_hook_with_the_same_rule_and_switch() -> None:
    forms = {spec.name: spec.form_of for spec in SPECS.values() if spec.form_of}
    assert forms == {
        "job_order_key": "job_order",
        "queue_order_key": "queue_order",
        "task_order_key": "task_order",
        "batch_predicate": "predicate",
        "batch_node_order": "node_order",
    }
    for fast, slow in forms.items():
        assert (SPECS[fast].rule, SPECS[fast].switch) == (SPECS[slow].rule, SPECS[slow].switch), fast


def test_the_switch_table_is_the_declared_switches() -> None:
    assert dict(HOOK_SWITCHES) == {s.name: s.switch for s in SPECS.values() if s.switch is not None}
    assert set(HOOK_SWITCHES.values()) <= KNOWN_SWITCHES
    assert HOOK_SWITCHES["predicate"] == "enablePredicate"
    assert "job_valid" not in HOOK_SWITCHES


def test_each_docstring_ends_with_the_declared_rule_and_switch() -> None:
    for name, spec in SPECS.items():
        doc = inspect.getdoc(getattr(hookspecs, name)) or ""
        assert doc.endswith(spec.summary()), name
        assert f"Rule: ``{spec.rule.value}``" in doc, name
        gate = f"Switch: ``{spec.switch}``." if spec.switch else "Not gated by a switch."
        assert doc.endswith(gate), name


def test_every_declared_switch_takes_a_plugin_out_of_its_hooks() -> None:
    gated = ", ".join(f"{switch}: false" for switch in sorted(set(HOOK_SWITCHES.values())))
    config = parse_config(f"actions: ''\ntiers:\n- plugins:\n  - {{name: scripted-a, {gated}}}\n  - name: scripted-b\n")
    tables = compile_tables(PluginHost(config))
    implemented = set(vl_thirdparty.Scripted.__dict__) & set(SPECS)
    assert implemented >= {"predicate", "job_ready", "preemptable", "job_valid", "on_session_open"}
    for hook in implemented:
        plugins = [c.plugin for tier in tables[hook] for c in tier]
        expected = ["scripted-b"] if hook in HOOK_SWITCHES else ["scripted-a", "scripted-b"]
        assert plugins == expected, hook


def test_the_session_builds_every_hook_from_its_rule() -> None:
    by_loop = {
        s.name
        for s in SPECS.values()
        if s.rule in combine.BUILDERS and s.form_of is None and s.name not in {t.form_of for t in SPECS.values()}
    } - RESUMED
    # A new hook is either built from its declaration or handled by hand on purpose.
    assert by_loop | ORDERS | BUILT_BY_HAND == set(SPECS)
    assert not by_loop & BUILT_BY_HAND and not by_loop & ORDERS
    assert set(_BUILT.values()) == by_loop
    ssn = open_session(FakeCache(), "actions: ''\ntiers: []\n")
    annotated = set(inspect.get_annotations(HookAnswers))
    for name in by_loop | ORDERS:
        attribute = SPECS[name].attribute
        assert attribute is not None and attribute in annotated, f"no typed answer declared for {name}"
        assert callable(getattr(ssn, attribute)), name


def _session(raise_in: str) -> Session:
    cache = FakeCache()
    cache.add_node(build_node("n0"))
    cache.add_pod_group(build_pod_group("j"))
    cache.add_task(build_task("j-t-0", job="j"))
    text = (
        "actions: ''\ntiers:\n- plugins:\n  - name: scripted-a\n  - name: scripted-b\n"
        f"    arguments: {{label: b, raiseIn: {raise_in}}}\n"
    )
    return open_session(cache, text)


CALLS: dict[str, Any] = {
    "predicate": lambda ssn, job, task, node: ssn.predicate(task, node),
    "job_ready": lambda ssn, job, task, node: ssn.job_ready(job),
    "job_valid": lambda ssn, job, task, node: ssn.job_valid(job),
    "job_pipelined": lambda ssn, job, task, node: ssn.job_pipelined(job),
    "job_enqueueable": lambda ssn, job, task, node: ssn.job_enqueueable(job),
    "job_starving": lambda ssn, job, task, node: ssn.job_starving(job),
    "overused": lambda ssn, job, task, node: ssn.overused(ssn.queues["default"]),
    "allocatable": lambda ssn, job, task, node: ssn.allocatable(ssn.queues["default"], task),
    "preemptable": lambda ssn, job, task, node: ssn.preemptable(task, [task]),
    "reclaimable": lambda ssn, job, task, node: ssn.reclaimable(task, [task]),
}


@pytest.mark.parametrize("hook", sorted(CALLS))
def test_a_failure_names_the_plugin_and_the_hook_under_every_rule(hook: str) -> None:
    ssn = _session(hook)
    job = ssn.jobs["default/j"]
    task = next(iter(job.tasks.values()))
    with pytest.raises(PluginError) as info:
        CALLS[hook](ssn, job, task, ssn.nodes["n0"])
    assert (info.value.plugin, info.value.hook) == ("scripted-b", hook)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_failing_order_abstains_and_is_recorded_once() -> None:
    ssn = _session("job_order")
    job = ssn.jobs["default/j"]
    assert ssn.compare_jobs(job, job) == 0
    assert ssn.compare_jobs(job, job) == 0
    assert [(e.plugin, e.hook) for e in ssn.plugin_errors] == [("scripted-b", "job_order")]


def test_a_failing_notification_still_reaches_the_later_plugins() -> None:
    vl_thirdparty.Scripted.calls.clear()
    cache = FakeCache()
    text = (
        "actions: ''\ntiers:\n- plugins:\n  - name: scripted-a\n    arguments: {label: a, raiseIn: on_session_open}\n"
        "  - name: scripted-b\n    arguments: {label: b, raiseIn: on_session_open}\n"
        "  - name: scripted-c\n    arguments: {label: c}\n"
    )
    with pytest.raises(PluginError) as info:
        open_session(cache, text)
    assert info.value.plugin == "scripted-a"
    opened = [p for p, hook in vl_thirdparty.Scripted.calls if hook == "on_session_open"]
    assert opened == ["a", "b", "c"]


@pytest.mark.parametrize("flag", ["wrapper", "hookwrapper", "tryfirst", "trylast"])
def test_tiered_hooks_refuse_pluggy_ordering(flag: str) -> None:
    class Ordered:
        name = "ordered"

        def __init__(self, arguments: Any) -> None:
            pass

    if flag in ("wrapper", "hookwrapper"):

        def job_ready(self: Any, ssn: Any, job: Any) -> Any:
            return (yield)

    else:

        def job_ready(self: Any, ssn: Any, job: Any) -> Any:
            return True

    Ordered.job_ready = hookimpl(**{flag: True})(job_ready)  # type: ignore[attr-defined]
    with pytest.raises(PluginConfigError) as info:
        Scheduler(
            FakeCache(),
            "actions: ''\ntiers:\n- plugins:\n  - name: ordered\n",
            registry=Registry(plugins={"ordered": Ordered}),
        )
    assert (info.value.plugin, info.value.hook) == ("ordered", "job_ready")
    assert flag in str(info.value)


@pytest.mark.parametrize("hook", ["namespace_order", "victim_tasks"])
def test_removed_hooks_are_refused_as_unknown(hook: str) -> None:
    def impl(self: Any, ssn: Any, left: Any, right: Any) -> int:
        return 0

    plugin = type("Old", (), {"name": "old", "__init__": lambda self, arguments: None, hook: hookimpl(impl)})
    with pytest.raises(PluginConfigError) as info:
        Scheduler(
            FakeCache(), "actions: ''\ntiers:\n- plugins:\n  - name: old\n", registry=Registry(plugins={"old": plugin})
        )
    assert hook in str(info.value) and "old" in str(info.value)
