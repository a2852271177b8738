"""``serve --webhooks``: AdmissionReviews answered with volcanolib's admission rules, over HTTPS."""

from __future__ import annotations

import base64
import copy
import http.client
import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest_helpers import eventually
from realcluster import RealCluster

from volcanolib.cli import main
from volcanolib.errors import ConfigError, ManifestError
from volcanolib.kube.live import load_api, webhooks
from volcanolib.kube.live._client import ApiError
from volcanolib.kube.live.serve import Server
from volcanolib.kube.live.webhooks import ReviewError, review, serve_webhooks, tls_context
from volcanolib.manifests import admission

JOB_KIND = {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"}
QUEUE_KIND = {"group": "scheduling.volcano.sh", "version": "v1beta1", "kind": "Queue"}
DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "webhooks.yaml"
POD_GROUP_KIND = {"group": "scheduling.volcano.sh", "version": "v1beta1", "kind": "PodGroup"}


def _review(obj: Any, kind: dict[str, str] = JOB_KIND, operation: str = "CREATE") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u-1", "kind": kind, "operation": operation, "namespace": "ns", "object": obj},
    }


def _job(**spec: Any) -> dict[str, Any]:
    task = {
        "name": "worker",
        "replicas": 2,
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"tasks": [task], **spec},
    }


def _apply(obj: Any, patch: list[dict[str, Any]]) -> Any:
    """Apply a JSON Patch of add, remove and replace operations on mappings (what the webhook sends)."""
    doc = copy.deepcopy(obj)
    for op in patch:
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = doc
        for part in parents:
            target = target[part]
        if op["op"] == "remove":
            del target[last]
        else:
            assert op["op"] in ("add", "replace") and (op["op"] == "add" or last in target)
            target[last] = op["value"]
    return doc


def _patched(obj: Any, answer: dict[str, Any]) -> Any:
    response = answer["response"]
    assert response["allowed"] is True
    if "patch" not in response:
        return obj
    assert response["patchType"] == "JSONPatch"
    return _apply(obj, json.loads(base64.b64decode(response["patch"])))


# ---------------------------------------------------------------------- the pure answer


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"policies": [{"event": "PodFailed", "action": "RestartJobb"}]}, "spec.policies[0].action"),
        ({"minAvailable": 5}, "spec.minAvailable"),
        ({"plugins": {"nosuch": []}}, "spec.plugins.nosuch"),
    ],
)
def test_a_job_volcano_refuses_is_refused_with_the_admission_modules_message(spec: dict[str, Any], field: str) -> None:
    job = _job(**spec)
    with pytest.raises(ManifestError) as refused:
        admission.admit_job(job)
    assert refused.value.field == field
    answer = review("/jobs/validate", _review(job))
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == "u-1"
    assert response["allowed"] is False
    assert response["status"]["code"] == 400
    assert response["status"]["message"] == str(refused.value)
    assert f"Job ns/j: {field}: " in response["status"]["message"]


def test_duplicate_task_names_are_refused_naming_the_second_task() -> None:
    job = _job()
    job["spec"]["tasks"].append(copy.deepcopy(job["spec"]["tasks"][0]))
    response = review("/jobs/validate", _review(job))["response"]
    assert response["allowed"] is False
    assert "spec.tasks[1].name" in response["status"]["message"]


def test_a_job_volcano_accepts_is_allowed_without_status() -> None:
    job = _job(policies=[{"event": "PodFailed", "action": "RestartJob"}])
    assert review("/jobs/validate", _review(job)) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u-1", "allowed": True},
    }


def test_jobs_are_judged_on_create_only() -> None:
    bad = _job(policies=[{"event": "PodFailed", "action": "RestartJobb"}])
    for operation in ("UPDATE", "DELETE", "CONNECT"):
        assert review("/jobs/validate", _review(bad, operation=operation))["response"]["allowed"] is True
        assert "patch" not in review("/jobs/mutate", _review(_job(), operation=operation))["response"]


def test_the_job_mutation_patch_gives_default_jobs_result() -> None:
    job = _job(plugins={"mpi": ["--master=m"]})
    job["spec"]["tasks"].append({"replicas": 1, "template": {"spec": {"hostNetwork": True, "containers": []}}})
    expected = admission.default_job(job, scheduler_name="sched")
    assert expected != job
    answer = review("/jobs/mutate", _review(job), scheduler_name="sched")
    assert _patched(job, answer) == expected
    assert _patched(job, answer)["spec"]["schedulerName"] == "sched"
    # A Job with its defaults already needs no patch.
    assert "patch" not in review("/jobs/mutate", _review(expected), scheduler_name="sched")["response"]


def test_a_job_without_spec_is_refused_naming_spec_and_mutated_to_nothing() -> None:
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}}
    response = review("/jobs/validate", _review(job))["response"]
    assert response["allowed"] is False
    assert "Job ns/j: spec" in response["status"]["message"]
    assert "patch" not in review("/jobs/mutate", _review(job))["response"]


def test_queues_are_validated_on_create_and_update_and_mutated_to_default_queues_result() -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": "q",
            "annotations": {"volcano.sh/hierarchy": "a/b", "volcano.sh/hierarchy-weights": "2/3"},
        },
        "spec": {},
    }
    answer = review("/queues/mutate", _review(queue, QUEUE_KIND))
    assert _patched(queue, answer) == admission.default_queue(queue)
    assert _patched(queue, answer)["metadata"]["annotations"]["volcano.sh/hierarchy"] == "root/a/b"
    assert review("/queues/validate", _review(queue, QUEUE_KIND))["response"]["allowed"] is True
    heavy = {**queue, "spec": {"weight": 70000}}
    for operation in ("CREATE", "UPDATE"):
        response = review("/queues/validate", _review(heavy, QUEUE_KIND, operation))["response"]
        assert response["allowed"] is False
        assert response["status"]["message"].startswith("Queue q: spec.weight: ")
    assert review("/queues/validate", _review(heavy, QUEUE_KIND, "DELETE"))["response"]["allowed"] is True
    assert "patch" not in review("/queues/mutate", _review(queue, QUEUE_KIND, "UPDATE"))["response"]
    closing = {**queue, "status": {"state": "Closing"}}
    response = review("/queues/validate", _review(closing, QUEUE_KIND))["response"]
    assert "status.state" in response["status"]["message"]


def test_pod_groups_are_validated_and_given_the_default_queue() -> None:
    pod_group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "pg"}}
    answer = review("/podgroups/mutate", _review(pod_group, POD_GROUP_KIND))
    assert _patched(pod_group, answer) == {**pod_group, "spec": {"queue": "default"}}
    assert review("/podgroups/validate", _review(pod_group, POD_GROUP_KIND))["response"]["allowed"] is True
    both = {**pod_group, "spec": {"networkTopology": {"highestTierAllowed": 1, "highestTierName": "t"}}}
    response = review("/podgroups/validate", _review(both, POD_GROUP_KIND))["response"]
    assert response["allowed"] is False
    assert response["status"]["message"].startswith("PodGroup ns/pg: spec.networkTopology: ")


def test_an_object_of_another_kind_than_the_path_is_refused_with_a_reason() -> None:
    response = review("/jobs/validate", _review(_job(), QUEUE_KIND))["response"]
    assert response["allowed"] is False and response["status"]["code"] == 400
    assert "/jobs/validate judges Job objects of batch.volcano.sh" in response["status"]["message"]
    response = review("/podgroups/validate", _review("text", POD_GROUP_KIND))["response"]
    assert response["allowed"] is False
    assert response["status"]["message"] == "request.object: expected a mapping"


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ([], 400, "expected an AdmissionReview object"),
        ({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1"}, 400, "apiVersion: expected"),
        ({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}, 400, "request: expected a mapping"),
        (
            {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {"uid": ""}},
            400,
            "request.uid: expected",
        ),
    ],
)
def test_a_malformed_review_is_a_review_error(body: Any, status: int, message: str) -> None:
    with pytest.raises(ReviewError) as error:
        review("/jobs/validate", body)
    assert error.value.status == status
    assert error.value.message.startswith(message)


def test_an_unknown_path_is_404() -> None:
    with pytest.raises(ReviewError) as error:
        review("/pods/validate", _review(_job()))
    assert error.value.status == 404


# ---------------------------------------------------------------------- over HTTPS


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[str, str]:
    """A self-signed certificate for localhost and 127.0.0.1, and its key, made by ``openssl``."""
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    argv = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert)]
    argv += ["-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]
    subprocess.run(
        argv,
        check=True,
        capture_output=True,
    )
    return str(cert), str(key)


@pytest.fixture
def https(certificate: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, ssl.SSLContext]]:
    """The webhooks served on a free port (bodies above 64 KiB refused), and a client context trusting them."""
    monkeypatch.setattr(webhooks, "MAX_BODY", 1 << 16)
    server = serve_webhooks("127.0.0.1", 0, tls_context(*certificate), scheduler_name="sched")
    try:
        yield server.server_address[1], ssl.create_default_context(cafile=certificate[0])
    finally:
        server.shutdown()
        server.server_close()


def _post(port: int, context: ssl.SSLContext, path: str, body: bytes, method: str = "POST") -> tuple[int, Any]:
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def test_reviews_are_answered_over_https(https: tuple[int, ssl.SSLContext]) -> None:
    port, context = https
    bad = _job(policies=[{"event": "PodFailed", "action": "RestartJobb"}])
    status, answer = _post(port, context, "/jobs/validate", json.dumps(_review(bad)).encode())
    assert status == 200
    assert answer["response"]["allowed"] is False
    assert "spec.policies[0].action" in answer["response"]["status"]["message"]
    status, answer = _post(port, context, "/jobs/mutate", json.dumps(_review(_job())).encode())
    assert status == 200
    assert _patched(_job(), answer) == admission.default_job(_job(), scheduler_name="sched")
    # Not a review, not JSON, too large, not a POST: an HTTP error with a JSON reason.
    assert _post(port, context, "/jobs/validate", b"[]") == (
        400,
        {"status": 400, "error": "expected an AdmissionReview object"},
    )
    status, answer = _post(port, context, "/queues/validate", b"{nope")
    assert status == 400 and answer["error"].startswith("the body is not JSON")
    status, answer = _post(port, context, "/jobs/validate", b"x" * (1 << 17))
    assert status == 413
    assert _post(port, context, "/jobs/validate", b"", "GET")[0] == 405


def test_a_client_failing_the_handshake_leaves_the_server_answering(https: tuple[int, ssl.SSLContext]) -> None:
    port, context = https
    with socket.create_connection(("127.0.0.1", port), timeout=10) as plain:
        plain.sendall(b"POST /jobs/validate HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
        plain.recv(100)  # the server closes, or answers TLS alarm bytes
    untrusting = ssl.create_default_context()
    with pytest.raises(ssl.SSLCertVerificationError):
        _post(port, untrusting, "/jobs/validate", b"{}")
    status, answer = _post(port, context, "/jobs/validate", json.dumps(_review(_job())).encode())
    assert (status, answer["response"]["allowed"]) == (200, True)


def test_tls_files_that_cannot_be_read_or_do_not_match_are_config_errors(
    certificate: tuple[str, str], tmp_path: Path
) -> None:
    cert, key = certificate
    with pytest.raises(ConfigError) as error:
        tls_context(str(tmp_path / "none.crt"), key)
    assert str(error.value) == f"{tmp_path / 'none.crt'}: --tls-cert-file: No such file or directory"
    with pytest.raises(ConfigError) as error:
        tls_context(cert, cert)
    assert str(error.value).startswith("--tls-cert-file, --tls-private-key-file: not a PEM certificate")


# ---------------------------------------------------------------------- serve


def test_serve_answers_the_webhooks_with_its_first_scheduler_name_and_closes_them_on_stop(
    kubeconfig: Path, certificate: tuple[str, str]
) -> None:
    serve = Server(
        load_api(str(kubeconfig)),
        period=0.05,
        scheduler_names=("first", "second"),
        webhooks=("127.0.0.1", 0, tls_context(*certificate)),
    )
    stop = threading.Event()
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(serve.run(stop)), daemon=True)
    thread.start()
    eventually(lambda: serve.https is not None and serve.cycles > 0, what="webhooks served")
    port = serve.https.server_address[1]
    trusting = ssl.create_default_context(cafile=certificate[0])
    status, answer = _post(port, trusting, "/jobs/mutate", json.dumps(_review(_job())).encode())
    assert status == 200
    assert _patched(_job(), answer)["spec"]["schedulerName"] == "first"
    stop.set()
    thread.join(10)
    assert codes == [0]
    with pytest.raises(OSError):
        _post(port, trusting, "/jobs/mutate", b"{}")


# ---------------------------------------------------------------------- the command line


def test_webhooks_without_tls_files_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--webhooks", "--tls-cert-file", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "volcanolib: error: --webhooks needs --tls-cert-file and --tls-private-key-file"
    ]
    argv = ["serve", "--webhooks", "--tls-cert-file", str(tmp_path / "c"), "--tls-private-key-file", "k"]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"volcanolib: error: {tmp_path / 'c'}: --tls-cert-file: No such file or directory"
    ]


def test_a_webhook_address_in_use_is_one_line_and_status_2(
    kubeconfig: Path, certificate: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    cert, key = certificate
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        argv = ["serve", "--kubeconfig", str(kubeconfig), "--metrics-address", "127.0.0.1:0", "--webhooks"]
        argv += ["--tls-cert-file", cert, "--tls-private-key-file", key, "--webhook-address", f"127.0.0.1:{port}"]
        assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"volcanolib: error: --webhook-address: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


# ---------------------------------------------------------------------- deploy/


def test_deploy_registers_every_webhook_on_its_kind_and_the_operations_judged() -> None:
    documents = list(yaml.safe_load_all(DEPLOY.read_text()))
    (service,) = [d for d in documents if d["kind"] == "Service"]
    assert service["spec"]["ports"][0]["targetPort"] == 8443  # serve's default --webhook-address
    seen = set()
    for config in documents[1:]:
        mutating = config["kind"] == "MutatingWebhookConfiguration"
        for hook in config["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            group, kind, mutates = webhooks.PATHS[path]
            assert mutates is mutating
            assert hook["clientConfig"]["service"]["name"] == service["metadata"]["name"]
            (rule,) = hook["rules"]
            assert rule["apiGroups"] == [group]
            assert rule["resources"] == [kind.lower() + "s"]
            expected = ["CREATE"] if mutating else list(webhooks.OPERATIONS[kind])
            assert rule["operations"] == expected
            seen.add(path)
    assert seen == set(webhooks.PATHS)


# ---------------------------------------------------------------------- a real API server


def test_a_real_api_server_calls_the_webhooks_of_deploy(
    real_cluster: RealCluster, certificate: tuple[str, str]
) -> None:
    """deploy/webhooks.yaml registered (pointed at this process, its caBundle filled): refusals and defaults."""
    real_cluster.reset()
    namespace = "webhooks-test"
    real_cluster.ensure_namespace(namespace)
    server = serve_webhooks("127.0.0.1", 0, tls_context(*certificate), scheduler_name="sched")
    port = server.server_address[1]
    ca_bundle = base64.b64encode(Path(certificate[0]).read_bytes()).decode()
    documents = list(yaml.safe_load_all(DEPLOY.read_text()))
    registered: list[str] = []
    try:
        for config in documents[1:]:
            for hook in config["webhooks"]:
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
                # Only this test's namespace, so that a failure here cannot refuse another test's objects.
                hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            collection = f"/apis/admissionregistration.k8s.io/v1/{config['kind'].lower()}s"
            real_cluster.admin.request("POST", collection, body=config)
            registered.append(f"{collection}/{config['metadata']['name']}")
        jobs = real_cluster.path("jobs", namespace)
        bad = _job(policies=[{"event": "PodFailed", "action": "RestartJobb"}])
        bad["metadata"]["namespace"] = namespace

        def refused() -> str:
            try:
                real_cluster.admin.request("POST", jobs, body=bad)
            except ApiError as exc:
                return str(exc)
            real_cluster.admin.request("DELETE", f"{jobs}/j")
            return ""

        # The API server picks new webhook configurations up within a moment.
        eventually(lambda: refused() != "", what="the webhooks in force")
        message = refused()
        assert message.startswith("400 ")
        assert "Job webhooks-test/j: spec.policies[0].action: unknown action 'RestartJobb'" in message
        good = _job()
        good["metadata"]["namespace"] = namespace
        stored = real_cluster.admin.request("POST", jobs, body=good)
        defaulted = admission.default_job(good, scheduler_name="sched")
        assert stored["spec"]["queue"] == "default"
        assert stored["spec"]["schedulerName"] == "sched"
        assert stored["spec"]["maxRetry"] == 3
        assert stored["spec"]["minAvailable"] == defaulted["spec"]["minAvailable"] == 2
        assert stored["spec"]["tasks"][0]["minAvailable"] == 2
    finally:
        for name in registered:
            real_cluster.admin.request("DELETE", name)
        server.shutdown()
        server.server_close()
