"""The README's commands and its embedding example do what the README says.

* The quick start and the test run use different virtual environments, so
  the plugins that exist only for the tests (``tests/thirdparty_plugin``:
  broken and scripted ones) never reach the environment a user runs
  ``volcanolib plugins`` in; CI runs exactly the README's test command, and
  every page that repeats a command keeps the two apart.
* The embedding example uses only the public front door (``volcanolib``),
  runs, and prints what the README shows.
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest

import volcanolib

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
VENV = re.compile(r"python3 -m venv (\S+)")


def console_commands(page: Path) -> list[str]:
    """Every line of the page's ``console`` blocks, without a ``$`` prompt."""
    blocks = re.findall(r"^```console\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)
    return [line.removeprefix("$ ") for block in blocks for line in block.splitlines() if line.strip()]


def readme_command(marker: str) -> str:
    found = [line for line in console_commands(README) if VENV.match(line) and marker in line]
    assert len(found) == 1, f"the README has one command with {marker!r}: {found}"
    return found[0]


def venv_of(command: str) -> str:
    match = VENV.match(command)
    assert match is not None, command
    return match.group(1)


def programs_run(command: str) -> set[str]:
    """The directories of the programs a command line runs (``.venv/bin/pip`` -> ``.venv``)."""
    words = shlex.split(command)
    return {word.split("/bin/")[0] for word in words if "/bin/" in word}


def installs(command: str) -> list[str]:
    """What the pip steps of a command install (``-e`` paths and requirements)."""
    words = shlex.split(command)
    return [word for word in words if word.startswith(("./", ".["))]


def test_quick_start_and_tests_use_separate_environments() -> None:
    quick = readme_command("volcanolib simulate")
    tests = readme_command("pytest")
    assert venv_of(quick) != venv_of(tests), "the test plugins would show up in the quick start's environment"
    # Each command runs its programs from its own environment only.
    assert programs_run(quick) == {venv_of(quick)}
    assert programs_run(tests) == {venv_of(tests)}
    # The quick start installs nothing that exists only for the tests.
    assert not [item for item in installs(quick) if item.startswith("./tests/")]
    assert "./tests/thirdparty_plugin" in installs(tests)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert readme_command("pytest") in commands


def test_ignored_files_include_the_test_environment() -> None:
    # Otherwise git would list it and ruff would lint the packages installed there.
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert f"{venv_of(readme_command('pytest'))}/" in ignored


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").rglob("*.md"))], ids=lambda p: p.name)
def test_no_page_installs_test_plugins_into_the_quick_start_environment(page: Path) -> None:
    quick_venv = venv_of(readme_command("volcanolib simulate"))
    for command in console_commands(page):
        if "pip install" not in command:
            continue
        environments = programs_run(command) | set(VENV.findall(command))
        if [item for item in installs(command) if item.startswith("./tests/")]:
            assert quick_venv not in environments, command


#: Distributions of this repository: no package index serves them, so a page installs them from the checkout.
OWN_DISTRIBUTIONS = ("volcanolib", "volcanolib-contrib")
PAGES_WITH_COMMANDS = [
    README,
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "examples").rglob("README.md")),
    ROOT / "benchmarks" / "README.md",
]


def pip_requirements(command: str) -> list[str]:
    """What each ``pip install`` step of a command line names, options left out (``-e PATH`` gives PATH)."""
    named = []
    for step in re.split(r"&&|;|\|\|", command):
        if "install" not in step:
            continue
        try:
            words = shlex.split(step)
        except ValueError:  # not a command: a line of output
            continue
        if words[:3] in (["python", "-m", "pip"], ["python3", "-m", "pip"]):
            words = words[2:]
        # A step that runs pip (not a line of output that quotes a pip command).
        if len(words) > 1 and words[0].split("/")[-1] in ("pip", "pip3") and words[1] == "install":
            named += [w for w in words[2:] if not w.startswith("-")]
    return named


@pytest.mark.parametrize("page", PAGES_WITH_COMMANDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_installs_this_repositorys_distributions_from_an_index(page: Path) -> None:
    for command in console_commands(page):
        for requirement in pip_requirements(command):
            name = re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0].lower()
            assert name not in OWN_DISTRIBUTIONS, f"{page.name}: {command!r} asks an index for {requirement!r}"


def test_pip_requirements_reads_the_install_steps() -> None:
    quick = readme_command("volcanolib simulate")
    assert pip_requirements(quick) == [".[cli,plot]", "./plugins_contrib"]
    assert pip_requirements("pip install 'volcanolib[kube]' volcanolib-contrib") == [
        "volcanolib[kube]",
        "volcanolib-contrib",
    ]


# ---------------------------------------------------------------------- performance


def performance_section() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^## Performance\n(.*?)^## ", text, re.S | re.M)
    assert match is not None, "the README has a Performance section"
    return match.group(1)


BENCHMARK_COMMAND = re.compile(r"python -m benchmarks [^`\n]*")


def test_every_performance_figure_comes_with_its_command_and_date() -> None:
    section = performance_section()
    assert "2026-11-28" in section, "the figures are dated"
    blocks = re.findall(r"^```console\n(.*?)^```", section, re.S | re.M)
    assert any(BENCHMARK_COMMAND.search(block) for block in blocks), "the table's command"
    assert any("volcanolib simulate" in block and "--timings" in block for block in blocks), "the split's command"
    bullets = re.findall(r"^- (.*?)(?=^- |^\n)", section, re.S | re.M)
    assert bullets, "the figures over time"
    for bullet in bullets:
        assert BENCHMARK_COMMAND.search(bullet), bullet


class _Parsed(Exception):
    """Raised once a command line parsed: nothing runs."""


@pytest.mark.parametrize("page", [README, ROOT / "benchmarks" / "README.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_benchmark_commands_given_parse(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse
    import sys

    monkeypatch.syspath_prepend(str(ROOT))  # the benchmarks package lives beside volcanolib, uninstalled
    from benchmarks.__main__ import main

    original = argparse.ArgumentParser.parse_args

    def parse_only(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> object:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_only)
    commands = {" ".join(c.split()) for c in BENCHMARK_COMMAND.findall(page.read_text(encoding="utf-8"))}
    assert commands
    for command in sorted(commands):
        words = shlex.split(command.split(" #")[0])[3:]
        if any(w.startswith("[") or w in ("N", "FILE", "DIR", "...") for w in words):
            continue  # a synopsis with placeholders, not a command to run
        monkeypatch.setattr(sys, "argv", ["python -m benchmarks", *words])
        with pytest.raises(_Parsed):
            main(words)


# ---------------------------------------------------------------------- embedding


def embedding_section() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^## Embedding\n(.*?)^## ", text, re.S | re.M)
    assert match is not None, "the README has an Embedding section"
    return match.group(1)


def embedding_example() -> tuple[str, str]:
    """The section's python block and the ``text`` block showing what it prints."""
    section = embedding_section()
    code = re.search(r"^```python\n(.*?)^```", section, re.S | re.M)
    printed = re.search(r"^```text\n(.*?)^```", section, re.S | re.M)
    assert code is not None and printed is not None
    return code.group(1), printed.group(1)


def test_embedding_example_imports_only_the_public_package() -> None:
    code, _ = embedding_example()
    modules = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom):
            modules.add(node.module)
            assert all(alias.name in volcanolib.__all__ for alias in node.names), ast.unparse(node)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    assert modules == {"volcanolib"}


def test_embedding_example_builds_every_kind_of_object_and_a_queue() -> None:
    code, _ = embedding_example()
    for call in ("build_node(", "build_task(", "build_pod_group(", "build_queue(", "add_queue("):
        assert call in code, call


def test_embedding_example_prints_what_the_readme_shows(capsys: pytest.CaptureFixture[str]) -> None:
    code, printed = embedding_example()
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(code, str(README), "exec"), namespace)
    assert capsys.readouterr().out == printed
