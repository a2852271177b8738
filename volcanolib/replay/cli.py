"""The ``volcanolib replay`` and ``volcanolib compare`` commands.

::

    volcanolib replay FILES... [--conf FILE] [--format F --nodes FILE] [--period S] [--pod-startup S]
                      [--termination-grace S] [--until S] [--every-period] [--seed N] [--load FACTOR]
                      [--json FILE] [--csv DIR] [--plot FILE] [--export FILE]
    volcanolib compare --conf A --conf B [--conf C] FILES... [--json FILE] [--plot FILE] [...]

Bad input (files, configuration, traces, flags) is one line on standard
error and exit status 2, as for every command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_commands"]


def _seconds(text: str) -> float:
    from volcanolib.replay.inputs import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _period(text: str) -> float:
    value = _seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a period of more than 0, got {text!r}")
    return value


def _load_factor(text: str) -> float:
    from volcanolib.replay.inputs import load_factor

    try:
        return load_factor(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _workload_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="replay files (YAML or JSON), or trace files with --format")
    p.add_argument("--format", metavar="F", help="read the files as a trace of this format (e.g. openb)")
    p.add_argument("--nodes", metavar="FILE", help="the node list of a trace format")
    p.add_argument(
        "--period", type=_period, metavar="S", help="seconds between sessions (default: the file's, else 1s)"
    )
    p.add_argument("--pod-startup", type=_seconds, metavar="S", help="delay from bind to Running (default 0s)")
    p.add_argument(
        "--termination-grace", type=_seconds, metavar="S", help="delay from eviction or deletion to gone (default 0s)"
    )
    p.add_argument("--until", type=_seconds, metavar="S", help="stop this long after the start")
    p.add_argument(
        "--every-period", action="store_true", help="run every session, even those that cannot change anything"
    )
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the tie-breaks (default 0)")
    p.add_argument(
        "--verify", action="store_true", help="check every shortcut against computing afresh (slower, same decisions)"
    )
    p.add_argument(
        "--load",
        type=_load_factor,
        default=1.0,
        metavar="FACTOR",
        help="arrivals FACTOR times as close together (2: twice the load; as a sweep's load; default 1)",
    )
    p.add_argument("--json", metavar="FILE", help="write the summary, jobs, pods and series as JSON (- for stdout)")
    p.add_argument("--plot", metavar="FILE", help="draw the replay (.png, .svg or .html; needs the plot extra)")


def add_commands(sub: Any, run: Callable[[str], Callable[[argparse.Namespace, TextIO], int]] | None = None) -> None:
    """Register ``replay`` and ``compare`` on the ``volcanolib`` command's sub-parsers."""
    replay = sub.add_parser(
        "replay",
        help="replay a workload over time",
        description="Replay a workload over simulated time: jobs arrive, are scheduled every period, "
        "run for their durations and finish; prints a summary.",
    )
    _workload_options(replay)
    replay.add_argument("--conf", metavar="FILE", help="a volcano-scheduler.conf (default: the file's, else built in)")
    replay.add_argument("--csv", metavar="DIR", help="write jobs.csv, pods.csv and series.csv into this directory")
    replay.add_argument(
        "--export", metavar="FILE", help="write the objects read (e.g. a converted trace) as a replay file"
    )
    replay.set_defaults(handler=replay_command)
    compare = sub.add_parser(
        "compare",
        help="replay one workload under several configurations",
        description="Replay the same workload under each configuration and show the summaries side by side.",
    )
    _workload_options(compare)
    compare.add_argument(
        "--conf", metavar="FILE", action="append", required=True, help="a configuration (give two or more)"
    )
    compare.set_defaults(handler=compare_command)


def _load(args: argparse.Namespace) -> Any:
    """The workload of the files (converted and written out first with ``--export``), under ``--load``."""
    from volcanolib.replay.inputs import compress_arrivals, load_workload

    if getattr(args, "export", None):
        workload = _export(args)
    else:
        if args.nodes is not None and args.format is None:
            from volcanolib.errors import ManifestError

            raise ManifestError("--nodes is for trace formats: give --format too")
        workload = load_workload(args.files, format=args.format, nodes=args.nodes)
    return compress_arrivals(workload, args.load)


def _options(args: argparse.Namespace, workload: Any) -> Any:
    from volcanolib.replay.engine import ReplayOptions

    return ReplayOptions.for_workload(
        workload,
        period=args.period,
        pod_startup=args.pod_startup,
        termination_grace=args.termination_grace,
        until=args.until,
        every_period=args.every_period,
        seed=args.seed,
        verify=args.verify,
    )


def _config(path: str | None) -> Any:
    if path is None:
        return None
    from volcanolib.errors import ConfigError
    from volcanolib.framework.config import load_config

    if not Path(path).is_file():
        raise ConfigError("no such file", source=path)
    return load_config(path)


def _write_json(document: Any, target: str, out: TextIO) -> None:
    from volcanolib.errors import ManifestError
    from volcanolib.replay.metrics import to_json

    text = to_json(document)
    if target == "-":
        out.write(text)
        return
    try:
        Path(target).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ManifestError(f"cannot write: {exc.strerror or exc}", source=target) from None


def _render(summaries: Sequence[tuple[str, dict[str, Any]]], out: TextIO) -> None:
    """The summary table of one replay, or the summaries side by side (rich, the ``cli`` extra)."""
    from volcanolib._console import output
    from volcanolib.replay import tables

    with output(out) as console:
        if len(summaries) == 1:
            tables.render_summary(summaries[0][1], console)
        else:
            tables.render_comparison(summaries, console)


def _plot(runs: Sequence[tuple[str, Any]], target: str) -> None:
    """Draw the runs (the ``plot`` extra; without it, one line naming the extra)."""
    from volcanolib.replay.plot import plot

    plot(runs, Path(target))


def _check_extras(args: argparse.Namespace) -> None:
    """Refuse before the run, not after it, what the missing extras could not write."""
    if args.json != "-":
        from volcanolib._console import require_rich

        require_rich(hint="or use --json -")
    if args.plot:
        from volcanolib.replay.plot import require_matplotlib

        require_matplotlib()


def replay_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``volcanolib replay``; the exit status."""
    from volcanolib import _console as console
    from volcanolib.replay.engine import run_replay
    from volcanolib.replay.metrics import summarise

    _check_extras(args)
    workload = _load(args)
    config = _config(args.conf)
    with console.progress("replay", sys.stderr) as report:
        record = run_replay(workload, config, _options(args, workload), progress=report)
    document = summarise(record)
    if args.json:
        _write_json(document, args.json, out)
    if args.csv:
        from volcanolib.replay.csvout import write_csv

        write_csv(record, Path(args.csv))
    if args.plot:
        _plot([(workload.name, record)], args.plot)
    if args.json != "-":
        _render([(workload.name, document)], out)
    return 0


def _export(args: argparse.Namespace) -> Any:
    """Convert the trace, write it as a replay file, and return its workload."""
    from volcanolib.errors import ManifestError

    if args.format is None:
        raise ManifestError("--export writes a converted trace: give --format too")
    from volcanolib.replay.inputs import load_objects
    from volcanolib.replay.traces import export_objects, trace_format

    fmt = trace_format(args.format)
    if fmt.needs_nodes and args.nodes is None:
        raise ManifestError(f"the {args.format} format needs the node list: give it with --nodes FILE")
    objects = fmt.read([Path(p) for p in args.files], Path(args.nodes) if args.nodes else None)
    source = ", ".join(str(p) for p in args.files)
    export_objects(objects, Path(args.export), source=source)
    return load_objects(objects, source=source)


def compare_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``volcanolib compare``; the exit status."""
    from volcanolib import _console as console
    from volcanolib.errors import ConfigError
    from volcanolib.replay.engine import run_replay
    from volcanolib.replay.metrics import summarise

    if len(args.conf) < 2:
        raise ConfigError("compare needs two or more configurations (--conf A --conf B)")
    _check_extras(args)
    labels = _labels(args.conf)
    configs = [_config(path) for path in args.conf]
    workload = _load(args)
    options = _options(args, workload)
    runs = []
    summaries = []
    for label, config in zip(labels, configs, strict=True):
        with console.progress(label, sys.stderr) as report:
            record = run_replay(workload, config, options, progress=report)
        runs.append((label, record))
        summaries.append((label, summarise(record)))
    if args.json:
        _write_json({"runs": [{"name": label, **doc} for label, doc in summaries]}, args.json, out)
    if args.plot:
        _plot(runs, args.plot)
    if args.json != "-":
        _render(summaries, out)
    return 0


def _labels(paths: Sequence[str]) -> list[str]:
    """Each configuration's label: its file name, or its path where two names are the same."""
    names = [Path(p).name for p in paths]
    return [name if names.count(name) == 1 else path for name, path in zip(names, paths, strict=True)]
