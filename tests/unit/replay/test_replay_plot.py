"""The plots of a replay: PNG, SVG and a self-contained HTML page, one run or several overlaid."""

from __future__ import annotations

import random
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from replay_records import two_queues

from volcanolib.errors import MissingExtraError, VolcanolibError
from volcanolib.replay.plot import plot, thin

SVG = "{http://www.w3.org/2000/svg}"


def legends(svg: Path) -> set[str]:
    """The ids of the legend groups, one per panel with a legend (matplotlib names them legend_N)."""
    root = ET.parse(svg).getroot()
    return {g.get("id", "") for g in root.iter(f"{SVG}g") if g.get("id", "").startswith("legend_")}


def test_png(tmp_path: Path) -> None:
    path = tmp_path / "replay.png"
    plot([("run", two_queues())], path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_svg_parses_has_five_panels_and_is_stable(tmp_path: Path) -> None:
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    plot([("run", two_queues())], first)
    plot([("run", two_queues())], second)
    root = ET.parse(first).getroot()
    assert root.tag == f"{SVG}svg"
    axes = [g for g in root.iter(f"{SVG}g") if g.get("id", "").startswith("axes_")]
    assert len(axes) == 5
    assert len(legends(first)) == 5
    assert "nothing to draw" not in first.read_text()
    assert first.read_bytes() == second.read_bytes()


def texts(svg: Path) -> list[str]:
    """The texts drawn (matplotlib draws text as paths, after a comment holding it)."""
    return re.findall(r"<!-- (.*?) -->", svg.read_text(encoding="utf-8"))


def test_several_runs_overlaid_with_their_names(tmp_path: Path) -> None:
    one, two = tmp_path / "one.svg", tmp_path / "two.svg"
    plot([("weights", two_queues())], one)
    plot([("weights", two_queues()), ("deserved", two_queues())], two)
    assert {"cpu", "memory", "pending", "running", "q1", "q2", "idle", "weights"} <= set(texts(one))
    shown = set(texts(two))
    for name in ("cpu", "memory", "pending", "running", "q1", "q2", "idle"):
        assert {f"{name} (weights)", f"{name} (deserved)"} <= shown
    assert {"weights", "deserved"} <= shown  # the CDFs' legends
    assert "time since the start (seconds)" in shown


def test_html_page_inlines_the_svg_and_the_figures(tmp_path: Path) -> None:
    path = tmp_path / "replay.html"
    plot([("weights", two_queues()), ("a<b", two_queues())], path)
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<svg") == 1 and "<?xml" not in page and "<!DOCTYPE svg" not in page
    assert "<th>weights</th><th>a&lt;b</th>" in page
    assert "<tr><td>fairness (Jain)</td><td>0.800</td><td>0.800</td></tr>" in page
    assert "src=" not in page and 'href="http' not in page  # nothing to fetch
    svg = page[page.index("<svg") : page.index("</svg>") + len("</svg>")]
    ET.fromstring(svg)


def test_other_suffixes_and_no_run_are_refused(tmp_path: Path) -> None:
    with pytest.raises(VolcanolibError, match=r"replay\.pdf: a plot is written as \.png, \.svg or \.html, not '\.pdf'"):
        plot([("run", two_queues())], tmp_path / "replay.pdf")
    with pytest.raises(VolcanolibError, match="nothing to plot"):
        plot([], tmp_path / "replay.png")


def test_without_matplotlib_the_extra_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError) as info:
        plot([("run", two_queues())], tmp_path / "replay.png")
    assert str(info.value) == "--plot needs the 'plot' extra (matplotlib): pip install 'volcanolib[plot]'"
    assert not (tmp_path / "replay.png").exists()


def test_an_empty_replay_still_draws(tmp_path: Path) -> None:
    from volcanolib.replay.records import ReplayRecord

    path = tmp_path / "empty.svg"
    plot([("run", ReplayRecord(0.0, 0.0, 0, [], [], [], [], {}))], path)
    assert path.read_text().count("<!-- nothing to draw -->") == 5  # matplotlib notes each text it draws as paths
    assert legends(path) == set()


def test_long_curves_are_thinned_keeping_every_peak() -> None:
    rng = random.Random(7)
    times = sorted(rng.uniform(0, 1000) for _ in range(10_000))
    values = [rng.uniform(0, 100) for _ in times]
    values[1234], values[8765] = 150.0, -5.0  # a spike and a dip
    xs, ys = thin(times, values, buckets=100)
    assert len(xs) <= 400
    assert (xs[0], ys[0]) == (times[0], values[0]) and (xs[-1], ys[-1]) == (times[-1], values[-1])
    assert max(ys) == 150.0 and min(ys) == -5.0
    kept = set(zip(times, values, strict=True))
    assert all(point in kept for point in zip(xs, ys, strict=True)) and xs == sorted(xs)
    # Within each hundredth of the time range, the lowest and the highest value survive.
    first, span = times[0], times[-1] - times[0]

    def bucket_of(t: float) -> int:
        return min(int((t - first) / span * 100), 99)

    for bucket in range(100):
        inside = [v for t, v in zip(times, values, strict=True) if bucket_of(t) == bucket]
        drawn = [v for t, v in zip(xs, ys, strict=True) if bucket_of(t) == bucket]
        if inside:
            assert max(inside) in drawn and min(inside) in drawn
    assert thin(times[:300], values[:300], buckets=100) == (times[:300], values[:300])


def test_runs_are_told_apart_by_line_style_alone_in_every_panel() -> None:
    from volcanolib.replay.plot import _figure

    other = two_queues()
    other.jobs[1].started = 20.0  # another wait, so that the CDFs differ
    runs = [("first", two_queues()), ("second", other), ("third", two_queues())]
    figure = _figure(runs)
    panels = [ax for ax in figure.axes if ax.lines]
    assert len(panels) == 5
    styles = ("-", "--", ":")
    for ax in panels:
        by_run: dict[str, list[tuple[str, str]]] = {}
        for line in ax.lines:
            run = re.search(r"\((first|second|third)\)$", line.get_label())
            name = run.group(1) if run else line.get_label()  # the CDFs are labelled by the run alone
            by_run.setdefault(name, []).append((line.get_linestyle(), str(line.get_color())))
        assert sorted(by_run) == ["first", "second", "third"], ax.get_title()
        for name, style in zip(("first", "second", "third"), styles, strict=True):
            assert {s for s, _ in by_run[name]} == {style}, ax.get_title()
        # The same colours for every run: colour says which resource, queue or curve, never which run.
        colours = [sorted(c for _, c in by_run[name]) for name in ("first", "second", "third")]
        assert colours[0] == colours[1] == colours[2], ax.get_title()
