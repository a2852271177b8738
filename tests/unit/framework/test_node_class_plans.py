"""A session makes one node-class plan per combination of plugin tokens, whatever key objects plugins return."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from volcanolib import Registry, Session, TaskInfo, hookimpl
from volcanolib.api.node import NodeInfo
from volcanolib.framework.nodeclass import NodeClassKey
from volcanolib.framework.status import Status
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task, open_session

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: zoned
"""


class Zoned:
    """Checks nodes by zone; hands out a new key object (a new function) on every call, its token the task's zone."""

    name = "zoned"

    def __init__(self, arguments: Any) -> None:
        self.arguments = arguments

    @staticmethod
    def _zone(task: TaskInfo) -> str:
        return task.pod.labels.get("zone", "") if task.pod is not None else ""

    @hookimpl
    def predicate(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> Status | None:
        return None

    @hookimpl
    def node_class_key(self, ssn: Session, task: TaskInfo) -> NodeClassKey:
        zone = self._zone(task)

        def key(node: NodeInfo) -> Hashable:
            return node.node.labels.get("zone") == zone

        return NodeClassKey(("zone", zone), key, pointwise=True, durable=True)


def test_keys_with_equal_tokens_share_one_plan() -> None:
    cache = FakeCache()
    for i, zone in enumerate("aab"):
        cache.add_node(build_node(f"n{i}", "4", "8Gi", labels={"zone": zone}))
    cache.add_pod_group(build_pod_group("j", min_member=1))
    for name, zone in (("t1", "a"), ("t2", "a"), ("t3", "b")):
        cache.add_task(build_task(name, job="j", cpu="1", memory="1Gi", labels={"zone": zone}))
    ssn = open_session(cache, CONF, registry=Registry(plugins={"zoned": Zoned}))
    tasks = {t.name: t for job in ssn.jobs.values() for t in job.tasks.values()}
    plugin = ssn.plugins["zoned"]
    first, second = plugin.node_class_key(ssn, tasks["t1"]), plugin.node_class_key(ssn, tasks["t2"])
    assert first is not second and first != second  # the plugin's keys are new objects each time
    one, two, three = (ssn.node_class_plan(tasks[name]) for name in ("t1", "t2", "t3"))
    assert one is not None and three is not None
    assert one is two
    assert three is not one and three.token != one.token
    # A plan's keys group the nodes as its token says.
    assert [one.keys[0](node) for node in ssn.node_list] == [True, True, False]
    assert [three.keys[0](node) for node in ssn.node_list] == [False, False, True]
    ssn.close()
