#!/usr/bin/env python3
"""Volcano's own scheduler and controller manager, built from the pinned Go module, and the load helper.

    python tools/volcanobin.py scheduler --kubeconfig FILE --scheduler-conf FILE [flags of vc-scheduler]
    python tools/volcanobin.py controller-manager --kubeconfig FILE [flags of vc-controller-manager]
    python tools/volcanobin.py apiload post|watch --kubeconfig FILE ...

The programs are ``oracle/cmd/vc-scheduler``, ``oracle/cmd/vc-controller-manager``
(Volcano's own ``cmd/.../app`` packages at the release ``oracle/go.mod``
pins, imported, not copied) and ``oracle/cmd/apiload`` (ours: requests sent
at the server's pace, objects watched). :func:`build` compiles them into
``.cache/go/bin`` as :mod:`controlplane` compiles the control plane. The live
benchmarks (``benchmarks/live.py``) and the side-by-side tests use the
functions here; run as a script, it builds one program and runs it in the
foreground.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from controlplane import BuildError, GoMissing
from controlplane import build as _build

__all__ = ["PROGRAMS", "SIDES", "VOLCANO_CONTROLLERS", "BuildError", "Flow", "GoMissing", "Watch", "build",
           "controllers_command", "free_port", "post", "python_env", "scheduler_command",
           "volcano_release"]  # fmt: skip

#: The name given on the command line -> the program under ``oracle/cmd``.
PROGRAMS = {"scheduler": "vc-scheduler", "controller-manager": "vc-controller-manager", "apiload": "apiload"}

#: The controllers of Volcano's controller manager that ``volcanolib controllers`` has counterparts of
#: (its jobflow and jobtemplate controllers need CRDs the control plane does not install).
VOLCANO_CONTROLLERS = ("job-controller", "pg-controller", "queue-controller", "gc-controller")

_BUILT: dict[str, Path] = {}


def build(program: str) -> Path:
    """Build ``oracle/cmd/<program>`` if anything changed; the executable's path.

    :raises GoMissing: when ``go`` is not on PATH.
    :raises BuildError: when the build fails.
    """
    name = PROGRAMS.get(program, program)
    if name not in _BUILT:  # once per process: a build with nothing changed still takes a second or two
        _BUILT[name] = _build(name)
    return _BUILT[name]


def volcano_release() -> str:
    """The Volcano release the programs are built from (``volcano.sh/volcano v1.14.1``)."""
    for line in (Path(__file__).resolve().parents[1] / "oracle" / "go.mod").read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["volcano.sh/volcano"]:
            return f"volcano.sh/volcano {parts[1]}"
    raise BuildError("oracle/go.mod does not require volcano.sh/volcano")


#: The two sides: Volcano's programs, and volcanolib's commands.
SIDES = ("volcano", "volcanolib")


def scheduler_command(side: str, kubeconfig: str | Path, conf: str | Path, *, metrics_port: int) -> list[str]:
    """One side's scheduler on one cluster, with ``conf`` as its volcano-scheduler.conf.

    ``volcano``: Volcano's ``vc-scheduler`` (no leader election, metrics on
    ``127.0.0.1:metrics_port``); ``volcanolib``: ``volcanolib serve``
    (the same). The programs are built first, when needed.
    """
    address = f"127.0.0.1:{metrics_port}"
    if side == "volcano":
        return [str(build("scheduler")), "--kubeconfig", str(kubeconfig), "--scheduler-conf", str(conf),
                "--leader-elect=false", "--enable-metrics", f"--listen-address={address}",
                "--healthz-address=127.0.0.1:0", "--cache-dumper=false"]  # fmt: skip
    return [sys.executable, "-m", "volcanolib", "serve", "--kubeconfig", str(kubeconfig), "--conf", str(conf),
            "--metrics-address", address, "--no-inspection"]  # fmt: skip


def controllers_command(side: str, kubeconfig: str | Path, *, extra: Sequence[str] = ()) -> list[str]:
    """One side's controllers on one cluster: Volcano's controller manager (no leader election,
    :data:`VOLCANO_CONTROLLERS` only), or ``volcanolib controllers``; ``extra`` flags after."""
    if side == "volcano":
        argv = [str(build("controller-manager")), "--kubeconfig", str(kubeconfig), "--leader-elect=false",
                f"--controllers={','.join(VOLCANO_CONTROLLERS)}", "--healthz-address=127.0.0.1:0",
                "--listen-address=127.0.0.1:0"]  # fmt: skip
    else:
        argv = [sys.executable, "-m", "volcanolib", "controllers", "--kubeconfig", str(kubeconfig)]
    return [*argv, *extra]


class Flow:
    """One side's whole flow on one cluster, as processes: fake kubelets, the scheduler, the controllers.

    ``volcanolib kubelet-sim`` registers ``nodes`` nodes (``sim-0`` ...) and
    runs the pods bound to them (``pod_startup`` seconds to Running, then
    as their annotations say); then the side's scheduler
    (:func:`scheduler_command`, ``conf``) and controllers
    (:func:`controllers_command`, ``controllers_extra``) start. Their output
    goes to ``logs/<side>-<program>.log``.
    """

    def __init__(
        self,
        side: str,
        kubeconfig: str | Path,
        conf: str | Path,
        logs: Path,
        *,
        nodes: int = 4,
        shape: Sequence[str] = ("--cpu", "8", "--memory", "32Gi"),
        pod_startup: str = "1s",
        controllers_extra: Sequence[str] = (),
        metrics_port: int = 0,
    ) -> None:
        self.side = side
        self.kubeconfig = Path(kubeconfig)
        self.logs = logs
        kubelet = [sys.executable, "-m", "volcanolib", "kubelet-sim", "--kubeconfig", str(kubeconfig),
                   "--nodes", str(nodes), "--pod-startup", pod_startup, *shape]  # fmt: skip
        self.commands = {
            "kubelet-sim": kubelet,
            "scheduler": scheduler_command(side, kubeconfig, conf, metrics_port=metrics_port or free_port()),
            "controllers": controllers_command(side, kubeconfig, extra=controllers_extra),
        }
        #: The running processes, by program.
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, timeout: float = 120.0) -> None:
        """Start the kubelets (and wait for their nodes), then the scheduler and the controllers.

        :raises RuntimeError: when the kubelets do not register their nodes within ``timeout`` seconds.
        """
        self.logs.mkdir(parents=True, exist_ok=True)
        log = (self.logs / f"{self.side}-kubelet-sim.log").open("wb")
        kubelet = subprocess.Popen(self.commands["kubelet-sim"], stdout=subprocess.PIPE, stderr=log, env=python_env())
        self.processes["kubelet-sim"] = kubelet
        assert kubelet.stdout is not None
        ready = threading.Event()

        def read(stream: IO[bytes]) -> None:
            for line in stream:
                if b"nodes ready" in line:
                    ready.set()
                log.write(line)
                log.flush()

        threading.Thread(target=read, args=(kubelet.stdout,), daemon=True).start()
        if not ready.wait(timeout):
            self.stop()
            raise RuntimeError(f"kubelet-sim did not register its nodes (see {log.name})")
        for program in ("scheduler", "controllers"):
            self.launch(program)

    def launch(self, program: str) -> None:
        """Start ``program`` (``scheduler`` or ``controllers``), its output appended to its log."""
        with (self.logs / f"{self.side}-{program}.log").open("ab") as out:
            self.processes[program] = subprocess.Popen(
                self.commands[program], stdout=out, stderr=subprocess.STDOUT, env=python_env()
            )

    def kill(self, program: str) -> None:
        """SIGKILL ``program``: it stops wherever it was, as a crash would stop it."""
        process = self.processes.pop(program)
        process.kill()
        process.wait()

    def stop(self) -> None:
        """SIGTERM each process, the controllers first (SIGKILL after 20 s)."""
        for program in ("controllers", "scheduler", "kubelet-sim"):
            process = self.processes.pop(program, None)
            if process is None:
                continue
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def python_env() -> dict[str, str]:
    """The environment, with this checkout first on PYTHONPATH (``python -m volcanolib`` runs this one)."""
    root = str(Path(__file__).resolve().parents[1])
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p))


def post(kubeconfig: str | Path, requests: Iterable[dict[str, Any]], *, workers: int = 16) -> dict[str, Any]:
    """Send requests with ``apiload post`` (see ``oracle/cmd/apiload``); its summary.

    Each request is ``{"method", "path", "body"}`` (``method`` defaults to
    POST), with ``"status"`` to write a created object's status after it.

    :raises RuntimeError: when a request is refused or apiload fails.
    """
    argv = [str(build("apiload")), "post", "--kubeconfig", str(kubeconfig), "--workers", str(workers)]
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        assert process.stdin is not None and process.stdout is not None
        try:
            for request in requests:
                process.stdin.write(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        finally:
            process.stdin.close()
        out = process.stdout.read()
        process.wait()
        err.seek(0)
        message = err.read()
    if process.returncode != 0:
        raise RuntimeError(f"apiload post failed: {message.decode(errors='replace').strip()}")
    summary: dict[str, Any] = json.loads(out)
    if summary["errors"]:
        raise RuntimeError(f"apiload post: {len(summary['errors'])} or more refused, first {summary['errors'][0]}")
    return summary


class Watch:
    """``apiload watch`` in a child process: every change of one field of the objects of one collection.

    ``field_selector`` narrows the objects watched (``metadata.name=new-0``).
    :attr:`changes` holds ``(unix seconds, "namespace/name", value)`` in
    arrival order; :meth:`wait` waits for a condition on them.
    """

    def __init__(self, kubeconfig: str | Path, path: str, field: str, *, field_selector: str = "") -> None:
        argv = [str(build("apiload")), "watch", "--kubeconfig", str(kubeconfig), "--path", path, "--field", field]
        if field_selector:
            argv += ["--field-selector", field_selector]
        self.changes: list[tuple[float, str, str]] = []
        self.synced = threading.Event()
        self._cond = threading.Condition()
        self._process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._reader = threading.Thread(target=self._read, args=(self._process.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            seconds, _, rest = line.rstrip("\n").partition(" ")
            if seconds == "synced":
                self.synced.set()
                continue
            key, _, value = rest.partition(" ")
            with self._cond:
                self.changes.append((float(seconds), key, value))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def latest(self) -> dict[str, str]:
        """Each object's value as last seen."""
        with self._cond:
            return {key: value for _t, key, value in self.changes}

    def wait(self, condition: Any, timeout: float) -> bool:
        """Wait until ``condition(changes)`` holds (checked at each change); whether it did."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not condition(self.changes):
                left = deadline - time.monotonic()
                if left <= 0 or self._process.poll() is not None:
                    return bool(condition(self.changes))
                self._cond.wait(min(left, 1.0))
        return True

    def stop(self) -> None:
        """Stop watching."""
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._reader.join(10)


def main(argv: list[str]) -> int:
    """Build one program and run it in the foreground with the rest of the arguments."""
    if not argv or argv[0] not in PROGRAMS:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        path = build(argv[0])
    except (GoMissing, BuildError) as exc:
        print(f"tools/volcanobin.py: {exc}", file=sys.stderr)
        return 2
    os.execv(path, [str(path), *argv[1:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
