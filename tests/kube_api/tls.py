"""A self-signed certificate for the stand-in's HTTPS mode, made once per process with the
``openssl`` command (no Python dependency)."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import tempfile
import threading
from pathlib import Path

_lock = threading.Lock()
_made: tuple[Path, Path] | None = None


class TLSUnavailable(RuntimeError):
    """The ``openssl`` command is missing, so no certificate can be made."""


def certificate() -> tuple[Path, Path]:
    """``(certificate, private key)`` PEM files for ``127.0.0.1`` and ``localhost``, valid
    for a day; the certificate is its own CA (put it in a kubeconfig's
    ``certificate-authority-data``).

    :raises TLSUnavailable: when ``openssl`` is not installed.
    """
    global _made
    with _lock:
        if _made is not None:
            return _made
        openssl = shutil.which("openssl")
        if openssl is None:
            raise TLSUnavailable("the stand-in's HTTPS mode needs the openssl command")
        folder = Path(tempfile.mkdtemp(prefix="kube-api-standin-tls-"))
        cert, key = folder / "cert.pem", folder / "key.pem"
        subprocess.run(
            [
                openssl,
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                str(key),
                "-out",
                str(cert),
                "-days",
                "1",
                "-subj",
                "/CN=kube-api-standin",
                "-addext",
                "subjectAltName=IP:127.0.0.1,DNS:localhost",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,digitalSignature,keyCertSign",
                "-addext",
                "extendedKeyUsage=serverAuth",
            ],
            check=True,
            capture_output=True,
        )
        _made = (cert, key)
        return _made


def server_context() -> ssl.SSLContext:
    """A server-side TLS context with :func:`certificate`."""
    cert, key = certificate()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx
