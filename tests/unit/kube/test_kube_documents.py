"""Reading manifest files: YAML (block or flow style) and JSON read as yaml.safe_load / json read them; errors name
file and line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from volcanolib import ManifestError
from volcanolib.kube import parse_documents, read_documents

ROOT = Path(__file__).resolve().parents[3]

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


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  labels: {x: y}\n  name: b\n",
            "f.yaml: not valid YAML at line 6 column 3: duplicate key 'name' in metadata",
        ),
        ("kind: Node\nkind: Pod\n", "f.yaml: not valid YAML at line 2 column 1: duplicate key 'kind'"),
        (
            "objects:\n- {kind: Node, metadata: {name: a}}\n- {kind: Pod, metadata: {name: a, name: b}}\n",
            "f.yaml: not valid YAML at line 3 column 35: duplicate key 'name' in objects[1].metadata",
        ),
        (
            "---\na: 1\n---\nitems:\n- x: 1\n  y: [1, {z: 2, z: 3}]\n",
            "f.yaml: not valid YAML at line 6 column 17: duplicate key 'z' in items[0].y[1]",
        ),
    ],
)
def test_a_key_twice_in_a_yaml_mapping_is_an_error(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_documents(text, source="f.yaml")
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("apiVersion: v1\nkind: Node\nmetadata:\n\tname: n1\n", "line 4, column 1"),
        ("kind: Node\nmetadata:\n  name: n1\n  labels:\n  \t  a: b\n", "line 5, column 3"),
        ("objects:\n- kind: Node\n  metadata:\n    name: a\n\t- kind: Pod\n", "line 5, column 1"),
    ],
)
def test_a_tab_is_named_as_a_tab(text: str, where: str) -> None:
    with pytest.raises(ManifestError) as info:
        parse_documents(text, source="f.yaml")
    assert str(info.value) == f"f.yaml: not valid YAML: a tab character at {where}: YAML indents with spaces"


def test_keys_repeated_in_different_mappings_and_merges_are_fine() -> None:
    text = "a: {name: x}\nb: {name: y}\nbase: &b {k: 1}\nc:\n  <<: *b\n  k: 2\n"
    assert parse_documents(text) == [{"a": {"name": "x"}, "b": {"name": "y"}, "base": {"k": 1}, "c": {"k": 2}}]


def test_missing_file_is_a_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as info:
        read_documents(tmp_path / "nope.yaml")
    assert "nope.yaml: cannot read" in str(info.value)


def test_binary_file_is_a_manifest_error(tmp_path: Path) -> None:
    path = tmp_path / "blob.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ManifestError, match="not UTF-8"):
        read_documents(path)


# Plain and quoted scalars whose reading depends on YAML's resolvers.
TRICKY = [
    "a", "n00001", "job-1", "scheduling.k8s.io/group-name", "_x", "/path",
    "yes", "Yes", "NO", "on", "OFF", "true", "False", "null", "NULL", "~", "y", "n", "onion", "nothing",
    "0", "-5", "+5", "007", "08", "1.5", ".5", "1.", "-0.0", "12345678901234567890", "1e3", "1.0e3", "1.0e+3",
    "0x1F", "0b11", "0o17", "1_000", "1:30", "190:20:30", "2024-01-01", "2024-01-01T00:00:00Z",
    "64Gi", "500m", "1.5Gi", "5n", "1E", "Infinity", "-Infinity", "NaN", ".inf", "-.inf", ".nan",
    "a b", "a:b", "a#b", "<<x", "-a", "'q'", "'it''s'", "'a: b'", '"dq"', '"a, b"', '"t\\tab"', '"\\u00e9"', "é",
]  # fmt: skip


@pytest.mark.parametrize("value", TRICKY)
def test_a_scalar_reads_as_safe_load_reads_it_in_block_and_flow_style(value: str) -> None:
    block = f"items:\n- kind: Pod\n  v: {value}\n  w:\n  - {value}\n"
    flow = "".join(f"- {{kind: Pod, v: {value}, w: [{value}]}}\n" for _ in range(40))
    for text in (block, flow):
        expected = yaml.safe_load(text)
        (doc,) = parse_documents(text)
        assert repr(doc) == repr(expected), text  # same types and key order, NaN included


def test_a_generated_workload_reads_alike_as_flow_yaml_block_yaml_and_json(tmp_path: Path) -> None:
    """The benchmark generator's flow lines, ``kubectl get -o yaml``'s block style, ``-o json``: the same objects."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks import gen_workload

    flow = tmp_path / "w.yaml"
    gen_workload.write("W2", "S", 1, flow)
    (scenario,) = read_documents(flow)
    assert scenario == yaml.load(flow.read_text(), Loader=yaml.CSafeLoader)
    listing = {"apiVersion": "v1", "kind": "List", "items": scenario["objects"]}
    block = tmp_path / "list.yaml"
    block.write_text(yaml.dump(listing, Dumper=yaml.CSafeDumper))
    assert block.read_text().startswith("apiVersion: v1\nitems:\n- apiVersion: ")
    dump = tmp_path / "list.json"
    dump.write_text(json.dumps(listing, indent=4))
    assert read_documents(block) == [listing]
    assert read_documents(dump) == [listing]
