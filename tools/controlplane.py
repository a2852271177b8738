"""Build and run the test control plane: kube-apiserver and etcd from their Go modules.

The Go program is ``oracle/cmd/cluster`` (in the ``oracle`` Go module, whose
``go.mod`` pins the Kubernetes and Volcano releases). :func:`build` compiles
it into ``.cache/go/bin`` of the repository (git-ignored); the Go build cache
makes a build with nothing changed take a second or two. :class:`ControlPlane`
runs it in a child process: ``tools/cluster`` (by hand) and the test suite's
fixtures (``tests/realcluster.py``) both use this module.

What the control plane provides (with some of kube-controller-manager's
controllers), and what it does not (no scheduler, no kubelet): see
``oracle/cmd/cluster``'s package comment and docs/test-cluster.md.
"""

from __future__ import annotations

import base64
import json
import shutil
import signal
import subprocess
import tempfile
import threading
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

__all__ = ["ROOT", "BuildError", "ControlPlane", "GoMissing", "build", "command", "crd_dir"]

#: The repository's root.
ROOT = Path(__file__).resolve().parents[1]
#: The Go module that holds the control plane.
MODULE = ROOT / "oracle"
#: Where built programs go (git-ignored).
BIN = ROOT / ".cache" / "go" / "bin"


class GoMissing(RuntimeError):
    """No ``go`` command on PATH."""


class BuildError(RuntimeError):
    """``go build`` (or ``go list``) failed; the message holds its output."""


def _go(*args: str, timeout: float = 1800) -> str:
    go = shutil.which("go")
    if go is None:
        raise GoMissing("needs go to build the control plane (no 'go' on PATH)")
    done = subprocess.run([go, *args], cwd=MODULE, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise BuildError(f"go {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def build(program: str = "cluster") -> Path:
    """Build ``oracle/cmd/<program>`` if anything changed and return the executable's path.

    :raises GoMissing: when ``go`` is not on PATH.
    :raises BuildError: when the build fails.
    """
    BIN.mkdir(parents=True, exist_ok=True)
    out = BIN / program
    # No VCS stamp: the build needs no git (a source archive builds too) and a commit does not rebuild it.
    _go("build", "-buildvcs=false", "-o", str(out), f"./cmd/{program}")
    return out


def crd_dir() -> Path:
    """Volcano's CRD manifests, from the ``volcano.sh/volcano`` module at the release ``go.mod`` pins."""
    module = _go("list", "-m", "-f", "{{.Dir}}", "volcano.sh/volcano", timeout=600).strip()
    path = Path(module) / "config" / "crd" / "volcano" / "bases"
    if not path.is_dir():
        raise BuildError(f"the volcano.sh/volcano module has no {path}")
    return path


def command(
    kubeconfig: str | Path,
    *,
    data_dir: str | Path | None = None,
    port: int = 0,
    audit_log: str | Path | None = None,
    apiserver_args: Sequence[str] = (),
    controllers: Sequence[str] | None = None,
    verbose: bool = False,
) -> list[str]:
    """Build the control plane and return the command line that runs it (see ``oracle/cmd/cluster``).

    :param kubeconfig: where the admin kubeconfig is written.
    :param data_dir: state kept across runs (etcd's data, credentials,
        ports); ``None``: a temporary directory the program removes at exit.
    :param port: the API server's port (0: a free one, or the one ``data_dir`` recorded).
    :param audit_log: write the API server's audit log (JSON lines) here.
    :param apiserver_args: more ``kube-apiserver`` flags (``--watch-cache=false``).
    :param controllers: kube-controller-manager's controllers to run (names
        or aliases); ``None``: the program's default set; empty: none.
    :param verbose: pass the API server's and etcd's informational logs through.
    """
    argv = [str(build()), "--kubeconfig", str(kubeconfig), "--crd-dir", str(crd_dir())]
    if data_dir is not None:
        argv += ["--data-dir", str(data_dir)]
    if port:
        argv += ["--port", str(port)]
    if audit_log is not None:
        argv += ["--audit-log", str(audit_log)]
    argv += [f"--apiserver-arg={arg}" for arg in apiserver_args]
    if controllers is not None:
        argv.append(f"--controllers={','.join(controllers) or 'none'}")
    if verbose:
        argv.append("--verbose")
    return argv


class ControlPlane:
    """One control plane in a child process, its state in ``data_dir`` so that it can be restarted.

    :param data_dir: where etcd's data, the credentials, the ports and the
        admin kubeconfig (``admin.kubeconfig``) live; a temporary directory
        (removed by :meth:`remove`) when ``None``.
    :param audit: keep an audit log (``audit.log`` in ``data_dir``).
    :param apiserver_args: more ``kube-apiserver`` flags.
    :param controllers: kube-controller-manager's controllers (see :func:`command`).
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        audit: bool = False,
        apiserver_args: Sequence[str] = (),
        controllers: Sequence[str] | None = None,
    ) -> None:
        self.owned = data_dir is None
        self.data_dir = Path(tempfile.mkdtemp(prefix="controlplane-") if data_dir is None else data_dir)
        self.kubeconfig = self.data_dir / "admin.kubeconfig"
        self.audit_log = self.data_dir / "audit.log" if audit else None
        self.apiserver_args = tuple(apiserver_args)
        self.controllers = None if controllers is None else tuple(controllers)
        #: The API server's ``https://127.0.0.1:PORT`` and etcd's ``http://127.0.0.1:PORT`` once started.
        self.url = ""
        self.etcd_url = ""
        self._argv: list[str] | None = None
        self._process: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None

    @property
    def pid(self) -> int | None:
        """The child process's id while it runs (to read its CPU time and memory)."""
        return self._process.pid if self.running and self._process is not None else None

    @property
    def running(self) -> bool:
        """Whether the child process runs."""
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 180.0) -> ControlPlane:
        """Build if needed, start, and return once it prints ``ready``.

        :raises GoMissing: when ``go`` is not on PATH.
        :raises BuildError: when the build fails.
        :raises RuntimeError: when it stops or is not ready within ``timeout`` seconds (its log attached).
        """
        if self._argv is None:
            self._argv = command(
                self.kubeconfig,
                data_dir=self.data_dir,
                audit_log=self.audit_log,
                apiserver_args=self.apiserver_args,
                controllers=self.controllers,
            )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.data_dir / "cluster.log"
        self._log = log_path.open("a")
        process = subprocess.Popen(self._argv, stdout=subprocess.PIPE, stderr=self._log, text=True)
        self._process = process
        lines: list[str] = []
        done = threading.Event()

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                lines.append(line.strip())
                if line.strip() == "ready":
                    done.set()
            done.set()

        threading.Thread(target=read, daemon=True).start()
        if not done.wait(timeout) or "ready" not in lines:
            self.stop()
            tail = log_path.read_text()[-4000:]
            raise RuntimeError(f"the control plane did not start (stdout: {lines}); its log ends with:\n{tail}")
        for line in lines:
            what, _, url = line.partition(" ")
            if what == "etcd":
                self.etcd_url = url
            elif what == "apiserver":
                self.url = url
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM, then wait (SIGKILL after ``timeout`` seconds); the state stays in ``data_dir``."""
        process = self._process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def restart(self) -> None:
        """Stop and start again: same ports, same data, same credentials."""
        self.stop()
        self.start()

    def remove(self) -> None:
        """Stop, and delete ``data_dir`` if this object made it."""
        self.stop()
        if self.owned:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    # ------------------------------------------------------------------ etcd

    def _etcd(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.etcd_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            result: dict[str, Any] = json.load(answer)
        return result

    def etcd_revision(self) -> int:
        """etcd's current revision (what the API server calls the resourceVersion)."""
        key = base64.b64encode(b"/registry/").decode()
        return int(self._etcd("/v3/kv/range", {"key": key, "limit": 1})["header"]["revision"])

    def compact(self) -> int:
        """Compact etcd's history up to its current revision and return that revision.

        A watch or paginated list from an earlier resourceVersion that reaches
        etcd then fails with ``410 Gone``.
        """
        revision = self.etcd_revision()
        self._etcd("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision
