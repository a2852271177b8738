"""The stand-in's patch semantics, on plain objects."""

from __future__ import annotations

import pytest

from .patch import PatchError, apply_patch, json_patch, merge_patch, strategic_merge_patch


def test_merge_patch_deletes_with_null_and_replaces_lists() -> None:
    target = {"a": {"b": 1, "c": 2}, "l": [1, 2]}
    assert merge_patch(target, {"a": {"b": None, "d": 3}, "l": [3]}) == {"a": {"c": 2, "d": 3}, "l": [3]}
    assert target == {"a": {"b": 1, "c": 2}, "l": [1, 2]}  # the target is not changed


def test_strategic_merge_patch_merges_keyed_lists_and_honours_directives() -> None:
    pod = {
        "metadata": {"finalizers": ["a"], "labels": {"x": "1", "y": "2"}},
        "spec": {
            "containers": [{"name": "main", "image": "v1"}, {"name": "side", "image": "s1"}],
            "tolerations": [{"key": "k"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    patch = {
        "metadata": {"finalizers": ["b"], "$setElementOrder/finalizers": ["a", "b"], "labels": {"y": None}},
        "spec": {
            "$setElementOrder/containers": [{"name": "main"}, {"name": "side"}],
            "containers": [{"name": "main", "image": "v2"}, {"name": "side", "$patch": "delete"}],
            "tolerations": [{"key": "j"}],
        },
        "status": {"conditions": [{"type": "PodScheduled", "status": "True"}]},
    }
    out = strategic_merge_patch(pod, patch)
    assert out["metadata"] == {"finalizers": ["a", "b"], "labels": {"x": "1"}}
    assert out["spec"]["containers"] == [{"name": "main", "image": "v2"}]
    assert out["spec"]["tolerations"] == [{"key": "j"}]  # no merge key: replaced
    assert [c["type"] for c in out["status"]["conditions"]] == ["Ready", "PodScheduled"]


def test_strategic_merge_patch_replace_retain_and_delete_from_primitive_list() -> None:
    target = {"spec": {"a": 1, "b": 2}, "metadata": {"finalizers": ["x", "y"]}}
    assert strategic_merge_patch(target, {"spec": {"$patch": "replace", "c": 3}})["spec"] == {"c": 3}
    assert strategic_merge_patch(target, {"spec": {"$retainKeys": ["b"], "b": 5}})["spec"] == {"b": 5}
    out = strategic_merge_patch(target, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}})
    assert out["metadata"]["finalizers"] == ["y"]


def test_strategic_merge_patch_needs_the_merge_key() -> None:
    with pytest.raises(PatchError, match="merge key: type"):
        strategic_merge_patch({"conditions": [{"type": "A"}]}, {"conditions": [{"status": "True"}]})


def test_json_patch_operations() -> None:
    doc = {"a": [1, 2], "b": {"c": 1}}
    ops = [
        {"op": "add", "path": "/a/-", "value": 3},
        {"op": "replace", "path": "/b/c", "value": 2},
        {"op": "copy", "from": "/b", "path": "/d"},
        {"op": "move", "from": "/a/0", "path": "/e"},
        {"op": "remove", "path": "/b"},
        {"op": "test", "path": "/d/c", "value": 2},
    ]
    assert json_patch(doc, ops) == {"a": [2, 3], "d": {"c": 2}, "e": 1}
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "test", "path": "/a/0", "value": 9}])
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "remove", "path": "/missing"}])


def test_apply_patch_picks_the_semantics_from_the_content_type() -> None:
    target = {"conditions": [{"type": "A", "status": "True"}]}
    patch = {"conditions": [{"type": "B", "status": "True"}]}
    assert len(apply_patch("application/strategic-merge-patch+json", target, patch)["conditions"]) == 2
    assert len(apply_patch("application/merge-patch+json; charset=utf-8", target, patch)["conditions"]) == 1
    with pytest.raises(PatchError, match="unsupported"):
        apply_patch("application/apply-patch+yaml", target, patch)
