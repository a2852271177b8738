"""JSON dumps (``kubectl get -o json``) are read with json and schedule exactly as the same dump in YAML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from volcanolib import ManifestError
from volcanolib.kube import parse_documents, read_documents
from volcanolib.sim import SimulationResult, load_scenario, run_scenario

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_json_text_is_read_by_json_not_yaml() -> None:
    # YAML 1.1 reads 1e3 as a string; JSON as a number.
    assert parse_documents('{"a": 1e3}') == [{"a": 1000.0}]
    assert parse_documents('  \n[{"a": 1}]', source="x.json") == [[{"a": 1}]]


def test_a_byte_order_mark_does_not_hide_json(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    path.write_text('\ufeff{"kind": "List", "items": [], "n": 1e3}', encoding="utf-8")
    assert read_documents(path) == [{"kind": "List", "items": [], "n": 1000.0}]
    assert parse_documents("\ufeffa: 1\n") == [{"a": 1}]


def test_bad_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    path.write_text('{\n    "kind": "List",\n    "items": [,]\n}\n')
    with pytest.raises(ManifestError, match=r"dump\.json: not valid JSON at line 3 column 15"):
        read_documents(path)


@pytest.mark.parametrize("indent", [None, 4])
def test_a_kubectl_json_dump_schedules_like_its_yaml(tmp_path: Path, indent: int | None) -> None:
    yaml_path = EXAMPLES / "cluster-dump.yaml"
    (doc,) = read_documents(yaml_path)
    assert doc["kind"] == "List"
    json_path = tmp_path / "cluster-dump.json"
    json_path.write_text(json.dumps(doc, indent=indent) + "\n")

    from_yaml = load_scenario([yaml_path])
    from_json = load_scenario([json_path])
    assert from_json.warnings == from_yaml.warnings
    assert len(from_json.cluster.tasks) == len(from_yaml.cluster.tasks) > 0
    yaml_result = run_scenario(from_yaml, sessions=2, seed=3)
    json_result = run_scenario(from_json, sessions=2, seed=3)
    assert json_result.to_dict() == yaml_result.to_dict()
    assert yaml_result.binds


def test_a_scenario_mapping_written_as_json(tmp_path: Path) -> None:
    yaml_path = EXAMPLES / "quickstart.yaml"
    (doc,) = read_documents(yaml_path)
    json_path = tmp_path / "quickstart.json"
    json_path.write_text(json.dumps(doc))
    from_yaml = run_scenario(load_scenario([yaml_path]))
    from_json = run_scenario(load_scenario([json_path]))
    assert json_result_dict(from_json) == json_result_dict(from_yaml)


def json_result_dict(result: SimulationResult) -> object:
    """The JSON form of a result, as ``volcanolib simulate --json`` prints it."""
    return json.loads(json.dumps(result.to_dict(), sort_keys=True))
