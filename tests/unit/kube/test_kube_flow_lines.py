"""Runs of one-line flow mappings read as JSON: the same documents and errors as the event loop, or a fallback.

Every comparison is strict: the documents' ``repr`` (types, key order) or the error message must be identical with
and without the fast path.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from yaml.resolver import Resolver

from volcanolib import ManifestError
from volcanolib.kube import _documents, parse_documents

ROOT = Path(__file__).resolve().parents[3]

LINE = "- {apiVersion: v1, kind: Pod, metadata: {name: p%d, namespace: w1}, spec: {containers: []}}"


def _lines(n: int = 40, start: int = 0) -> str:
    return "".join(LINE % i + "\n" for i in range(start, start + n))


def _outcome(text: str) -> str:
    try:
        return repr(parse_documents(text, source="f.yaml"))
    except ManifestError as exc:
        return f"error: {exc}"


def _both(text: str) -> tuple[str, str]:
    """What parse_documents gives with the fast path, and with the event loop alone."""
    fast = _outcome(text)
    with mock.patch.object(_documents, "_FLOW_LINES_OK", False):
        slow = _outcome(text)
    return fast, slow


@pytest.fixture
def fast_path_calls() -> Iterator[list[bool]]:
    """Whether each parse went through the fast path (True) or fell back (False)."""
    calls: list[bool] = []
    real = _documents._load_flow_lines

    def spy(text: str) -> object:
        result = real(text)
        calls.append(result is not None)
        return result

    with mock.patch.object(_documents, "_load_flow_lines", spy):
        yield calls


def test_pyyaml_resolvers_are_the_stock_ones() -> None:
    assert _documents._stock_resolvers()
    assert _documents._FLOW_LINES_OK == _documents.HAVE_LIBYAML


def test_an_extra_resolver_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {k: list(v) for k, v in Resolver.yaml_implicit_resolvers.items()}
    table.setdefault("k", []).append(("tag:example,2024:k", re.compile("^k8s$")))
    monkeypatch.setattr(Resolver, "yaml_implicit_resolvers", table)
    assert not _documents._stock_resolvers()


@pytest.mark.parametrize("workload", ["W1", "W2", "W3", "W4"])
def test_generated_workloads_take_the_fast_path(tmp_path: Path, workload: str, fast_path_calls: list[bool]) -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from benchmarks import gen_workload

    path = tmp_path / "w.yaml"
    gen_workload.write(workload, "S", 1, path)
    text = path.read_text()
    fast, slow = _both(text)
    assert fast_path_calls == [True]
    assert fast == slow
    assert parse_documents(text) == [yaml.load(text, Loader=yaml.CSafeLoader)]


def test_a_scenario_with_a_run_between_keys(fast_path_calls: list[bool]) -> None:
    text = "name: x\nobjects:\n" + _lines() + "expect:\n  binds: {}\n"
    fast, slow = _both(text)
    assert fast_path_calls == [True]
    assert fast == slow
    (doc,) = parse_documents(text)
    assert [o["metadata"]["name"] for o in doc["objects"]] == [f"p{i}" for i in range(40)]
    assert doc["expect"] == {"binds": {}}


def test_runs_in_several_places(fast_path_calls: list[bool]) -> None:
    text = (
        _lines(40)
        + "---\nkind: List\nitems:\n- {kind: Node}\n"
        + _lines(35, 100)
        + "- kind: Node\n  metadata: {name: block}\n"
        + _lines(33, 200)
        + "---\n---\n"
    )
    fast, slow = _both(text)
    assert fast_path_calls == [True]
    assert fast == slow
    first, second = parse_documents(text)
    assert len(first) == 40 and len(second["items"]) == 1 + 35 + 1 + 33


def test_an_anchored_run_is_shared_by_its_alias(fast_path_calls: list[bool]) -> None:
    text = "objects: &all\n" + _lines() + "again: *all\n"
    fast, slow = _both(text)
    assert fast_path_calls == [True]
    assert fast == slow
    (doc,) = parse_documents(text)
    assert doc["again"] is doc["objects"]


def test_a_short_run_goes_through_the_event_loop(fast_path_calls: list[bool]) -> None:
    text = "objects:\n" + _lines(5) + "x: " + "y" * 400 + "\n"
    assert _both(text)[0] == _both(text)[1]
    assert not any(fast_path_calls)


@pytest.mark.parametrize(
    "text",
    [
        "--- |\n" + _lines(),  # a block scalar at the root: the lines are text
        'note: "starts\n' + _lines() + '  ends"\n',  # inside a multi-line quoted scalar
        "root plain\n" + _lines(),  # a plain scalar at the root continues at column 0
        "objects:\n" + _lines() + "  tail\n",  # an indented line after the run
        "objects:\n" + _lines() + "  - nested\n",
        "objects:\n" + _lines() + "bad: [\n",  # an error after the run keeps its line
        "a: 1\n" + _lines() + "b: 2\n",  # a sequence where a mapping key is expected
        "objects:\n  - {x: 1}\n" + _lines(),  # a sequence at another indentation before the run
        "objects: [\n" + _lines() + "]\n",  # inside a flow sequence
        "__volcanolib_flow_lines_0: 1\nobjects:\n" + _lines(),  # the text holds a marker
        'objects:\n- "__volcanolib_flow_lines_0"\n' + _lines(),
    ],
)
def test_odd_surroundings_give_what_the_event_loop_gives(text: str) -> None:
    fast, slow = _both(text)
    assert fast == slow


def test_an_error_after_a_run_names_its_line() -> None:
    text = "objects:\n" + _lines() + "bad: [\n"
    fast, _ = _both(text)
    assert fast.startswith("error: f.yaml: not valid YAML at line 43")


# Plain and quoted scalars whose YAML reading a JSON reading could get wrong.
TRICKY = [
    "a", "abc", "n00001", "job-1", "v1", "scheduling.k8s.io/group-name", "_x", "/path", "x.y-z_w",
    "yes", "Yes", "YES", "no", "No", "on", "On", "OFF", "off", "true", "True", "TRUE", "false", "False", "null", "Null",
    "NULL", "~", "y", "n", "Y", "N", "nul", "yess", "onion", "o", "Ty", "nothing", "offset", "truex", "nullable",
    "0", "5", "-5", "+5", "007", "08", "1.5", "-1.5", ".5", "1.", "1.50", "-0", "-0.0", "12345678901234567890",
    "1e3", "1E3", "1.0e3", "1.0e+3", "1e+3", "-1.5e-3", "0x1F", "0b11", "0o17", "1_000", "1:30", "190:20:30",
    "2024-01-01", "2024-01-01T00:00:00Z", "2001-12-14 21:59:43.10 -5",
    "64Gi", "500m", "1.5Gi", "5n", "1E", "1.5E", "2k", "3M", "64Gix", "1Ki", "0m", "10u", "1.5Ti",
    "Infinity", "-Infinity", "NaN", ".inf", "-.inf", ".nan", ".NaN",
    "a b", "a  b", "hello world", "a:b", "a: b", "a#b", "a #b", "#c", "&x a", "*x", "!x", "!!str 1", "!!int '3'",
    "<<", "=", "-", "- a", "-a", "?", "? a", "@a", "`a", "%a", "'q'", "'it''s'", "'a: b'",
    '"dq"', '"a, b"', '"{x}"', '"x: y"', '"[1]"', '""', "''", '"t\\tab"', '"esc\\"q"', '"\\u00e9"', '"# no"',
    "é", '"é"', "k" * 600, '"' + "k" * 600 + '"', "a\tb", '"a\tb"', "{}", "[]", "[a, b]", "[a,b]", "{a: 1}",
    "{a:1}", "[a: b]", "{ a: b }", "[ a , b ]", "{a: 1,}", "{a}", "{a: }", "{? a: 1}",
]  # fmt: skip


@pytest.mark.parametrize("value", TRICKY)
def test_a_tricky_value_reads_as_the_event_loop_reads_it(value: str) -> None:
    text = "objects:\n" + _lines(20) + f"- {{kind: Pod, v: {value}, tail: x}}\n" + _lines(20, 50)
    fast, slow = _both(text)
    assert fast == slow


@pytest.mark.parametrize("key", [k for k in TRICKY if not k.startswith(("{", "["))])
def test_a_tricky_key_reads_as_the_event_loop_reads_it(key: str) -> None:
    text = _lines(20) + f"- {{{key}: 1, kind: Pod}}\n" + _lines(20, 50)
    fast, slow = _both(text)
    assert fast == slow


def test_values_that_must_stay_strings_do(fast_path_calls: list[bool]) -> None:
    values = "a, v1, 64Gi, 500m, 1.5Gi, Infinity, NaN, onion, nothing, Ty, y, n, _x, /p"
    text = _lines(35) + f"- {{v: [{values}], n: [0, -5, 1.5, -0.0, true, false, null, 12345678901234567890]}}\n"
    fast, slow = _both(text)
    assert fast_path_calls == [True]
    assert fast == slow
    last = parse_documents(text)[0][-1]
    assert last["v"] == [v.strip() for v in values.split(",")]
    assert last["n"] == [0, -5, 1.5, -0.0, True, False, None, 12345678901234567890]
    assert [type(x) for x in last["n"]] == [int, int, float, float, bool, bool, type(None), int]


SCALARS = st.sampled_from(TRICKY)
KEYS = st.sampled_from([k for k in TRICKY if not k.startswith(("{", "["))])
SPACING = st.sampled_from([("{", "}", ", ", ": "), ("{ ", " }", " , ", " : "), ("{", "}", ",", ": ")])


@st.composite
def flow_mappings(draw: st.DrawFn, depth: int = 0) -> str:
    """A one-line flow mapping of tricky keys and values, nested a little, with varied spacing."""
    open_, close, comma, colon = draw(SPACING)
    pairs = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.integers(0, 5)) if depth < 2 else 0
        if kind == 4:
            value = draw(flow_mappings(depth + 1))
        elif kind == 5:
            value = "[" + comma.join(draw(st.lists(SCALARS, max_size=3))) + "]"
        else:
            value = draw(SCALARS)
        pairs.append(f"{draw(KEYS)}{colon}{value}")
    return open_ + comma.join(pairs) + close


@given(st.lists(flow_mappings(), min_size=1, max_size=6), st.integers(0, 3), st.randoms())
def test_random_lines_read_as_the_event_loop_reads_them(odd: list[str], surrounding: int, rng: object) -> None:
    lines = [LINE % i for i in range(36)]
    for mapping in odd:
        lines.insert(rng.randrange(len(lines) + 1), f"- {mapping}")  # type: ignore[attr-defined]
    body = "\n".join(lines) + "\n"
    text = ["objects:\n" + body, body, "a: 1\nitems:\n" + body + "z: [1]\n", "---\n" + body + "---\nx: y\n"][
        surrounding
    ]
    fast, slow = _both(text)
    assert fast == slow


@pytest.mark.parametrize("word", _documents._YAML_WORDS.split("|"))
def test_every_bool_and_null_word_keeps_its_meaning(word: str) -> None:
    text = _lines(35) + f"- {{v: {word}, w: [{word}], {word}x: 1}}\n"
    fast, slow = _both(text)
    assert fast == slow
    assert parse_documents(text)[0][-1]["v"] in (True, False, None)


def test_every_letter_starts_a_string_token_unless_it_spells_a_word() -> None:
    for letter in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_/":
        assert _documents._STRING_TOKEN.split(f"{{v: {letter}zz}}") == ["{", "v", ": ", f"{letter}zz", "}"], letter


# Scalars the fast path reads itself (no fallback), for checking what it gives.
PLAIN = [
    "a", "abc", "n00001", "job-1", "v1", "scheduling.k8s.io/group-name", "_x", "/path", "x.y-z_w", "y", "n", "Y",
    "N", "nul", "yess", "onion", "o", "Ty", "nothing", "offset", "truex", "nullable", "0", "5", "-5", "1.5", "-1.5",
    "1.50", "-0", "-0.0", "12345678901234567890", "64Gi", "500m", "1.5Gi", "5n", "1E", "1.5E", "2k", "3M", "1Ki",
    "0m", "10u", "Infinity", "NaN", "true", "false", "null", '"dq"', '"a,b"', '"x:y"', '"[1]"', '""', '"# no"',
    '"yes"', '"1e3"', "{}", "[]", "[a, b]", "{a: 1}", "{ a: b }", "[ a , b ]", "[64Gi, 1.5, true]",
]  # fmt: skip
PLAIN_KEYS = [k for k in PLAIN if k[0].isalpha() and k not in ("true", "false", "null")] + ['"dq"', '"a,b"', '""']


@given(
    st.lists(
        st.dictionaries(st.sampled_from(PLAIN_KEYS), st.sampled_from(PLAIN), min_size=1, max_size=5),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from([("{", "}", ", ", ": "), ("{ ", " }", " , ", " : "), ("{", "}", ",  ", ":  ")]),
)
def test_random_readable_lines_take_the_fast_path_and_agree(
    mappings: list[dict[str, str]], spacing: tuple[str, str, str, str]
) -> None:
    open_, close, comma, colon = spacing
    odd = [open_ + comma.join(f"{k}{colon}{v}" for k, v in m.items()) + close for m in mappings]
    body = "".join(f"- {line}\n" for line in odd) + _lines(35)
    text = "objects:\n" + body
    assert _documents._load_flow_lines(text) is not None, odd
    fast, slow = _both(text)
    assert fast == slow


def test_a_long_run_is_rewritten_a_chunk_at_a_time(
    monkeypatch: pytest.MonkeyPatch, fast_path_calls: list[bool]
) -> None:
    monkeypatch.setattr(_documents, "_CHUNK_CHARS", 300)
    text = "objects:\n" + _lines(100)
    fast, slow = _both(text)
    assert fast_path_calls == [True]
    assert fast == slow
    assert len(parse_documents(text)[0]["objects"]) == 100


def test_one_odd_line_in_a_late_chunk_sends_the_run_to_the_event_loop(
    monkeypatch: pytest.MonkeyPatch, fast_path_calls: list[bool]
) -> None:
    monkeypatch.setattr(_documents, "_CHUNK_CHARS", 300)
    text = "objects:\n" + _lines(90) + "- {v: yes}\n" + _lines(9, 90)
    fast, slow = _both(text)
    assert fast_path_calls == [False]
    assert fast == slow
    assert parse_documents(text)[0]["objects"][90] == {"v": True}
