"""The picture of a replay (``--plot FILE``), with matplotlib (the ``plot`` extra).

One figure of five panels, each run of a comparison drawn over the others
(one line style per run in every panel, named in the legends; colours tell
resources, queues or pod states apart, never runs):

- utilisation per resource over time (allocated / allocatable, %);
- pending and running pods over time;
- allocation per queue over time (its dominant-resource share of the cluster, %);
- the CDFs of the jobs' waits and of their completion times.

Time runs from the start of each replay, in seconds, minutes, hours or days
as the longest run suits. The format follows the file's suffix: ``.png``,
``.svg``, or ``.html``, a self-contained page with the SVG inlined and the
summary figures of each run in a table. The figure is drawn off-screen
(matplotlib's Agg canvas, no window, no global state); SVG output is
byte-identical for identical records.
"""

from __future__ import annotations

import functools
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from volcanolib.api.resource import share
from volcanolib.errors import MissingExtraError, VolcanolibError
from volcanolib.replay.metrics import (
    completion_times,
    queue_names,
    resource_names,
    share_over_time,
    summarise,
    waits,
)
from volcanolib.replay.records import ReplayRecord

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["BUCKETS", "FORMATS", "plot", "require_matplotlib", "thin"]

#: Time buckets of a curve (:func:`thin`): about two per pixel of the widest panel.
BUCKETS: Final = 2000
#: The suffixes :func:`plot` writes.
FORMATS: Final = (".png", ".svg", ".html")
_STYLES: Final = ("-", "--", ":", "-.")
#: The colour of the wait and completion-time curves, whatever the run.
_CDF_COLOUR: Final = "C0"
_UNITS: Final = ((86400.0 * 2, 86400.0, "days"), (3600.0 * 2, 3600.0, "hours"), (120.0, 60.0, "minutes"))


def _unit(span: float) -> tuple[float, str]:
    for above, seconds, name in _UNITS:
        if span >= above:
            return seconds, name
    return 1.0, "seconds"


def _label(what: str, *, run: str, runs: int) -> str:
    return what if runs == 1 else f"{what} ({run})"


def thin(times: Sequence[float], values: Sequence[float], buckets: int = BUCKETS) -> tuple[list[float], list[float]]:
    """A step function with at most four points per time bucket, drawn the same at the figure's resolution.

    Within each of ``buckets`` equal slices of the time range, only the
    first point, the lowest, the highest and the last are kept, so every
    peak and trough still shows; a series with no more points than three per
    bucket is returned whole.

    Runtime complexity: linear in the number of points.

    >>> thin([0.0, 1.0, 2.0, 3.0, 4.0], [0.0, 5.0, 1.0, 2.0, 0.0], buckets=1)
    ([0.0, 1.0, 4.0], [0.0, 5.0, 0.0])
    """
    n = len(times)
    span = times[-1] - times[0] if n else 0.0
    if n <= 3 * buckets or span <= 0:
        return list(times), list(values)
    first, scale = times[0], buckets / span
    kept_t: list[float] = []
    kept_v: list[float] = []
    i = 0
    while i < n:
        bucket = min(int((times[i] - first) * scale), buckets - 1)
        low = high = j = i
        while j < n and min(int((times[j] - first) * scale), buckets - 1) == bucket:
            if values[j] < values[low]:
                low = j
            elif values[j] > values[high]:
                high = j
            j += 1
        for k in sorted({i, low, high, j - 1}):
            kept_t.append(times[k])
            kept_v.append(values[k])
        i = j
    return kept_t, kept_v


def _step(ax: Axes, times: Sequence[float], values: Sequence[float], **style: Any) -> None:
    xs, ys = thin(times, values)
    ax.step(xs, ys, where="post", **style)


def _cdf(ax: Axes, values: Sequence[float], scale: float, label: str, style: str) -> None:
    ordered = sorted(values)
    if not ordered:
        return
    n = len(ordered)
    xs = [0.0, *(v / scale for v in ordered)]
    ys = [0.0, *((i + 1) / n for i in range(n))]
    # One colour for every run, as a resource or a queue keeps its colour in the other panels: runs are
    # told apart by line style alone, in every panel.
    ax.step(xs, ys, where="post", color=_CDF_COLOUR, linestyle=style, label=label)


def _figure(runs: Sequence[tuple[str, ReplayRecord]]) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(12, 11), layout="constrained")
    FigureCanvasAgg(fig)  # draw off-screen, whatever backend pyplot would pick
    grid = fig.add_gridspec(3, 2)
    util, pods = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    queues = fig.add_subplot(grid[1, :])
    wait, jct = fig.add_subplot(grid[2, 0]), fig.add_subplot(grid[2, 1])
    span = max((record.end - record.start for _, record in runs), default=0.0)
    scale, unit = _unit(span)
    names = sorted({name for _, record in runs for name in resource_names(record)})
    queue_list = sorted({q for _, record in runs for q in queue_names(record)})
    cycle = [f"C{i % 10}" for i in range(max(len(names), len(queue_list)))]
    for index, (run, record) in enumerate(runs):
        style = _STYLES[index % len(_STYLES)]
        label = functools.partial(_label, run=run, runs=len(runs))
        samples = sorted(record.samples, key=lambda s: s.time)
        if samples:
            # Each step holds until the next sample, the last one until the end of the replay.
            times = [(s.time - record.start) / scale for s in samples] + [(record.end - record.start) / scale]
            samples.append(samples[-1])
            for colour, name in zip(cycle, names, strict=False):
                values = [100 * share(s.allocated.get(name, 0.0), s.capacity.get(name, 0.0)) for s in samples]
                _step(util, times, values, color=colour, linestyle=style, label=label(name))
            pending = [s.pending_pods for s in samples]
            running = [s.running_pods for s in samples]
            _step(pods, times, pending, color="C0", linestyle=style, label=label("pending"))
            _step(pods, times, running, color="C1", linestyle=style, label=label("running"))
            own = resource_names(record)
            for colour, queue in zip(cycle, queue_list, strict=False):
                values = [100 * share_over_time(s, queue, own) for s in samples]
                _step(queues, times, values, color=colour, linestyle=style, label=label(queue))
        _cdf(wait, waits(record.jobs), scale, run, style)
        _cdf(jct, completion_times(record.jobs), scale, run, style)
    for ax, title, ylabel in (
        (util, "Utilisation per resource", "allocated / allocatable (%)"),
        (pods, "Pods", "pods"),
        (queues, "Allocation per queue", "dominant share of the cluster (%)"),
        (wait, "Wait (job started - arrival)", "fraction of started jobs"),
        (jct, "Job completion time (finish - arrival)", "fraction of ended jobs"),
    ):
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if ax.lines:
            # Outside the panel, on its right: "best" would test every point of every curve.
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
        else:
            ax.text(0.5, 0.5, "nothing to draw", ha="center", va="center", transform=ax.transAxes)
    for ax in (util, pods, queues):
        ax.set_xlabel(f"time since the start ({unit})")
    for ax in (wait, jct):
        ax.set_xlabel(unit)
        ax.set_ylim(0, 1.02)
        right = ax.get_xlim()[1]
        ax.set_xlim(0, right if right > 0 else 1.0)  # all waits 0: still a readable axis
    util.set_ylim(0, 102)
    pods.yaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


def require_matplotlib() -> None:
    """Make sure matplotlib can be imported.

    :raises MissingExtraError: it is not installed; one line naming the ``plot`` extra.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise MissingExtraError("plot", "matplotlib", "--plot") from None


def _page(runs: Sequence[tuple[str, ReplayRecord]], svg: str) -> str:
    from volcanolib.replay.tables import comparison_table

    spec = comparison_table([(name, summarise(record)) for name, record in runs])
    head = "".join(f"<th>{html.escape(h)}</th>" for h in spec.headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>\n" for row in spec.rows)
    title = "volcanolib replay: " + ", ".join(html.escape(name) for name, _ in runs)
    svg = svg[svg.index("<svg") :]  # the XML declaration and doctype have no place inside HTML
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n<style>\n"
        "body { font-family: sans-serif; margin: 2em; }\n"
        "table { border-collapse: collapse; margin-bottom: 2em; }\n"
        "th, td { padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; }\n"
        "td:not(:first-child), th:not(:first-child) { text-align: right; }\n"
        "svg { max-width: 100%; height: auto; }\n"
        f"</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
        f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>\n"
        f"{svg}\n</body>\n</html>\n"
    )


def plot(runs: Sequence[tuple[str, ReplayRecord]], path: Path) -> None:
    """Draw the runs into ``path``: PNG, SVG or a self-contained HTML page, by its suffix.

    :param runs: ``(name, record)`` pairs, overlaid in this order (a single
        run needs no name in the legends).
    :param path: the file to write (replaced if it exists).
    :raises MissingExtraError: matplotlib is not installed (the ``plot`` extra).
    :raises VolcanolibError: the suffix is not one of :data:`FORMATS`, or
        the file cannot be written (one line naming it).
    """
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise VolcanolibError(f"{path}: a plot is written as .png, .svg or .html, not {suffix or 'no suffix'!r}")
    if not runs:
        raise VolcanolibError(f"{path}: nothing to plot: no replay")
    require_matplotlib()
    import matplotlib

    # A fixed salt for the SVG's element ids and no date: the same records give the same bytes.
    with matplotlib.rc_context({"svg.hashsalt": "volcanolib", "svg.fonttype": "path"}):
        fig = _figure(runs)
        try:
            if suffix == ".png":
                fig.savefig(path, format="png", dpi=100)
                return
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg", metadata={"Date": None})
            text = buffer.getvalue() if suffix == ".svg" else _page(runs, buffer.getvalue())
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise VolcanolibError(f"{path}: cannot write: {exc.strerror or exc}") from exc
