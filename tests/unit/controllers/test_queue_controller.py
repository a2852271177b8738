"""The queue controller as pure logic: states, counts, hierarchy, commands."""

from __future__ import annotations

from typing import Any

import pytest

from volcanolib.controllers.queue import QueueAnnotation, QueueController, QueueEvent, QueueParent, QueueStatus


def queue(name: str, parent: str = "", state: str = "", closed_by_parent: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if closed_by_parent:
        meta["annotations"] = {"volcano.sh/closed-by-parent": "true"}
    out: dict[str, Any] = {"metadata": meta, "spec": {"parent": parent} if parent else {}}
    if state:
        out["status"] = {"state": state}
    return out


def states(changes: list[Any]) -> list[tuple[str, str]]:
    return [(c.name, c.state) for c in changes if isinstance(c, QueueStatus)]


def test_a_new_queue_is_opened_under_root_and_counts_its_groups() -> None:
    ctrl = QueueController()
    changes = ctrl.queue(queue("q"))
    assert changes == [
        QueueParent("q", "root"),
        QueueStatus("q", "Open", dict.fromkeys(("pending", "running", "unknown", "inqueue", "completed"), 0)),
    ]
    assert ctrl.queue(queue("root")) == [QueueStatus("root", "Open", ctrl.counts("root"))]  # root has no parent
    (status,) = ctrl.pod_group("ns", "pg1", "q", "Inqueue")
    assert isinstance(status, QueueStatus) and status.counts["inqueue"] == 1
    (status,) = ctrl.pod_group("ns", "pg1", "q", "Running")
    assert (status.counts["inqueue"], status.counts["running"]) == (0, 1)
    assert ctrl.pod_group("ns", "pg1", "q", "Running") == []  # nothing changed: nothing written


def test_close_is_closing_until_the_last_group_goes() -> None:
    ctrl = QueueController()
    ctrl.queue(queue("q", parent="root"))
    ctrl.pod_group("ns", "pg1", "q", "Running")
    changes = ctrl.command("q", "CloseQueue")
    assert states(changes) == [("q", "Closing")]
    assert QueueEvent("q", "Normal", "CloseQueue", "the queue is Closing now") in changes
    assert states(ctrl.pod_group_deleted("ns", "pg1")) == [("q", "Closed")]
    assert states(ctrl.command("q", "OpenQueue")) == [("q", "Open")]
    with pytest.raises(ValueError, match="unknown queue action 'Explode'"):
        ctrl.command("q", "Explode")


def test_closing_a_parent_closes_its_children_and_opening_it_opens_them() -> None:
    ctrl = QueueController()
    for q in (queue("root"), queue("eng", parent="root"), queue("dev", parent="eng"), queue("ops", parent="eng")):
        ctrl.queue(q)
    ctrl.command("ops", "CloseQueue")  # closed on its own: not reopened with its parent
    changes = ctrl.command("eng", "CloseQueue")
    assert QueueAnnotation("dev", "volcano.sh/closed-by-parent", "true") in changes
    assert dict(states(changes)) == {"eng": "Closed", "dev": "Closed"}
    refused = ctrl.command("dev", "OpenQueue")  # its parent is closed
    assert next(c for c in refused if isinstance(c, QueueEvent)).type == "Warning" and not states(refused)
    changes = ctrl.command("eng", "OpenQueue")
    assert dict(states(changes)) == {"eng": "Open", "dev": "Open"}
    assert ctrl.state("ops") == "Closed"
    assert QueueAnnotation("dev", "volcano.sh/closed-by-parent", "false") in changes
    root = ctrl.command("root", "CloseQueue")
    assert states(root) == [] and isinstance(root[0], QueueEvent)


def test_a_new_child_of_a_closed_parent_is_closed() -> None:
    ctrl = QueueController()
    ctrl.queue(queue("p", parent="root", state="Closed"))
    changes = ctrl.queue(queue("c", parent="p"))
    assert states(changes) == [("c", "Open"), ("c", "Closed")]
    assert QueueAnnotation("c", "volcano.sh/closed-by-parent", "true") in changes


def test_a_stored_closing_queue_without_groups_closes_on_its_first_sync() -> None:
    assert states(QueueController().queue(queue("q", parent="root", state="Closing"))) == [("q", "Closed")]
    assert states(QueueController().queue(queue("q", parent="root", state="Weird"))) == [("q", "Unknown")]
