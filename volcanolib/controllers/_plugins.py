"""The job plugins ``env``, ``svc`` and ``ssh``: what they add to a Job's pods, and the objects they make.

Volcano's job controller runs each plugin a Job lists at three points: when
it makes a pod (``env`` sets the task index in the environment, ``svc``
names the pod's host and mounts the job's host lists, ``ssh`` mounts the
job's key pair), when it syncs a new job (``svc`` makes a headless Service,
a ConfigMap of host lists and a NetworkPolicy; ``ssh`` a Secret with a key
pair), and on every kill (those objects are deleted, to be made again when
the job is Pending once more). The other plugins Volcano knows
(``tensorflow``, ``pytorch``, ``mpi``, ``ray``, ``hcclrank``) are accepted
and do nothing here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from volcanolib.kube.jobs import JobSpec
from volcanolib.manifests.admission import plugin_flag
from volcanolib.manifests.keys import JOB_NAME_KEY, JOB_NAMESPACE_KEY

__all__ = ["ACTIVE_PLUGINS", "PluginObject", "controlled_resources", "job_objects", "on_pod_create"]

#: The plugins that change pods or make objects here.
ACTIVE_PLUGINS: Final = ("env", "svc", "ssh")
TASK_VK_INDEX: Final = "VK_TASK_INDEX"
TASK_INDEX: Final = "VC_TASK_INDEX"
HOSTS_MOUNT_PATH: Final = "/etc/volcano"
SSH_PATH: Final = "/root/.ssh"
_SSH_SUBPATH: Final = ".ssh"
_SSH_KEYS: Final = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")

#: One object a plugin makes: ``(plugin, manifest, needs a fresh ssh key pair)``.
PluginObject = tuple[str, dict[str, Any], bool]


def controlled_resources(plugins: Sequence[str]) -> dict[str, str]:
    """The Job status's ``controlledResources`` once the plugins have made their objects."""
    return {f"plugin-{name}": name for name in plugins if name in ACTIVE_PLUGINS}


def _env_key(task: str) -> str:
    return task.replace("-", "_").upper()


def _hosts(js: JobSpec) -> dict[str, str]:
    """The host lists of the ``svc`` ConfigMap: per task its pods' ``host.subdomain`` names."""
    out: dict[str, str] = {}
    for task in js.tasks:
        hosts = []
        fixed = str(task.template_spec.get("hostname") or "")
        subdomain = str(task.template_spec.get("subdomain") or "") or js.name
        for i in range(task.replicas):
            hosts.append(f"{fixed or task.pod_name(js.name, i)}.{subdomain}")
            if fixed:
                break
        key = task.name.replace("-", "_")
        out[f"{key}.host"] = "\n".join(hosts)
        out[f"VC_{_env_key(task.name)}_HOSTS"] = ",".join(hosts)
        out[f"VC_{_env_key(task.name)}_NUM"] = str(len(hosts))
    return out


def _ssh_config(js: JobSpec) -> str:
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in js.tasks:
        fixed = str(task.template_spec.get("hostname") or "")
        subdomain = str(task.template_spec.get("subdomain") or "") or js.name
        for i in range(task.replicas):
            host = fixed or task.pod_name(js.name, i)
            lines += [f"Host {host}", f"  HostName {host}.{subdomain}"]
            if fixed:
                break
    return "\n".join(lines) + "\n"


def _owner(js: JobSpec) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": js.name,
        "uid": js.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def job_objects(js: JobSpec, plugins: Mapping[str, Sequence[str]]) -> list[PluginObject]:
    """The objects the plugins make for a new job.

    ``svc``: the ConfigMap of host lists, the headless Service, the NetworkPolicy; ``ssh``: the Secret.
    """
    out: list[PluginObject] = []
    selector = {JOB_NAME_KEY: js.name, JOB_NAMESPACE_KEY: js.namespace}

    def meta(name: str) -> dict[str, Any]:
        return {"name": name, "namespace": js.namespace, "ownerReferences": [_owner(js)]}

    if "svc" in plugins:
        args = list(plugins["svc"])
        out.append(
            (
                "svc",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(f"{js.name}-svc"), "data": _hosts(js)},
                False,
            )
        )
        publish = plugin_flag(args, "publish-not-ready-addresses", "false").lower() == "true"
        spec: dict[str, Any] = {"clusterIP": "None", "selector": selector, "publishNotReadyAddresses": publish}
        out.append(("svc", {"apiVersion": "v1", "kind": "Service", "metadata": meta(js.name), "spec": spec}, False))
        if plugin_flag(args, "disable-network-policy", "false").lower() != "true":
            policy = {
                "podSelector": {"matchLabels": selector},
                "ingress": [{"from": [{"podSelector": {"matchLabels": selector}}]}],
                "policyTypes": ["Ingress"],
            }
            out.append(
                (
                    "svc",
                    {
                        "apiVersion": "networking.k8s.io/v1",
                        "kind": "NetworkPolicy",
                        "metadata": meta(js.name),
                        "spec": policy,
                    },
                    False,
                )
            )
    if "ssh" in plugins:
        args = list(plugins["ssh"])
        private = plugin_flag(args, "ssh-private-key", "")
        public = plugin_flag(args, "ssh-public-key", "")
        data = {"config": _ssh_config(js)}
        if private:
            data.update({"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public})
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": meta(f"{js.name}-ssh"), "stringData": data}
        out.append(("ssh", secret, not private))
    return out


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod's containers and init containers, copied so that the task's template is left as it is."""
    out: list[dict[str, Any]] = []
    for kind in ("containers", "initContainers"):
        if isinstance(spec.get(kind), list):
            spec[kind] = [dict(c) if isinstance(c, dict) else c for c in spec[kind]]
            out.extend(c for c in spec[kind] if isinstance(c, dict))
    return out


def on_pod_create(pod: dict[str, Any], js: JobSpec, plugins: Mapping[str, Sequence[str]], index: int) -> None:
    """Add to a new pod of the Job what its plugins add (the pod is changed in place, its template is not)."""
    if not any(name in plugins for name in ACTIVE_PLUGINS):
        return
    spec = pod["spec"] = dict(pod["spec"])
    containers = _containers(spec)
    env: list[dict[str, Any]] = []
    if "env" in plugins:
        env += [{"name": TASK_VK_INDEX, "value": str(index)}, {"name": TASK_INDEX, "value": str(index)}]
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    if "svc" in plugins:
        spec.setdefault("hostname", pod["metadata"]["name"])
        spec.setdefault("subdomain", js.name)
        config_map = f"{js.name}-svc"
        for task in js.tasks:
            for key in (f"VC_{_env_key(task.name)}_HOSTS", f"VC_{_env_key(task.name)}_NUM"):
                env.append({"name": key, "valueFrom": {"configMapKeyRef": {"name": config_map, "key": key}}})
        volumes.append({"name": config_map, "configMap": {"name": config_map}})
        mounts.append({"name": config_map, "mountPath": HOSTS_MOUNT_PATH})
    if "ssh" in plugins:
        path = plugin_flag(list(plugins["ssh"]), "ssh-key-file-path", SSH_PATH)
        secret = f"{js.name}-ssh"
        items = [{"key": key, "path": f"{_SSH_SUBPATH}/{key}"} for key in _SSH_KEYS]
        mode = 0o600 if path == SSH_PATH else 0o644
        volumes.append({"name": secret, "secret": {"secretName": secret, "items": items, "defaultMode": mode}})
        mounts.append({"name": secret, "mountPath": path, "subPath": _SSH_SUBPATH})
    for container in containers:
        if env:
            container["env"] = [*(container.get("env") or []), *env]
        if mounts:
            container["volumeMounts"] = [*(container.get("volumeMounts") or []), *mounts]
    if volumes:
        spec["volumes"] = [*(spec.get("volumes") or []), *volumes]
