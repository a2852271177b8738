"""Fuzzing the loader: bad manifests and scenarios fail with ManifestError or ConfigError, never anything else.

Seeds are the shared scenarios and the examples; Hypothesis mutates their
values, types and keys. Random text and random objects of every kind the
loader reads are tried too. Whatever loads must also feed a cache.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from volcanolib import ConfigError, ManifestError, Scheduler
from volcanolib.kube.loader import ManifestLoader
from volcanolib.sim import load_scenario

ROOT = Path(__file__).resolve().parents[2]
SEED_FILES = sorted((ROOT / "tests" / "scenarios").glob("*.yaml")) + sorted((ROOT / "examples").glob("*.yaml"))
SEEDS: list[tuple[str, list[Any]]] = [
    (path.name, [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]) for path in SEED_FILES
]
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
EXPECTED = (ManifestError, ConfigError)

nasty_strings = st.sampled_from(
    [
        "", "-1", "0", "1e309", "-1e309", "NaN", "nan", "Infinity", "500m", "1Gi", "1.5.3", "0x10", "-0", "1e-9",
        "10Ei", "9999999999999999999999999Ei", "1e1000000", "2024-13-45T99:99:99Z", "2024-01-01T00:00:00+25:00",
        "true", "null", "~", "\u221e", "m", "Ki", "-500m", " 1 ", "1_000", "+5", ".5", "5.", "1e3m", "0.0001m",
        "Pending", "Running", "Inqueue", "Closed", "Never", "NoSchedule", "root", "default", "Exists", "In",
        "a/b/c", "v1", "batch.volcano.sh/v1alpha1", "scheduling.volcano.sh/v1beta1", "List", "Pod", "Node",
    ]
)  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.sampled_from([0, -1, 1, 2**31, 2**63, -(2**63), 10**400, -(10**400), 1e308, -1e308]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    nasty_strings,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), nasty_strings, st.integers(-3, 3)), inner, max_size=4),
    ),
    max_leaves=10,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        node = node[step]
    return node


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, list[Any]]:
    name, docs = draw(st.sampled_from(SEEDS))
    docs = copy.deepcopy(docs)
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(docs)[1:]
        if not paths:
            break
        leaves = [p for p in paths if not isinstance(_get(docs, p), (dict, list))]
        path = draw(st.sampled_from(leaves)) if leaves and draw(st.booleans()) else draw(st.sampled_from(paths))
        parent, last = _get(docs, path[:-1]), path[-1]
        kind = draw(st.sampled_from(["replace", "replace", "scalar", "scalar", "delete", "add", "rekey", "wrap"]))
        if kind == "replace":
            parent[last] = draw(values)
        elif kind == "scalar":
            parent[last] = draw(scalars)
        elif kind == "delete":
            del parent[last]
        elif kind == "add" and isinstance(parent, dict):
            parent[draw(st.one_of(nasty_strings, st.text(max_size=8)))] = draw(values)
        elif kind == "add":
            parent.insert(last, draw(values))
        elif kind == "rekey" and isinstance(parent, dict):
            parent[draw(st.one_of(st.integers(-2, 2), st.booleans(), st.none(), nasty_strings))] = parent.pop(last)
        elif kind == "wrap":
            parent[last] = [parent[last]]
    return name, docs


def _load(path: Path) -> None:
    """Load a scenario file; a scenario that loads must also feed a cache and go through a cycle."""
    try:
        scenario = load_scenario([path])
        scheduler = Scheduler(scenario.cluster.to_cache(), scenario.config)
    except EXPECTED:
        return
    scheduler.run_once()


def _write(path: Path, docs: list[Any]) -> None:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def test_every_seed_loads(workdir: Path) -> None:
    """The mutations start from files that load (so a failure is the mutation's doing)."""
    for name, docs in SEEDS:
        path = workdir / name
        _write(path, docs)
        load_scenario([path]).cluster.to_cache()


@SETTINGS
@given(case=mutated())
def test_mutated_scenarios_fail_only_with_manifest_or_config_errors(workdir: Path, case: tuple[str, list[Any]]) -> None:
    name, docs = case
    path = workdir / f"mutated-{name}"
    try:
        _write(path, docs)
    except (yaml.YAMLError, ValueError, OverflowError):
        return  # not representable as YAML
    _load(path)


@SETTINGS
@given(text=st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_random_text_fails_only_with_manifest_errors(workdir: Path, text: str) -> None:
    path = workdir / "random.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    _load(path)


KINDS = [
    ("v1", "Node"),
    ("v1", "Pod"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("scheduling.volcano.sh/v1beta1", "Queue"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    ("batch.volcano.sh/v1alpha1", "Job"),
    ("v1", "List"),
]


@st.composite
def objects(draw: st.DrawFn) -> dict[Any, Any]:
    api, kind = draw(st.sampled_from(KINDS))
    obj: dict[Any, Any] = {"apiVersion": api, "kind": kind, "metadata": {"name": draw(st.text(min_size=1, max_size=6))}}
    for field in ("metadata", "spec", "status", "items", "value"):
        if draw(st.booleans()):
            obj[field] = draw(values)
    return obj


@SETTINGS
@given(objs=st.lists(objects(), max_size=4))
def test_random_objects_fail_only_with_manifest_errors(objs: list[dict[Any, Any]]) -> None:
    loader = ManifestLoader()
    try:
        loader.add_objects(objs, source="fuzz")
        cluster = loader.load()
    except EXPECTED:
        return
    Scheduler(cluster.to_cache()).run_once()


def _node(**status: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": status}


def _pod(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": "1"}}}
    spec = {"schedulerName": "volcano", "containers": [container], **spec}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **meta}, "spec": spec}


def _job(replicas: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    task = {"name": "w", "replicas": replicas, "template": template}
    meta = {"name": "j"}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta, "spec": {"tasks": [task]}}


HUGE = 10**400
FOUND = {
    # quantities beyond 64 bits were loaded, then every session failed on them (float overflow)
    "node quantity": _node(allocatable={"cpu": HUGE, "memory": "1Gi"}),
    "quantity string": _node(allocatable={"cpu": "4", "memory": "99999999999999999999Ei"}),
    "pod request": _pod({"containers": [{"name": "c", "resources": {"requests": {"memory": HUGE}}}]}),
    # integers beyond 64 bits
    "pod priority": _pod({"priority": HUGE}),
    "queue weight": {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"weight": 2**64},
    },
    # a numeric creationTimestamp too large for a float raised OverflowError
    "timestamp": _pod({}, creationTimestamp=HUGE),
    "nan timestamp": _pod({}, creationTimestamp=math.nan),
    # a Volcano Job with a huge replicas count was expanded pod by pod (the load never ended)
    "replicas": _job(10**9),
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_what_the_fuzzer_found_is_a_manifest_error(case: str) -> None:
    loader = ManifestLoader()
    loader.add(FOUND[case], source="found.yaml")
    with pytest.raises(ManifestError) as info:
        loader.load()
    assert "found.yaml" in str(info.value)


LAUGHS = "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}' if i else 'lol'] * 9)}]\n" for i in range(9)
)  # nine levels of nine aliases: 387,420,489 values once expanded
TEXTS = {
    # deep nesting: the event loop built it, then repr() and friends hit RecursionError
    "deep yaml": "objects: []\nexpect: {evictCount: " + "[" * 3000 + "]" * 3000 + "}\n",
    "deep flow lines": "objects:\n" + ("- {a: " + "[" * 3000 + "]" * 3000 + "}\n") * 40,
    "deep through aliases": "".join(
        f"d{i}: &d{i} " + "[" * 200 + (f"*d{i - 1}" if i else "") + "]" * 200 + "\n" for i in range(6)
    )
    + "objects: []\nexpect: {evictCount: *d5}\n",
    # a billion laughs: building an error message never ended
    "alias bomb": LAUGHS + "objects: []\nexpect: {evictCount: *l8}\n",
    # an expected node score too large for a float raised OverflowError
    "huge expected score": "objects: []\nexpect: {nodeScores: {ns/pod: {n1: 1" + "0" * 400 + "}}}\n",
    # json: RecursionError and a ValueError for a number too long to convert escaped
    "deep json": "[" * 5000 + "]" * 5000,
    "long number json": '{"objects": [], "sessions": 1' + "0" * 5000 + "}",
}


@pytest.mark.parametrize("case", sorted(TEXTS))
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_what_the_fuzzer_found_in_text_is_a_manifest_error(workdir: Path, case: str, suffix: str) -> None:
    path = workdir / f"found{suffix}"
    path.write_text(TEXTS[case])
    with pytest.raises(ManifestError) as info:
        load_scenario([path])
    assert len(str(info.value)) < 2000  # one readable line, not the bomb written out
    if case.startswith("deep") and not case.endswith("json"):
        assert " at line " in str(info.value)  # the error says where
