"""The ``volcanolib`` command: simulate, check and explain scenarios; list plugins.

::

    volcanolib simulate FILE... [--conf FILE] [--sessions N] [--seed N] [--json] [--timings] [--per-session]
    volcanolib check FILE... [--seed N] [--quiet]
    volcanolib explain FILE... NAMESPACE/PODGROUP [--conf FILE] [--sessions N] [--seed N] [--max-nodes N] [--json]
    volcanolib explain --kubeconfig FILE NAMESPACE/PODGROUP [--conf FILE] [--scheduler-name NAME] ...  (extra 'kube')
    volcanolib plugins [--json]
    volcanolib replay FILE... [--conf FILE] [--format F --nodes FILE] [--json FILE] [--csv DIR] [--plot FILE] ...
    volcanolib compare --conf A --conf B FILE... [--json FILE] [--plot FILE] ...
    volcanolib sweep SWEEP.yaml [--out DIR] [--jobs N] [--dask ADDRESS] [--resume] [--plot FILE]
    volcanolib diff FILE... [--conf FILE] [--sessions N] [--runs K] [--oracle CMD] [--json]
    volcanolib serve [--kubeconfig FILE] ...            (a live cluster's scheduler; extra 'kube')
    volcanolib controllers [--controllers job,podgroup,queue] ...  (its controllers; extra 'kube')

Exit status: 0 success; 1 ``check`` found a difference; 2 bad input (a file
that cannot be read or parsed, a missing or invalid field, a duplicate
object, an unknown plugin or action), reported as one line on standard
error. Warnings go to standard error too, so ``--json`` output stays clean.

Tables are drawn by rich (the ``cli`` extra); without it, a command that
would print them exits 2 with one line naming the extra, while ``--json``
and ``check`` need nothing beyond the runtime.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from volcanolib.errors import VolcanolibError

__all__ = ["main"]

PROG = "volcanolib"


class _Formatter(logging.Formatter):
    """``volcanolib: warning: <file>: message``; the file is set while ``check`` runs one."""

    context = ""

    def format(self, record: logging.LogRecord) -> str:
        return f"{PROG}: {record.levelname.lower()}: {self.context}{record.getMessage()}"


_FORMATTER = _Formatter()


def _setup_logging(stream: TextIO) -> logging.Handler:
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_FORMATTER)
    handler.setLevel(logging.WARNING)
    logger = logging.getLogger("volcanolib")
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.WARNING:
        logger.setLevel(logging.WARNING)
    return handler


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _natural(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    from volcanolib import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Batch scheduling with the architecture of the Volcano scheduler: replay a cluster offline.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    def run_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--conf", metavar="FILE", help="a volcano-scheduler.conf overriding the scenario's scheduler")
        p.add_argument(
            "--sessions", type=_positive, metavar="N", help="scheduling cycles to run (default: the scenario's)"
        )
        p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the tie-breaks (default 0)")

    simulate = sub.add_parser(
        "simulate",
        help="run a scenario and show what the scheduler decides",
        description="Run the scheduler over a cluster snapshot. Several files are merged in order.",
    )
    simulate.add_argument(
        "files", nargs="+", metavar="FILE", help="scenario or manifest files (YAML or JSON); - reads standard input"
    )
    run_options(simulate)
    simulate.add_argument("--json", action="store_true", help="print the result as JSON (stable across runs)")
    simulate.add_argument("--timings", action="store_true", help="add the time spent in each step")
    simulate.add_argument(
        "--per-session",
        action="store_true",
        help="with --json: add each session's binds, evictions and pipelined pods and the PodGroup status it wrote",
    )
    simulate.set_defaults(handler=_simulate)

    check = sub.add_parser(
        "check",
        help="run scenarios and compare them with their expect blocks",
        description="Run each scenario file on its own and compare the result with its expect block.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="scenario files with an expect block")
    check.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the tie-breaks (default 0)")
    check.add_argument("-q", "--quiet", action="store_true", help="print only the files that fail")
    check.set_defaults(handler=_check)

    explain = sub.add_parser(
        "explain",
        usage="%(prog)s [options] FILE... NAMESPACE/PODGROUP\n"
        "       %(prog)s [options] --kubeconfig FILE NAMESPACE/PODGROUP",
        help="explain why a PodGroup is pending",
        description="Run a scenario (or read a live cluster with --kubeconfig), then show why a PodGroup "
        "has pending pods: what it is short of, per pod, per node, per plugin, and its queue as the plugins see it.",
    )
    explain.add_argument(
        "targets",
        nargs="+",
        metavar="[FILE...] NAMESPACE/PODGROUP",
        help="scenario or manifest files (- reads standard input; none with --kubeconfig), then the PodGroup",
    )
    run_options(explain)
    explain.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="explain from the live cluster of this kubeconfig instead of FILEs (extra 'kube'; nothing is written)",
    )
    explain.add_argument(
        "--scheduler-name",
        metavar="NAME",
        action="append",
        dest="scheduler_names",
        help="with --kubeconfig: pods with this spec.schedulerName are the scheduler's (repeatable; default volcano)",
    )
    explain.add_argument(
        "--max-nodes", type=_natural, default=20, metavar="N", help="nodes shown per pod (default 20, 0 = all)"
    )
    explain.add_argument("--json", action="store_true", help="print the explanation as JSON (as serve's /explain)")
    explain.set_defaults(handler=_explain)

    plugins = sub.add_parser(
        "plugins",
        help="list installed plugins and actions",
        description="List installed plugins and actions, the distribution of each, "
        "and the hooks each plugin implements.",
    )
    plugins.add_argument("--json", action="store_true", help="print the list as JSON")
    plugins.set_defaults(handler=_plugins)
    # Every subcommand names its handler the same way (set_defaults(handler=...)), these in their own modules.
    from volcanolib.replay.cli import add_commands as add_replay_commands

    add_replay_commands(sub)
    from volcanolib.kube.live.serve import add_parser as add_serve

    add_serve(sub)
    from volcanolib.kube.live.controllers.manager import add_parser as add_controllers

    add_controllers(sub)
    from volcanolib.kube.live.kubelet import add_parser as add_kubelet_sim

    add_kubelet_sim(sub)
    from volcanolib.sweep.cli import add_parser as add_sweep_command

    add_sweep_command(sub)
    from volcanolib.sim.diff_cli import add_parser as add_diff_command

    add_diff_command(sub)
    return parser


def _process_started() -> float | None:
    """When this process started, as a :func:`time.perf_counter` value; ``None`` where the system does not say."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux
        return None
    return time.perf_counter() - age if 0 <= age < 60 else None


def _simulate(args: argparse.Namespace, out: TextIO) -> int:
    """Load, run, write; with ``--timings`` every phase is timed, from ``args.started`` to the output written."""
    from volcanolib._console import require_rich
    from volcanolib._gc import gc_paused
    from volcanolib.sim.report import write_result
    from volcanolib.sim.runner import load_scenario, run_scenario

    if not args.json:
        require_rich()  # before the run, not after it
    loading = time.perf_counter()
    scenario = load_scenario(args.files, conf=args.conf, sessions=args.sessions)
    running = time.perf_counter()
    result = run_scenario(scenario, seed=args.seed, per_session=args.per_session)
    if args.timings:
        timings = result.timings
        result.timings = {"startup": loading - args.started, "load": running - loading}
        result.timings.update((k, v) for k, v in timings.items() if k not in ("load", "total"))
    with gc_paused():  # the output builds as many objects as the result holds
        write_result(result, out, as_json=args.json, timings=args.timings, started=args.started)
    return 0


def _check(args: argparse.Namespace, out: TextIO) -> int:
    from volcanolib.sim.report import format_check
    from volcanolib.sim.runner import check_scenario

    status = 0
    passed = 0
    for path in args.files:
        _FORMATTER.context = f"{path}: " if len(args.files) > 1 else ""
        try:
            outcome = check_scenario(path, seed=args.seed)
        finally:
            _FORMATTER.context = ""
        if outcome.ok:
            passed += 1
            if not args.quiet:
                out.write(format_check(outcome))
            continue
        out.write(format_check(outcome))
        status = max(status, 2 if outcome.bad_input else 1)
    total = len(args.files)
    if total > 1 or not args.quiet:
        out.write(f"{passed} of {total} scenario{'s' if total != 1 else ''} passed\n")
    return status


def _explain(args: argparse.Namespace, out: TextIO) -> int:
    from volcanolib._console import require_rich, write
    from volcanolib.errors import ConfigError
    from volcanolib.sim.explain import Explanation, explain
    from volcanolib.sim.report import explanation_blocks
    from volcanolib.sim.runner import load_scenario, run_scenario

    *args.files, args.pod_group = args.targets
    if args.kubeconfig is not None and args.files:
        raise ConfigError("give scenario FILEs or --kubeconfig, not both")
    if args.kubeconfig is None and not args.files:
        raise ConfigError("give scenario FILEs, or --kubeconfig to explain from a live cluster")
    if args.kubeconfig is None and args.scheduler_names:
        raise ConfigError("--scheduler-name goes with --kubeconfig (a scenario names its scheduler)")
    if args.kubeconfig is not None and args.sessions is not None:
        raise ConfigError("--sessions goes with scenario FILEs (a live cluster is explained as it is now)")
    if not args.json:
        require_rich()  # before the run, not after it
    exp: Explanation
    if args.kubeconfig is not None:
        exp = _explain_live(args)
    else:
        scenario = load_scenario(args.files, conf=args.conf, sessions=args.sessions)
        exp = explain(run_scenario(scenario, seed=args.seed), args.pod_group)
    if args.json:
        out.write(json.dumps(exp.to_dict(max_nodes=args.max_nodes), indent=2) + "\n")
    else:
        write(out, explanation_blocks(exp, max_nodes=args.max_nodes))
    return 0


def _explain_live(args: argparse.Namespace) -> Any:
    """The explanation of a PodGroup of the live cluster of ``--kubeconfig``, listed once, nothing written."""
    from pathlib import Path

    from volcanolib.errors import ConfigError
    from volcanolib.kube.live._client import load_api
    from volcanolib.kube.live.cache import KubernetesCache
    from volcanolib.kube.live.inspect import InspectionError, Inspector
    from volcanolib.scheduler import Scheduler

    if args.conf and not Path(args.conf).is_file():
        raise ConfigError("no such file", source=args.conf)
    api = load_api(args.kubeconfig)
    names = tuple(dict.fromkeys(args.scheduler_names or ["volcano"]))
    cache = KubernetesCache(api, scheduler_names=names, may_write=lambda: False)
    try:
        # The configuration is checked (and its plugins loaded) before the cluster is read.
        config = Scheduler(cache, Path(args.conf) if args.conf else None, seed=args.seed).config
        cache.list_once()
        try:
            return Inspector(cache, lambda: config, seed=args.seed).explain(args.pod_group)
        except InspectionError as exc:
            raise ConfigError(exc.message) from None
    finally:
        cache.stop(1.0)


def _plugin_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from volcanolib.errors import PluginConfigError
    from volcanolib.framework.registry import Registry, check_plugin_class, hooks_of, one_line
    from volcanolib.framework.traits import trait_names

    registry = Registry()
    plugins: list[dict[str, Any]] = []
    for name, provider in registry.plugins().items():
        row: dict[str, Any] = {"name": name, "distribution": provider.distribution, "target": provider.target}
        try:
            cls = provider.load()
        except Exception as exc:  # a broken plugin is listed, not fatal
            row["hooks"] = []
            row["traits"] = []
            row["error"] = f"cannot load: {one_line(exc)}"
        else:
            row["hooks"] = hooks_of(cls)
            row["traits"] = trait_names(cls, row["hooks"])
            try:
                check_plugin_class(name, cls)
            except PluginConfigError as exc:  # it loads, but no configuration naming it would
                row["error"] = f"hook {exc.hook!r}: {exc.message}" if exc.hook else exc.message
        row["broken"] = "error" in row
        plugins.append(row)
    actions: list[dict[str, Any]] = []
    for name, provider in registry.actions().items():
        row = {"name": name, "distribution": provider.distribution, "target": provider.target}
        try:
            provider.load()
        except Exception as exc:
            row["error"] = f"cannot load: {one_line(exc)}"
        row["broken"] = "error" in row
        actions.append(row)
    return plugins, actions


def _plugins(args: argparse.Namespace, out: TextIO) -> int:
    plugins, actions = _plugin_rows()
    if args.json:
        out.write(json.dumps({"plugins": plugins, "actions": actions}, sort_keys=True, indent=2) + "\n")
        return 0
    from volcanolib._console import write
    from volcanolib.sim.report import plugin_blocks

    write(out, plugin_blocks(plugins, actions))
    return 0


#: Commands that run one scenario; run as the program, they do so without the cyclic collector.
_ONE_SCENARIO = frozenset({"simulate", "explain"})


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status.

    :param argv: the arguments (``sys.argv[1:]`` when omitted: then the
        process is the command, and ``simulate --timings`` counts its
        ``total`` and ``startup`` from the start of the process).
    """
    # The whole command, as the person running it waits for it (imports included), for --timings.
    started = (_process_started() if argv is None else None) or time.perf_counter()
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        if args.command == "explain" and not any(arg.startswith("-") for arg in extra):
            args.targets += extra  # FILE... and NAMESPACE/PODGROUP with options between them
        else:
            parser.parse_args(argv)  # says which arguments are not known, and exits 2
    args.started = started
    if argv is None and args.command in _ONE_SCENARIO:
        # The process is this command, and the scenario's objects live until it ends: the
        # collector, which the loader and the sessions pause anyway, would only walk them
        # again in between (about a quarter of a second per pause on a 50,000-pod dump).
        gc.disable()
    handler = _setup_logging(sys.stderr)
    try:
        handler_of_command: Callable[[argparse.Namespace, TextIO], int] = args.handler
        return handler_of_command(args, sys.stdout)
    except VolcanolibError as exc:
        message = " ".join(str(exc).split("\n"))
        sys.stderr.write(f"{PROG}: error: {message}\n")
        return 2
    except BrokenPipeError:  # `volcanolib simulate ... | head`
        return 0
    finally:
        logging.getLogger("volcanolib").removeHandler(handler)
        sys.stdout.flush()
        if argv is None:
            # The process ends next. Its last garbage collections would walk every object of the
            # result, which took seconds on a 50,000-pod dump: the memory is returned all at once.
            gc.disable()
            gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
