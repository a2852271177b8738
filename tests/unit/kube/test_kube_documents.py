"""Reading manifest files: the fast YAML path agrees with yaml.safe_load; errors name file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from volcanolib import ManifestError
from volcanolib.kube import parse_documents, read_documents

SAMPLES = [
    "a: 1\nb: [1, 2.5, yes, no, null, ~, '3', 0x10, 1e3, 1.0e3, 2024-01-01, 2024-01-01T00:00:00Z, '']\n",
    "---\na: &x {k: v}\nb: *x\nc:\n  <<: *x\n  k2: v2\nd:\n  <<: [*x, {k: w, z: 1}]\n  k: own\n---\n---\n- 1\n",
    "{a: 1, b: [x, y], c: {d: e}}",
    "a: !!str 1\nb: !!float 1\nc: !!int '7'\n",
    "text: |\n  line one\n  line two\nfolded: >\n  a\n  b\n",
    "kind: List\nitems:\n- kind: Node\n  metadata: {name: n1}\n- kind: Node\n  metadata: {name: n2}\n",
    "",
    "---\n...\n",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_fast_yaml_gives_what_safe_load_gives(text: str) -> None:
    expected = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    assert parse_documents(text) == expected


def test_aliases_share_the_anchored_object() -> None:
    (doc,) = parse_documents("a: &x [1]\nb: *x\n")
    assert doc["a"] is doc["b"]


def test_json_is_read_with_json(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    data = {"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n1"}}]}
    path.write_text(json.dumps(data))
    assert read_documents(path) == [data]


def test_flow_yaml_starting_with_a_brace_still_loads() -> None:
    assert parse_documents("{a: 1}\n", source="x.yaml") == [{"a": 1}]


@pytest.mark.parametrize(
    ("text", "source", "message"),
    [
        ("a: [1, 2\n", "f.yaml", "f.yaml: not valid YAML at line 2 column 1"),
        ("a: b: c\n", "f.yaml", "f.yaml: not valid YAML at line 1 column 5"),
        ("a: *nope\n", "f.yaml", "undefined alias 'nope'"),
        ("a: !custom x\n", "f.yaml", "could not determine a constructor for the tag '!custom'"),
        ('{"a": }', "f.json", "f.json: not valid JSON at line 1 column 7"),
        ("? {a: 1}\n: 2\n", "f.yaml", "f.yaml: not valid YAML"),
    ],
)
def test_syntax_errors_name_the_file_and_place(text: str, source: str, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_documents(text, source=source)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_is_a_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as info:
        read_documents(tmp_path / "nope.yaml")
    assert "nope.yaml: cannot read" in str(info.value)


def test_binary_file_is_a_manifest_error(tmp_path: Path) -> None:
    path = tmp_path / "blob.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ManifestError, match="not UTF-8"):
        read_documents(path)
