"""The documentation site hangs together: every page is in the nav, every link resolves.

Links are checked the way mkdocs resolves them: relative to the page, to a
Markdown file under ``docs/``, with an optional ``#anchor`` that must be
the slug of a heading of the target page (Python-Markdown's default slugs).
The README's links into ``docs/`` are checked the same way. When mkdocs is
installed (the ``docs`` extra), the site is also built with ``--strict``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from volcanolib import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def nav_entries(node: Any) -> Iterator[str]:
    """Every page path in a mkdocs ``nav`` (nested lists of ``{title: page}``)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from nav_entries(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from nav_entries(value)


def nav() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config.get("docs_dir", "docs") == "docs"
    return [entry for entry in nav_entries(config["nav"]) if not re.match(r"[a-z]+://", entry)]


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def slugify(heading: str) -> str:
    """Python-Markdown's default ``toc`` slug of a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = text.replace("`", "").replace("*", "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, with mkdocs' ``_1``, ``_2`` suffixes for repeats."""
    found: set[str] = set()
    for match in HEADING.finditer(FENCE.sub("", page.read_text(encoding="utf-8"))):
        slug = base = slugify(match.group(2))
        n = 0
        while slug in found:
            n += 1
            slug = f"{base}_{n}"
        found.add(slug)
    return found


def links(page: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(prose(page.read_text(encoding="utf-8")))
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def broken_links(page: Path, base: Path) -> list[str]:
    """Relative links of ``page`` (resolved from ``base``) whose file or anchor does not exist."""
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (base / path).resolve() if path else page
        if not dest.is_file():
            broken.append(f"{target}: no such file")
            continue
        if dest.suffix == ".md" and anchor and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor")
    return broken


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    entries = nav()
    assert len(entries) == len(set(entries)), "a page is listed twice in the nav"
    missing = [entry for entry in entries if not (DOCS / entry).is_file()]
    assert not missing, f"nav entries without a page: {missing}"
    unlisted = [name for name in (p.relative_to(DOCS).as_posix() for p in pages()) if name not in entries]
    assert not unlisted, f"pages not reachable from the nav in mkdocs.yml: {unlisted}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_relative_links_resolve(page: Path) -> None:
    for target in links(page):
        path = target.partition("#")[0]
        if path:
            dest = (page.parent / path).resolve()
            assert dest.is_relative_to(DOCS), f"{target}: links outside docs/ do not survive the site build"
            assert dest.suffix == ".md", f"{target}: link to the page's .md file, as mkdocs expects"
    assert not broken_links(page, page.parent)


def test_readme_links_into_the_docs_resolve() -> None:
    readme = ROOT / "README.md"
    assert links(readme), "the README links to the documentation pages"
    assert not broken_links(readme, ROOT)


def test_quickstart_output_in_the_docs_is_what_the_command_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    assert cli.main(["simulate", "examples/quickstart.yaml"]) == 0
    printed = capsys.readouterr().out
    readme = re.search(
        r"^```text\n(Scenario: quickstart.*?)^```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S | re.M
    )
    assert readme is not None and readme.group(1) == printed
    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    sample = re.search(r"^\$ volcanolib simulate examples/quickstart.yaml\n(.*?)^```", page, re.S | re.M)
    assert sample is not None and sample.group(1) == printed


#: The distributions the README's quick start installs: their plugins and actions are the only ones there.
QUICK_START_DISTRIBUTIONS = frozenset({"volcanolib", "volcanolib-contrib"})


def test_the_check_example_prints_what_the_page_shows_in_the_quick_start_environment() -> None:
    from importlib import metadata

    from volcanolib.framework.registry import ACTION_GROUP, DISABLE_ENV, PLUGIN_GROUP

    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    example = re.search(r"^```console\n\$ (volcanolib check [^\n]*)\n(.*?)^```", page, re.S | re.M)
    assert example is not None, "cli.md shows a volcanolib check example"
    command, shown = example.groups()
    # What the test environment has beyond the quick start's (plugins and actions installed only for the
    # tests or the examples) is blocked, so the example runs as it would there.
    extra = sorted(
        ep.name
        for group in (PLUGIN_GROUP, ACTION_GROUP)
        for ep in metadata.entry_points(group=group)
        if ep.dist is None or ep.dist.name not in QUICK_START_DISTRIBUTIONS
    )
    assert extra, "the test environment installs plugins the quick start does not"
    env = {**os.environ, DISABLE_ENV: ",".join(extra), "LC_ALL": "C"}
    script = Path(sys.executable).parent / "volcanolib"
    program = shlex.quote(str(script)) if script.exists() else f"{shlex.quote(sys.executable)} -m volcanolib"
    run = subprocess.run(
        ["bash", "-c", program + command.removeprefix("volcanolib")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == shown


def test_users_are_sent_to_the_real_api_server_and_the_stand_in_stays_the_tests() -> None:
    usage = "`tools/cluster --kubeconfig PATH`"
    serve = " ".join((DOCS / "serve.md").read_text(encoding="utf-8").split())
    assert usage in serve and "prints `ready`" in serve and "stops on SIGTERM" in serve
    stand_in = " ".join((ROOT / "tests" / "kube_api" / "README.md").read_text(encoding="utf-8").split())
    assert usage in stand_in
    # No user page tells people to run the stand-in.
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        assert "python -m kube_api" not in page.read_text(encoding="utf-8"), page.name


def test_slugs_follow_python_markdown() -> None:
    assert slugify("Sessions and the end of a scenario") == "sessions-and-the-end-of-a-scenario"
    assert slugify("`volcanolib check FILE... [--seed N] [-q]`") == "volcanolib-check-file-seed-n-q"
    assert slugify("The expect block") == "the-expect-block"


def test_site_builds_in_strict_mode(tmp_path: Path) -> None:
    exe = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    command = [exe] if exe else [sys.executable, "-m", "mkdocs"]
    run = subprocess.run(
        [*command, "build", "--strict", "--quiet", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
