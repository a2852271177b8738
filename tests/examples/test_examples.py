"""The runnable examples run as a user would run them, and their tutorials quote them exactly.

``examples/custom-plugin`` and ``examples/custom-action`` must be installed
in the environment (``pip install -e ./examples/custom-plugin -e
./examples/custom-action``, part of the test install command in the README);
``examples/embed`` needs nothing beyond volcanolib.

In the tutorials, every ``python`` and ``toml`` code block is an excerpt of
the example's files and must appear in one of them verbatim; sketches that
are not part of an example use the ``py`` info string instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from volcanolib import ConfigError, Registry, Scheduler, load_config
from volcanolib.testing import FakeCache, build_node, build_pod_group, build_task

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_DIR = ROOT / "examples" / "custom-plugin"
ACTION_DIR = ROOT / "examples" / "custom-action"
EMBED = ROOT / "examples" / "embed" / "dispatcher.py"
TUTORIALS = ROOT / "docs" / "tutorials"
INSTALL_HINT = "install the example first: pip install -e ./examples/custom-plugin"
ACTION_INSTALL_HINT = "install the example first: pip install -e ./examples/custom-action"


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    """Start a command with this interpreter's environment, without pytest options leaking in."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def programs() -> Iterator[dict[str, subprocess.Popen[str]]]:
    """The example packages' test runs and the dispatcher, started together so they run side by side."""
    started = {
        "plugin-tests": start([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=PLUGIN_DIR),
        "action-tests": start([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=ACTION_DIR),
        "dispatcher": start([sys.executable, str(EMBED), "--period", "0.05", "--max-cycles", "2000"], cwd=ROOT),
    }
    yield started
    for process in started.values():
        if process.poll() is None:
            process.kill()
        process.communicate()


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    """Wait for a started program: its exit status and output."""
    output, _ = process.communicate(timeout=120)
    return process.returncode, output


# ---------------------------------------------------------------------- custom plugin


@pytest.fixture(scope="module")
def teamfence_installed() -> None:
    """Fail with the install command when the example package is missing."""
    provider = Registry().plugins().get("teamfence")
    assert provider is not None, INSTALL_HINT


@pytest.mark.usefixtures("teamfence_installed")
def test_custom_plugin_is_discovered_through_its_entry_point() -> None:
    provider = Registry().plugins()["teamfence"]
    assert provider.distribution == "volcanolib-example-teamfence"
    assert provider.target == "teamfence:TeamFencePlugin"
    assert provider.load().name == "teamfence"


@pytest.mark.usefixtures("teamfence_installed")
def test_custom_plugin_own_tests_pass(programs: dict[str, subprocess.Popen[str]]) -> None:
    code, output = finish(programs["plugin-tests"])
    assert code == 0, output
    assert re.search(r"\d+ passed", output), output


CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: teamfence
    arguments:
      teamfence.fencedTeams: "interns"
      teamfence.deadlineAnnotation: example.com/due
- plugins:
  - name: drf
  - name: binpack
"""


@pytest.mark.usefixtures("teamfence_installed")
def test_a_cycle_configured_by_name_with_arguments() -> None:
    cache = FakeCache()
    cache.add_node(build_node("shared", cpu="2"))
    cache.add_node(build_node("sandbox", cpu="2", labels={"example.com/teams": "interns"}))
    # The interns' job has the earliest deadline, so it goes first, and is fenced onto the sandbox.
    cache.add_pod_group(build_pod_group("study", creation_timestamp=0, annotations={"example.com/due": "2029-01-01"}))
    cache.add_task(build_task("study-0", job="study", cpu="2", labels={"team": "interns"}))
    # Two jobs compete for the shared node: the earlier deadline wins, though created later.
    cache.add_pod_group(build_pod_group("later", creation_timestamp=1, annotations={"example.com/due": "2031-01-01"}))
    cache.add_task(build_task("later-0", job="later", cpu="2"))
    cache.add_pod_group(build_pod_group("sooner", creation_timestamp=2, annotations={"example.com/due": "2030-01-01"}))
    cache.add_task(build_task("sooner-0", job="sooner", cpu="2"))

    result = Scheduler(cache, CONF).run_once()

    assert result.plugin_errors == ()
    assert cache.bound == {"default/study-0": "sandbox", "default/sooner-0": "shared"}


@pytest.mark.usefixtures("teamfence_installed")
def test_a_bad_argument_refuses_the_configuration() -> None:
    with pytest.raises(ConfigError, match=r"plugin 'teamfence' arguments\.teamfence\.teamLabel: expected a string"):
        Scheduler(FakeCache(), CONF.replace("teamfence.fencedTeams", "teamfence.teamLabel: 3\n      x"))


# ---------------------------------------------------------------------- custom action


@pytest.fixture(scope="module")
def inorder_installed() -> None:
    """Fail with the install command when the example package is missing."""
    provider = Registry().actions().get("inorder")
    assert provider is not None, ACTION_INSTALL_HINT


@pytest.mark.usefixtures("inorder_installed")
def test_custom_action_is_discovered_through_its_entry_point() -> None:
    provider = Registry().actions()["inorder"]
    assert provider.distribution == "volcanolib-example-inorder"
    assert provider.target == "inorder:InOrder"
    assert provider.load().name == "inorder"


@pytest.mark.usefixtures("inorder_installed")
def test_custom_action_own_tests_pass(programs: dict[str, subprocess.Popen[str]]) -> None:
    code, output = finish(programs["action-tests"])
    assert code == 0, output
    assert re.search(r"\d+ passed", output), output


@pytest.mark.usefixtures("inorder_installed")
def test_custom_action_configured_by_name_in_the_example_file() -> None:
    cache = FakeCache()
    cache.add_node(build_node("n1", cpu="4"))
    cache.add_pod_group(build_pod_group("big", min_member=2, creation_timestamp=0))
    for i in range(2):
        cache.add_task(build_task(f"big-{i}", job="big", cpu="4"))  # 8 cpus: blocks the queue
    for name, created in (("small", 1), ("tiny", 2)):
        cache.add_pod_group(build_pod_group(name, creation_timestamp=created))
        cache.add_task(build_task(f"{name}-0", job=name, cpu="1"))

    result = Scheduler(cache, load_config(ACTION_DIR / "volcano-scheduler.conf")).run_once()

    assert result.plugin_errors == ()
    assert "inorder" in result.timings
    assert cache.bound == {"default/small-0": "n1"}  # within the lookahead of 1; tiny waits behind big


# ---------------------------------------------------------------------- embedding


def normalize(lines: list[str]) -> set[str]:
    """The lines without what depends on timing: cycle numbers, and where train's tasks land.

    The scheduler breaks ties between equally good nodes with a generator
    seeded per cycle, so the machines train gets depend on the cycle it starts in.
    """
    out = set()
    for line in lines:
        line = re.sub(r"^cycle \d+: ", "", line)
        line = re.sub(r" in \d+ cycles$", "", line)
        if "train-" in line:
            line = re.sub(r"\bm\d\b", "m?", line)
        out.add(line)
    return out


def test_embedded_dispatcher_runs_gangs_whole(programs: dict[str, subprocess.Popen[str]]) -> None:
    code, output = finish(programs["dispatcher"])
    assert code == 0, output
    lines = output.splitlines()
    assert lines[-1].startswith("7/7 tasks succeeded in ")

    def first(pattern: str) -> int:
        return next(i for i, line in enumerate(lines) if re.search(pattern, line))

    # train waits whole in the first cycle while etl and the small lint job start.
    assert re.search(r"^cycle 1: train waits: 2/4 tasks in gang unschedulable", lines[first("train waits")])
    assert lines[first("start lint-0")].startswith("cycle 1: ")
    # No train task starts before both etl tasks have finished, and all four start in one cycle.
    starts = [line for line in lines if "start train-" in line]
    assert len(starts) == 4
    assert len({line.split(":")[0] for line in starts}) == 1
    assert first("start train-") > max(first("etl-0 Succeeded"), first("etl-1 Succeeded"))
    # The sample output in the tutorial is what the program prints, up to cycle numbers.
    page = (TUTORIALS / "embedding.md").read_text(encoding="utf-8")
    sample = re.search(r"```text\n(machine .*?)```", page, re.S)
    assert sample is not None
    assert normalize(sample.group(1).splitlines()) == normalize(lines)


# ---------------------------------------------------------------------- tutorials quote the examples


@pytest.mark.parametrize(
    ("page", "sources"),
    [
        (
            "custom-plugin.md",
            [PLUGIN_DIR / "teamfence.py", PLUGIN_DIR / "pyproject.toml", PLUGIN_DIR / "tests" / "test_teamfence.py"],
        ),
        (
            "custom-action.md",
            [ACTION_DIR / "inorder.py", ACTION_DIR / "pyproject.toml", ACTION_DIR / "tests" / "test_inorder.py"],
        ),
        ("embedding.md", [EMBED]),
    ],
)
def test_tutorial_excerpts_match_the_examples(page: str, sources: list[Path]) -> None:
    text = (TUTORIALS / page).read_text(encoding="utf-8")
    blocks = re.findall(r"^```(?:python|toml)\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) >= 4
    files = [path.read_text(encoding="utf-8") for path in sources]
    for block in blocks:
        assert any(block in source for source in files), f"{page}: excerpt not found in the example:\n{block}"
