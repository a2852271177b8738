"""The job plugins env, svc and ssh: what they add to pods, the objects they make and delete; the ssh key pair."""

from __future__ import annotations

import base64
import copy
import struct
from typing import Any

from job_harness import Harness, job, task

from volcanolib.controllers import CreateObject, CreatePod, DeleteObject
from volcanolib.controllers._sshkeys import rsa_key_pair


def pods_of(changes: list[Any]) -> dict[str, dict[str, Any]]:
    return {c.manifest["metadata"]["name"]: c.manifest for c in changes if isinstance(c, CreatePod)}


def test_env_svc_and_ssh_add_to_the_pods_and_leave_the_template_alone() -> None:
    manifest = job(
        "j",
        task("ps", 1),
        task("work-er", 2),
        plugins={"env": [], "svc": [], "ssh": ["--ssh-key-file-path=/home/u/.ssh"]},
    )
    manifest["spec"]["tasks"][1]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "x"}]
    template = copy.deepcopy(manifest["spec"]["tasks"][1]["template"])
    h = Harness()
    h.submit(manifest)
    pod = pods_of(h.admit())["j-work-er-1"]
    spec = pod["spec"]
    assert (spec["hostname"], spec["subdomain"]) == ("j-work-er-1", "j")
    for container in (spec["containers"][0], spec["initContainers"][0]):
        env = {e["name"]: e for e in container["env"]}
        assert env["VK_TASK_INDEX"]["value"] == env["VC_TASK_INDEX"]["value"] == "1"
        assert env["VC_WORK_ER_HOSTS"]["valueFrom"]["configMapKeyRef"] == {"name": "j-svc", "key": "VC_WORK_ER_HOSTS"}
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        assert mounts["j-svc"]["mountPath"] == "/etc/volcano"
        assert (mounts["j-ssh"]["mountPath"], mounts["j-ssh"]["subPath"]) == ("/home/u/.ssh", ".ssh")
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["j-ssh"]["secret"]["defaultMode"] == 0o644  # not root's .ssh
    assert [i["key"] for i in volumes["j-ssh"]["secret"]["items"]] == [
        "id_rsa",
        "id_rsa.pub",
        "authorized_keys",
        "config",
    ]
    assert manifest["spec"]["tasks"][1]["template"] == template


def test_the_plugins_objects_are_made_for_a_new_job_and_deleted_on_every_kill() -> None:
    manifest = job(
        "j",
        task("a", 2),
        plugins={"svc": ["--publish-not-ready-addresses=true", "--disable-network-policy=true"], "ssh": []},
        policies=[{"event": "PodFailed", "action": "RestartJob"}],
    )
    h = Harness()
    made = [c for c in h.submit(manifest) if isinstance(c, CreateObject)]
    by_kind = {c.manifest["kind"]: c for c in made}
    assert sorted(by_kind) == ["ConfigMap", "Secret", "Service"]  # no NetworkPolicy: disabled
    assert by_kind["ConfigMap"].manifest["data"] == {
        "a.host": "j-a-0.j\nj-a-1.j",
        "VC_A_HOSTS": "j-a-0.j,j-a-1.j",
        "VC_A_NUM": "2",
    }
    service = by_kind["Service"].manifest["spec"]
    assert service["publishNotReadyAddresses"] is True and service["clusterIP"] == "None"
    assert (
        by_kind["Secret"].ssh_key
        and "Host j-a-1\n  HostName j-a-1.j" in by_kind["Secret"].manifest["stringData"]["config"]
    )
    owner = by_kind["Service"].manifest["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "j", True)
    assert h.state("j").controlled_resources == {"plugin-svc": "svc", "plugin-ssh": "ssh"}
    h.admit()
    h.run_all()
    killed = h.phase("j-a-0", "Failed", exit_code=1)  # RestartJob: the objects go
    assert sorted((c.kind, c.name) for c in killed if isinstance(c, DeleteObject)) == [
        ("ConfigMap", "j-svc"),
        ("Secret", "j-ssh"),
        ("Service", "j"),
    ]
    assert h.state("j").controlled_resources == {}
    again = h.admit()  # Pending again: made again
    assert sorted(c.manifest["kind"] for c in again if isinstance(c, CreateObject)) == [
        "ConfigMap",
        "Secret",
        "Service",
    ]


def test_no_plugin_no_object() -> None:
    h = Harness()
    assert not [c for c in h.submit(job("j", task("a", 1))) if isinstance(c, CreateObject)]


def _der_integers(der: bytes) -> list[int]:
    """The INTEGERs of a DER SEQUENCE (enough of DER for a PKCS #1 key)."""

    def length(i: int) -> tuple[int, int]:
        first = der[i]
        if first < 0x80:
            return first, i + 1
        n = first & 0x7F
        return int.from_bytes(der[i + 1 : i + 1 + n], "big"), i + 1 + n

    assert der[0] == 0x30
    _, i = length(1)
    out = []
    while i < len(der):
        assert der[i] == 0x02
        n, i = length(i + 1)
        out.append(int.from_bytes(der[i : i + n], "big", signed=True))
        i += n
    return out


def test_the_ssh_key_pair_is_a_valid_rsa_pair() -> None:
    private, public = rsa_key_pair(1024)
    lines = private.strip().splitlines()
    assert lines[0] == "-----BEGIN RSA PRIVATE KEY-----" and lines[-1] == "-----END RSA PRIVATE KEY-----"
    version, n, e, d, p, q, dp, dq, qinv = _der_integers(base64.b64decode("".join(lines[1:-1])))
    assert version == 0 and n == p * q and n.bit_length() == 1024
    assert (e * d) % ((p - 1) * (q - 1)) == 1 and dp == d % (p - 1) and dq == d % (q - 1) and (qinv * q) % p == 1
    message = 123456789
    assert pow(pow(message, e, n), d, n) == message
    kind, blob = public.split()
    assert kind == "ssh-rsa" and public.endswith("\n")
    raw = base64.b64decode(blob)
    parts = []
    while raw:
        (size,) = struct.unpack(">I", raw[:4])
        parts.append(raw[4 : 4 + size])
        raw = raw[4 + size :]
    assert parts[0] == b"ssh-rsa"
    assert int.from_bytes(parts[1], "big") == e and int.from_bytes(parts[2], "big") == n
    assert parts[2][0] == 0  # an mpint with its top bit set gets a leading zero byte
