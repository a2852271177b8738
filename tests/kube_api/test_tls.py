"""HTTPS with a bearer token: what a kubeconfig for a real cluster carries."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .bulk import make_node
from .server import KubeApiServer

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command makes the certificate")
kubernetes = pytest.importorskip("kubernetes", reason="the kube extra (pip install volcanolib[kube]) is not installed")
from kubernetes import client, config  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402


@pytest.fixture
def secure(kube_api_factory: Any) -> KubeApiServer:
    server: KubeApiServer = kube_api_factory(tls=True, token="s3cret")
    server.create("nodes", make_node("n1"))
    return server


def _client(kubeconfig: Path) -> client.CoreV1Api:
    cfg = client.Configuration()
    config.load_kube_config(str(kubeconfig), client_configuration=cfg)
    return client.CoreV1Api(client.ApiClient(cfg))


def test_the_client_connects_with_the_kubeconfigs_ca_and_token(secure: KubeApiServer, tmp_path: Path) -> None:
    assert secure.url.startswith("https://127.0.0.1:")
    core = _client(secure.write_kubeconfig(tmp_path / "kubeconfig"))
    assert [n.metadata.name for n in core.list_node().items] == ["n1"]


def test_a_wrong_token_is_401_but_the_version_is_public(secure: KubeApiServer, tmp_path: Path) -> None:
    path = secure.write_kubeconfig(tmp_path / "kubeconfig")
    doc = json.loads(path.read_text())
    doc["users"][0]["user"]["token"] = "wrong"
    path.write_text(json.dumps(doc))
    with pytest.raises(ApiException) as err:
        _client(path).list_node()
    assert err.value.status == 401 and json.loads(err.value.body)["reason"] == "Unauthorized"
    assert secure.ca_file is not None
    ctx = ssl.create_default_context(cafile=str(secure.ca_file))
    with urllib.request.urlopen(f"{secure.url}/version", context=ctx) as resp:
        assert json.loads(resp.read())["major"] == "1"
    with pytest.raises(urllib.error.HTTPError) as raw:
        urllib.request.urlopen(f"{secure.url}/api/v1/nodes", context=ctx)
    assert raw.value.code == 401


@pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl is not installed (Debian package kubernetes-client)"
)
def test_kubectl_over_https_with_the_token(secure: KubeApiServer, tmp_path: Path) -> None:
    kubeconfig = secure.write_kubeconfig(tmp_path / "kubeconfig")
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    ok = subprocess.run([kubectl, "get", "nodes", "-o", "name"], env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.split() == ["node/n1"]
    bad = subprocess.run(
        [kubectl, "get", "nodes", "--token=wrong"], env=env, capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 1 and "Unauthorized" in bad.stderr
