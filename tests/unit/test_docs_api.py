"""The API reference (docs/api/) is generated from the docstrings and renders them.

The site is built as ``nox -s docs`` builds it (mkdocs ``--strict``, with
mkdocstrings from the ``dev`` and ``docs`` extras); the test then reads the
generated pages: every class and protocol the reference promises has its
entry, and no reStructuredText markup (``:class:``, ``:param x:``) is left
raw in the text a reader sees.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Page -> objects it documents, by the full path mkdocstrings uses as the anchor.
DOCUMENTED = {
    "data-model": [
        "volcanolib.api.builders.build_node",
        "volcanolib.api.builders.build_task",
        "volcanolib.api.builders.build_pod_group",
        "volcanolib.api.builders.build_queue",
        "volcanolib.api.builders.build_resource",
        "volcanolib.api.resource.Resource",
        "volcanolib.api.node.NodeInfo",
        "volcanolib.api.task.TaskInfo",
        "volcanolib.api.job.JobInfo",
        "volcanolib.api.job.PodGroup",
        "volcanolib.api.queue.QueueInfo",
        "volcanolib.api.cluster.ClusterInfo",
    ],
    "scheduler": [
        "volcanolib.scheduler.Scheduler",
        "volcanolib.scheduler.Scheduler.run_once",
        "volcanolib.scheduler.CycleResult",
        "volcanolib.framework.session.Session",
        "volcanolib.framework.statement.Statement",
        "volcanolib.framework.placement.Placement",
    ],
    "cache": [
        "volcanolib.cache.memory.InMemoryCache",
        "volcanolib.cache.memory.InMemoryCache.add_queue",
        "volcanolib.cache.memory.InMemoryCache.tasks",
        "volcanolib.cache.memory.InMemoryCache.jobs",
        "volcanolib.cache.protocol.Cache",
        "volcanolib.cache.protocol.Binder",
        "volcanolib.cache.protocol.Evictor",
        "volcanolib.cache.protocol.StatusUpdater",
    ],
    "hookspecs": [
        "volcanolib.framework.hookspecs.predicate",
        "volcanolib.framework.hookspecs.job_order",
        "volcanolib.framework.hookspecs.on_session_open",
    ],
}
RAW_REST = re.compile(r":(?:class|meth|func|data|attr|mod|exc|obj|param|returns|raises|rtype|type)\b[^\n]{0,40}?:")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    exe = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    command = [exe] if exe else [sys.executable, "-m", "mkdocs"]
    run = subprocess.run(
        [*command, "build", "--strict", "--quiet", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, "install the dev extra (mkdocstrings[python]):\n" + run.stdout + run.stderr
    return out


def page_html(site: Path, page: str) -> str:
    path = site / "api" / page / "index.html"
    assert path.is_file(), f"no API page {page}"
    return path.read_text(encoding="utf-8")


def visible_text(page: str) -> str:
    """The page's text as a reader sees it: no tags, scripts or code blocks."""
    page = re.sub(r"<(script|pre)\b.*?</\1>", "", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.mark.parametrize("page", sorted(DOCUMENTED))
def test_api_page_documents_its_objects(site: Path, page: str) -> None:
    text = page_html(site, page)
    missing = [name for name in DOCUMENTED[page] if f'id="{name}"' not in text]
    assert not missing, f"api/{page}: no entry for {missing}"


@pytest.mark.parametrize("page", sorted(DOCUMENTED))
def test_api_page_shows_no_raw_rest_markup(site: Path, page: str) -> None:
    raw = RAW_REST.findall(visible_text(page_html(site, page)))
    assert not raw, f"api/{page}: reST markup shown raw: {raw[:5]}"


def test_roles_become_links_to_the_documented_objects(site: Path) -> None:
    # InMemoryCache's docstring names the Binder and Evictor protocols with :class:.
    text = page_html(site, "cache")
    assert 'href="#volcanolib.cache.protocol.Binder"' in text
    assert 'href="../scheduler/#volcanolib.scheduler.Scheduler"' in text


def test_typed_cache_methods_are_shown_with_their_types(site: Path) -> None:
    # The signatures are code blocks: keep them.
    text = html.unescape(re.sub(r"<[^>]+>", "", page_html(site, "cache")))
    assert re.search(r"tasks\(\)\s*->\s*list\[TaskInfo\]", text)
    assert re.search(r"jobs\(\)\s*->\s*list\[JobInfo\]", text)
    assert re.search(r"add_queue\(queue: QueueInfo\)\s*->\s*None", text)


def test_attribute_comments_are_documentation(site: Path) -> None:
    # TaskInfo.job is documented by a "#:" comment above the field.
    text = visible_text(page_html(site, "data-model"))
    assert 'The job id "<namespace>/<podgroup>"' in text
