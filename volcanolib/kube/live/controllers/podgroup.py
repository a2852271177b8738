"""The PodGroup controller, live: a PodGroup per owner for the pods of Volcano's scheduler that name none.

For each new pod of one of the scheduler names without the
``scheduling.k8s.io/group-name`` annotation, it makes the group of the
pod's owner (:mod:`volcanolib.manifests.owners`: named after the controlling
owner's uid, ``minMember`` from the owner's annotation, queue from the
pod's, owner annotations read from the ReplicaSet, StatefulSet, DaemonSet or
batch Job), unless it exists, with the PodGroup admission's defaults (the
namespace's queue for a group in ``default``), then sets the annotation on
the pod. Every pod of a Deployment's ReplicaSet thus joins one group.

Restart-safe: at start every pod the cluster holds is looked at again;
a group that exists is not made again, a pod already annotated is left.
Volcano's updates of a group when its ReplicaSet or StatefulSet changes
(``WorkLoadSupport``) are not followed.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any, Final

from volcanolib.api.task import GROUP_NAME_ANNOTATION
from volcanolib.errors import ManifestError
from volcanolib.kube.live._client import ApiError
from volcanolib.kube.live._effectors import EventRecorder
from volcanolib.kube.live.controllers._api import Store, Writer
from volcanolib.manifests.admission import default_pod_group
from volcanolib.manifests.fields import Ref
from volcanolib.manifests.owners import OWNER_KINDS, needs_group, owner_group
from volcanolib.manifests.pods import pod_request

__all__ = ["LivePodGroupController"]

log = logging.getLogger("volcanolib.kube.live.controllers")

_OWNER_STORE_KIND: Final = {"Job": "batch/Job"}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


class LivePodGroupController:
    """Makes the PodGroup of each new pod's owner.

    :param writer: sends the writes.
    :param stores: the stores by kind (``Pod``, ``PodGroup``).
    :param recorder: posts Events.
    :param scheduler_names: the scheduler names whose pods get a group.
    :param inherit_owner_annotations: read the owners' annotations (Volcano's default).
    """

    def __init__(
        self,
        writer: Writer,
        stores: Mapping[str, Store],
        recorder: EventRecorder,
        *,
        scheduler_names: Collection[str] = ("volcano",),
        inherit_owner_annotations: bool = True,
    ) -> None:
        self.writer = writer
        self.stores = stores
        self.recorder = recorder
        self.scheduler_names = frozenset(scheduler_names)
        self.inherit = inherit_owner_annotations
        #: Groups this controller made, by (namespace, name).
        self.made: set[tuple[str, str]] = set()
        #: Pods whose group could not be made, to try again at the next event.
        self.failed: dict[tuple[str, str], dict[str, Any]] = {}

    def start(self) -> None:
        """Look at every pod the cluster holds."""
        for pod in self.stores["Pod"].items():
            self.on_pod("ADDED", pod, None)

    def on_pod(self, event: str, pod: dict[str, Any], old: dict[str, Any] | None) -> None:
        """A new pod (updates are not looked at, as in Volcano)."""
        if event != "ADDED" or not needs_group(pod, self.scheduler_names):
            return
        meta = _map(pod.get("metadata"))
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name") or "")
        uid = str(meta.get("uid") or "")
        owners = self._owner_annotations(namespace, meta) if self.inherit else None
        group = owner_group(pod, uid, owner_annotations=owners)
        try:
            if self.stores["PodGroup"].get(namespace, group.name) is None and (namespace, group.name) not in self.made:
                ref = Ref(None, "", "Pod", name, namespace)
                request = pod_request(_map(pod.get("spec")), ref)
                if group.min_member != 1:
                    request = request.clone().multi(group.min_member)
                manifest = group.manifest(request.to_quantities())
                namespace_obj = self.writer.get("Namespace", "", namespace) or {}
                manifest = default_pod_group(
                    manifest, namespace_annotations=_map(_map(namespace_obj.get("metadata")).get("annotations"))
                )
                self.writer.create(manifest)
                self.made.add((namespace, group.name))
            patch = {"metadata": {"annotations": {GROUP_NAME_ANNOTATION: group.name}}}
            self.writer.patch("Pod", namespace, name, patch)
            self.failed.pop((namespace, name), None)
        except ManifestError as exc:
            log.warning("pod %s/%s gets no PodGroup: %s", namespace, name, exc)
            self.recorder.record("Pod", namespace, name, uid, "Warning", "PodGroupRefused", str(exc))
        except ApiError as exc:
            log.warning("pod %s/%s: its PodGroup %s is not made yet: %s", namespace, name, group.name, exc)
            self.failed[(namespace, name)] = pod

    def on_pod_group(self, event: str, group: dict[str, Any], old: dict[str, Any] | None) -> None:
        """A group that is gone may be made again for a later pod."""
        if event == "DELETED":
            meta = _map(group.get("metadata"))
            self.made.discard((str(meta.get("namespace") or "default"), str(meta.get("name") or "")))

    def retry(self) -> None:
        """Try again the pods whose group could not be made."""
        for pod in list(self.failed.values()):
            self.on_pod("ADDED", pod, None)

    def _owner_annotations(self, namespace: str, meta: Mapping[str, Any]) -> dict[str, str]:
        """The annotations of the pod's owners (ReplicaSet, DaemonSet, StatefulSet, batch Job), the first's winning."""
        out: dict[str, str] = {}
        for ref in meta.get("ownerReferences") or ():
            if not isinstance(ref, dict) or ref.get("kind") not in OWNER_KINDS or not ref.get("name"):
                continue
            kind = str(ref["kind"])
            if kind == "Job" and str(ref.get("apiVersion", "")).startswith("batch.volcano.sh"):
                continue
            owner = self.writer.get(_OWNER_STORE_KIND.get(kind, kind), namespace, str(ref["name"]))
            for key, value in _map(_map((owner or {}).get("metadata")).get("annotations")).items():
                out.setdefault(str(key), str(value))
        return out
