"""Random scenarios for the differential tests against the real Volcano.

:func:`generate` builds one small scenario (docs/scenario-format.md) for a
feature area from a seed: nodes, PriorityClasses, queues, PodGroups and pods,
and a ``volcano-scheduler.conf`` whose actions and plugins exercise that
area. Every object is one both volcanolib and Volcano read the same way, and
the same seed always gives the same scenario.

The module is plain Python (no pytest), so tests and nox sessions both use it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = ["AREAS", "generate"]

Obj = dict[str, Any]

#: The feature areas :func:`generate` knows, each with its own configuration and objects.
AREAS: tuple[str, ...] = (
    "queues",
    "proportion",
    "capacity",
    "capacity-hierarchy",
    "drf",
    "drf-hierarchy",
    "priority",
    "gang",
    "binpack",
    "nodeorder",
    "predicates",
    "preempt",
    "preempt-topology",
    "reclaim",
    "backfill",
    "enqueue-overcommit",
    "sla",
    "deviceshare",
    "network-topology",
    "multi-session",
)

SCHEDULER = "volcano"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC = "volcano.sh/task-spec"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
GPU = "nvidia.com/gpu"
GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
#: Creation times count in seconds from here.
EPOCH = datetime(2025, 1, 1, tzinfo=timezone.utc)
#: PriorityClass name -> value, the classes every scenario may use.
PRIORITIES: dict[str, int] = {"low": 10, "mid": 100, "high": 1000}


# ---------------------------------------------------------------------- quantities


@dataclass(frozen=True)
class Request:
    """What a pod asks for (or what a node has left): millicores, MiB, GPUs, and device-share units."""

    cpu: int = 0
    memory: int = 0
    gpu: int = 0
    gpu_memory: int = 0
    gpu_number: int = 0

    def __add__(self, other: Request) -> Request:
        return Request(
            self.cpu + other.cpu,
            self.memory + other.memory,
            self.gpu + other.gpu,
            self.gpu_memory + other.gpu_memory,
            self.gpu_number + other.gpu_number,
        )

    def __sub__(self, other: Request) -> Request:
        return Request(
            self.cpu - other.cpu,
            self.memory - other.memory,
            self.gpu - other.gpu,
            self.gpu_memory - other.gpu_memory,
            self.gpu_number - other.gpu_number,
        )

    def scaled(self, n: int) -> Request:
        """``n`` times this request."""
        return Request(self.cpu * n, self.memory * n, self.gpu * n, self.gpu_memory * n, self.gpu_number * n)

    def fits(self, free: Request) -> bool:
        """Whether this request fits in ``free``."""
        return all(a <= b for a, b in zip(self.astuple(), free.astuple(), strict=True))

    def astuple(self) -> tuple[int, int, int, int, int]:
        """The dimensions, in order."""
        return (self.cpu, self.memory, self.gpu, self.gpu_memory, self.gpu_number)

    def is_empty(self) -> bool:
        """Whether it asks for nothing (a best-effort pod)."""
        return not any(self.astuple())

    def requests(self) -> dict[str, str]:
        """The node-level resources as Kubernetes quantities (zero entries left out)."""
        out: dict[str, str] = {}
        if self.cpu:
            out["cpu"] = cpu_quantity(self.cpu)
        if self.memory:
            out["memory"] = memory_quantity(self.memory)
        if self.gpu:
            out[GPU] = str(self.gpu)
        return out

    def device_limits(self) -> dict[str, str]:
        """The device-share resources, which pods ask for in their limits."""
        out: dict[str, str] = {}
        if self.gpu_memory:
            out[GPU_MEMORY] = str(self.gpu_memory)
        if self.gpu_number:
            out[GPU_NUMBER] = str(self.gpu_number)
        return out


def cpu_quantity(millis: int) -> str:
    """``2`` for 2000 millicores, ``500m`` for 500."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def memory_quantity(mib: int) -> str:
    """``2Gi`` for 2048 MiB, ``768Mi`` for 768."""
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def timestamp(seconds: int) -> str:
    """An RFC 3339 time ``seconds`` after :data:`EPOCH`."""
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------- objects


def given(**fields: Any) -> Obj:
    """The fields that have a value: ``None`` and empty mappings and lists are left out (``False`` and 0 stay)."""
    return {k: v for k, v in fields.items() if v is not None and not (isinstance(v, (dict, list)) and not v)}


def node_object(
    name: str,
    allocatable: dict[str, str],
    *,
    labels: dict[str, str],
    taints: list[Obj] | None = None,
    annotations: dict[str, str] | None = None,
    unschedulable: bool = False,
) -> Obj:
    """A Ready node whose capacity is its allocatable."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": given(name=name, labels=dict(labels), annotations=annotations),
        "spec": given(taints=taints, unschedulable=unschedulable or None),
        "status": {
            "allocatable": dict(allocatable),
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def priority_class_object(name: str, value: int, *, preemption_policy: str | None = None) -> Obj:
    """A PriorityClass."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        **given(metadata={"name": name}, value=value, preemptionPolicy=preemption_policy),
    }


def queue_object(
    name: str,
    *,
    weight: int = 1,
    capability: dict[str, str] | None = None,
    deserved: dict[str, str] | None = None,
    guarantee: dict[str, str] | None = None,
    reclaimable: bool | None = None,
    priority: int | None = None,
    parent: str | None = None,
    state: str = "Open",
    annotations: dict[str, str] | None = None,
) -> Obj:
    """A Volcano Queue."""
    spec = given(
        weight=weight,
        capability=capability,
        deserved=deserved,
        guarantee={"resource": guarantee} if guarantee is not None else None,
        reclaimable=reclaimable,
        priority=priority,
        parent=parent,
    )
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": given(name=name, annotations=annotations),
        "spec": spec,
        "status": {"state": state},
    }


def pod_group_object(
    name: str,
    namespace: str,
    *,
    queue: str,
    min_member: int,
    phase: str,
    priority_class: str | None = None,
    min_resources: dict[str, str] | None = None,
    min_task_member: dict[str, int] | None = None,
    network_topology: Obj | None = None,
    annotations: dict[str, str] | None = None,
    created: str | None = None,
) -> Obj:
    """A Volcano PodGroup."""
    spec = given(
        minMember=min_member,
        queue=queue,
        priorityClassName=priority_class,
        minResources=min_resources,
        minTaskMember=min_task_member,
        networkTopology=network_topology,
    )
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": given(name=name, namespace=namespace, annotations=annotations, creationTimestamp=created),
        "spec": spec,
        "status": {"phase": phase},
    }


def pod_object(
    name: str,
    namespace: str,
    request: Request,
    *,
    group: str,
    node: str | None = None,
    phase: str = "Pending",
    priority_class: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    created: str | None = None,
    deleted: str | None = None,
) -> Obj:
    """A pod of the scheduler with one container asking for ``request`` (none for a best-effort pod)."""
    # Extended resources are asked for in the limits; the API server copies them to the requests.
    limits = {GPU: str(request.gpu)} if request.gpu else {}
    limits.update(request.device_limits())
    resources = given(requests={**request.requests(), **limits}, limits=limits)
    metadata = given(
        name=name,
        namespace=namespace,
        annotations={GROUP_ANNOTATION: group, **(annotations or {})},
        labels=labels,
        creationTimestamp=created,
        deletionTimestamp=deleted,
    )
    spec = given(
        schedulerName=SCHEDULER,
        containers=[{"name": "main", "image": "busybox", "resources": resources}],
        priorityClassName=priority_class,
        nodeName=node,
    )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": phase}}


def hyper_node_object(name: str, tier: int, members: list[Obj]) -> Obj:
    """A HyperNode of ``tier`` with the given member entries."""
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members},
    }


def plugin(name: str, arguments: Obj | None = None, **options: bool) -> Obj:
    """A plugin entry of a tier; ``options`` are its switches (``enableHierarchy=True``)."""
    return {"name": name, **options, **given(arguments=arguments)}


def conf(actions: str, *tiers: list[Obj], configurations: list[Obj] | None = None) -> Obj:
    """A volcano-scheduler.conf as a mapping."""
    return {"actions": actions, "tiers": [{"plugins": list(t)} for t in tiers], **given(configurations=configurations)}


# ---------------------------------------------------------------------- the cluster being built


@dataclass
class NodeState:
    """A node being filled: what it has left, and its labels."""

    name: str
    free: Request
    pods: int
    labels: dict[str, str]
    #: GPU cards (device share).
    cards: int = 0


#: Called with each pod object of a job and its index, to add to it (affinity, ports, ...).
PodDecorator = Callable[[Obj, int], None]


@dataclass
class Job:
    """A PodGroup and its pods, as :meth:`Builder.add_job` makes them."""

    request: Request
    size: int = 1
    #: Default: ``size``.
    min_member: int | None = None
    queue: str = "default"
    namespace: str = "ns1"
    priority_class: str | None = None
    #: How many of the pods are already running on a node (fewer when they do not fit).
    running: int = 0
    #: How many of the running pods are being deleted (Releasing).
    releasing: int = 0
    #: Default: Running when enough pods run, else Pending or Inqueue at random.
    phase: str | None = None
    #: Write ``minResources``: the requests of ``min_member`` pods.
    min_resources: bool = False
    #: Role of each pod in order (``volcano.sh/task-spec``), and the PodGroup's minTaskMember.
    roles: list[str] | None = None
    min_task_member: dict[str, int] | None = None
    network_topology: Obj | None = None
    group_annotations: dict[str, str] = field(default_factory=dict)
    pod_labels: dict[str, str] = field(default_factory=dict)
    pod_annotations: dict[str, str] = field(default_factory=dict)
    decorate: PodDecorator | None = None
    #: Nodes running pods may be put on (default: any).
    nodes: list[str] | None = None


class Builder:
    """Collects a scenario's objects while keeping track of what the nodes have left."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.nodes: list[NodeState] = []
        self.objects: dict[str, list[Obj]] = {
            k: [] for k in ("Node", "HyperNode", "PriorityClass", "Queue", "PodGroup", "Pod")
        }
        self.queues: list[str] = ["default"]
        self.jobs = 0
        #: Whether PodGroups and pods carry creation times (else Volcano orders ties by uid).
        self.timestamps = rng.random() < 0.7
        self.clock = 0

    # -- nodes

    def add_node(
        self,
        total: Request,
        *,
        pods: int = 110,
        labels: dict[str, str] | None = None,
        taints: list[Obj] | None = None,
        annotations: dict[str, str] | None = None,
        unschedulable: bool = False,
        extra: dict[str, str] | None = None,
    ) -> NodeState:
        """Add a node with ``total`` allocatable (and ``extra`` resources)."""
        name = f"n{len(self.nodes) + 1}"
        all_labels = {HOSTNAME: name, ZONE: "zone-a" if len(self.nodes) % 2 == 0 else "zone-b", **(labels or {})}
        allocatable = {**total.requests(), "pods": str(pods), **(extra or {})}
        if total.gpu_memory:
            allocatable[GPU_MEMORY] = str(total.gpu_memory)
        if total.gpu_number:
            allocatable[GPU_NUMBER] = str(total.gpu_number)
        self.objects["Node"].append(
            node_object(
                name,
                allocatable,
                labels=all_labels,
                taints=taints,
                annotations=annotations,
                unschedulable=unschedulable,
            )
        )
        state = NodeState(name, total, pods, all_labels, total.gpu_number)
        self.nodes.append(state)
        return state

    def label_node(self, name: str, key: str, value: str) -> None:
        """Add a label to a node."""
        for state, obj in zip(self.nodes, self.objects["Node"], strict=True):
            if state.name == name:
                state.labels[key] = value
                obj["metadata"]["labels"][key] = value

    def add_nodes(self, low: int = 2, high: int = 8, *, gpus: bool = False, small_pods: float = 0.1) -> None:
        """Add between ``low`` and ``high`` nodes of random shapes."""
        for _ in range(self.rng.randint(low, high)):
            self.add_node(random_node_shape(self.rng, gpus=gpus), pods=random_pod_count(self.rng, small_pods))

    # -- priorities and queues

    def add_priority_classes(self, *, never: bool = False) -> list[str]:
        """Add the classes of :data:`PRIORITIES` (one with preemptionPolicy Never when ``never``)."""
        for name, value in PRIORITIES.items():
            self.objects["PriorityClass"].append(priority_class_object(name, value))
        names = list(PRIORITIES)
        if never:
            self.objects["PriorityClass"].append(
                priority_class_object("high-nonpreempting", 1000, preemption_policy="Never")
            )
            names.append("high-nonpreempting")
        return names

    def add_queue(self, name: str, **fields: Any) -> str:
        """Add a queue (fields as :func:`queue_object` takes them)."""
        self.objects["Queue"].append(queue_object(name, **fields))
        if name not in self.queues:
            self.queues.append(name)
        return name

    def add_hyper_node(self, name: str, tier: int, members: list[Obj]) -> None:
        """Add a HyperNode."""
        self.objects["HyperNode"].append(hyper_node_object(name, tier, members))

    # -- jobs

    def tick(self) -> str | None:
        """The next creation time (when this scenario uses them)."""
        if not self.timestamps:
            return None
        self.clock += self.rng.randint(1, 30)
        return timestamp(self.clock)

    def place(self, request: Request, allowed: list[str] | None) -> str | None:
        """A random node with room for ``request`` (it is then taken), or ``None``."""
        fitting = [
            n for n in self.nodes if n.pods > 0 and request.fits(n.free) and (allowed is None or n.name in allowed)
        ]
        if not fitting:
            return None
        node = self.rng.choice(fitting)
        node.free = node.free - request
        node.pods -= 1
        return node.name

    def add_job(self, job: Job) -> str:
        """Add a PodGroup and its pods; returns the PodGroup's name."""
        self.jobs += 1
        name = f"pg{self.jobs}"
        min_member = job.size if job.min_member is None else job.min_member
        created = self.tick()
        placed: list[str | None] = []
        for index in range(job.size):
            placed.append(self.place(job.request, job.nodes) if index < job.running else None)
        running = sum(1 for p in placed if p)
        phase = job.phase or (
            "Running" if running and running >= min_member else self.rng.choice(["Pending", "Inqueue"])
        )
        min_resources = job.request.scaled(max(min_member, 1)).requests() if job.min_resources else None
        self.objects["PodGroup"].append(
            pod_group_object(
                name,
                job.namespace,
                queue=job.queue,
                min_member=min_member,
                phase=phase,
                priority_class=job.priority_class,
                min_resources=min_resources,
                min_task_member=job.min_task_member,
                network_topology=job.network_topology,
                annotations=job.group_annotations,
                created=created,
            )
        )
        releasing = 0
        for index, node in enumerate(placed):
            annotations = dict(job.pod_annotations)
            if job.roles:
                annotations[TASK_SPEC] = job.roles[index]
            deleted = None
            if node and releasing < job.releasing:
                releasing += 1
                deleted = timestamp(self.clock + 1)
            pod = pod_object(
                f"{name}-{index}",
                job.namespace,
                job.request,
                group=name,
                node=node,
                phase="Running" if node else "Pending",
                priority_class=job.priority_class,
                labels=dict(job.pod_labels) or None,
                annotations=annotations,
                created=created,
                deleted=deleted,
            )
            if job.decorate:
                job.decorate(pod, index)
            self.objects["Pod"].append(pod)
        return name

    def scenario(self, name: str, scheduler: Obj, sessions: int = 1) -> Obj:
        """The scenario mapping."""
        objects = [obj for kind in self.objects.values() for obj in kind]
        return {
            "name": name,
            "scheduler": scheduler,
            "schedulerName": SCHEDULER,
            "sessions": sessions,
            "objects": objects,
        }


# ---------------------------------------------------------------------- random shapes


def random_node_shape(rng: random.Random, *, gpus: bool = False) -> Request:
    """A node's allocatable: 2 to 16 cores, 4 to 32 GiB, GPUs when asked."""
    cpu = rng.choice([2, 4, 4, 8, 8, 16]) * 1000
    memory = rng.choice([4, 8, 16, 16, 32]) * 1024
    gpu = rng.choice([0, 2, 4, 8]) if gpus else 0
    return Request(cpu, memory, gpu)


def random_pod_count(rng: random.Random, small: float) -> int:
    """110 pods, or with probability ``small`` a handful."""
    return rng.randint(2, 5) if rng.random() < small else 110


def random_request(rng: random.Random, *, gpus: bool = False) -> Request:
    """A pod's request: 250m to 4 cores, 256 MiB to 6 GiB, sometimes GPUs."""
    cpu = rng.choice([250, 500, 1000, 1000, 1500, 2000, 3000, 4000])
    memory = rng.choice([256, 512, 1024, 1024, 2048, 4096, 6144])
    gpu = rng.choice([0, 0, 1, 2]) if gpus else 0
    return Request(cpu, memory, gpu)


def random_resources(rng: random.Random, low: int, high: int) -> dict[str, str]:
    """A cpu (and sometimes memory) quantity between ``low`` and ``high`` cores (GiB)."""
    out = {"cpu": str(rng.randint(low, high))}
    if rng.random() < 0.6:
        out["memory"] = f"{rng.randint(low, high) * 2}Gi"
    return out


def random_job(
    b: Builder,
    largest: int,
    *,
    request: Request | None = None,
    runs: bool = False,
    releasing: bool = False,
    gang: bool = True,
    **fields: Any,
) -> str:
    """Add a job of 1 to ``largest`` pods of one random request and a random minMember (1 unless ``gang``).

    :param runs: its pods already run (those that fit somewhere).
    :param releasing: some of its running pods are being deleted.
    """
    size = b.rng.randint(1, largest)
    job = Job(
        request=request or random_request(b.rng),
        size=size,
        min_member=b.rng.randint(1, size) if gang else 1,
        running=size if runs else 0,
        releasing=b.rng.randint(0, size) if releasing else 0,
        **fields,
    )
    return b.add_job(job)


def random_jobs(
    b: Builder,
    count: int,
    *,
    queues: list[str] | None = None,
    priorities: list[str] | None = None,
    running: float = 0.3,
    gpus: bool = False,
    gang: bool = True,
    **fields: Any,
) -> list[str]:
    """Add ``count`` random jobs over ``queues``; ``running`` is the chance that a job already runs."""
    return [
        random_job(
            b,
            5,
            request=random_request(b.rng, gpus=gpus),
            runs=b.rng.random() < running,
            gang=gang,
            queue=b.rng.choice(queues or b.queues),
            namespace=b.rng.choice(["ns1", "ns1", "ns2"]),
            priority_class=b.rng.choice(priorities) if priorities else None,
            min_resources=b.rng.random() < 0.4,
            **fields,
        )
        for _ in range(count)
    ]


# ---------------------------------------------------------------------- configurations


def base_tier1(*extra: Obj) -> list[Obj]:
    """priority, gang, conformance (and ``extra``)."""
    return [plugin("priority"), plugin("gang"), plugin("conformance"), *extra]


def base_tier2(fairness: str = "proportion", *extra: Obj) -> list[Obj]:
    """drf, predicates, a queue-fairness plugin, nodeorder (and ``extra``)."""
    return [plugin("drf"), plugin("predicates"), plugin(fairness), plugin("nodeorder"), *extra]


# ---------------------------------------------------------------------- areas


def flat_queues(b: Builder, count: int, *, capacity_fields: bool = False) -> list[str]:
    """``count`` queues under no parent, with random weights, capabilities, states and priorities."""
    names = []
    for i in range(count):
        fields: dict[str, Any] = {"weight": b.rng.randint(1, 8), "reclaimable": b.rng.random() < 0.8}
        if b.rng.random() < 0.4:
            fields["capability"] = random_resources(b.rng, 2, 12)
        if b.rng.random() < 0.2:
            fields["priority"] = b.rng.randint(0, 3)
        if b.rng.random() < 0.25:
            fields["guarantee"] = random_resources(b.rng, 1, 3)
        if capacity_fields and b.rng.random() < 0.8:
            fields["deserved"] = random_resources(b.rng, 1, 10)
        if b.rng.random() < 0.1:
            fields["state"] = "Closed"
        names.append(b.add_queue(f"q{i + 1}", **fields))
    return names


def queue_tree(b: Builder) -> list[str]:
    """A queue hierarchy under ``root`` (via ``spec.parent``); returns its leaves."""
    total = sum(n.free.cpu for n in b.nodes) // 1000
    if b.rng.random() < 0.7:
        b.add_queue("root", capability={"cpu": str(total), "memory": f"{total * 4}Gi"})
    leaves: list[str] = []
    for p in range(b.rng.randint(1, 3)):
        parent = f"q{p + 1}"
        share = max(total // 2, 1)
        fields: dict[str, Any] = {"parent": "root", "deserved": {"cpu": str(b.rng.randint(1, share))}}
        if b.rng.random() < 0.4:
            fields["capability"] = {"cpu": str(b.rng.randint(share // 2 + 1, total + 1))}
        b.add_queue(parent, **fields)
        children = b.rng.randint(0, 3)
        if children == 0:
            leaves.append(parent)
        for c in range(children):
            child: dict[str, Any] = {"parent": parent, "reclaimable": b.rng.random() < 0.8}
            if b.rng.random() < 0.7:
                child["deserved"] = {"cpu": str(b.rng.randint(0, share))}
            if b.rng.random() < 0.3:
                child["capability"] = random_resources(b.rng, 1, max(total // 2, 2))
            if b.rng.random() < 0.2:
                child["guarantee"] = {"cpu": str(b.rng.randint(1, 2))}
            if b.rng.random() < 0.05:
                child["state"] = "Closed"
            leaves.append(b.add_queue(f"{parent}-{c + 1}", **child))
    return leaves


def area_queues(b: Builder) -> Obj:
    """Queue fields under a random queue-fairness plugin: weights, capability, states, priority, hierarchy."""
    b.add_nodes()
    kind = b.rng.choice(["proportion", "capacity", "capacity-hierarchy"])
    if kind == "capacity-hierarchy":
        queues = queue_tree(b)
        fairness = plugin("capacity", enableHierarchy=True)
    else:
        queues = flat_queues(b, b.rng.randint(2, 4), capacity_fields=kind == "capacity")
        fairness = plugin(kind)
    random_jobs(b, b.rng.randint(3, 8), queues=[*queues, "default"])
    actions = b.rng.choice(["enqueue, allocate, backfill", "enqueue, allocate, reclaim", "allocate"])
    return conf(actions, base_tier1(), [plugin("drf"), plugin("predicates"), fairness, plugin("nodeorder")])


def area_proportion(b: Builder) -> Obj:
    """proportion's deserved shares by weight, capability and guarantee, with enqueue and reclaim."""
    b.add_nodes(gpus=b.rng.random() < 0.3)
    gpus = any(n.free.gpu for n in b.nodes)
    queues = flat_queues(b, b.rng.randint(1, 4))
    random_jobs(b, b.rng.randint(3, 9), queues=queues, gpus=gpus, running=0.4)
    actions = b.rng.choice(["enqueue, allocate, backfill", "enqueue, allocate, reclaim, backfill", "allocate"])
    return conf(actions, base_tier1(), base_tier2("proportion"))


def area_capacity(b: Builder) -> Obj:
    """The capacity plugin on flat queues: deserved, capability, guarantee; enqueue, allocate, reclaim."""
    b.add_nodes(gpus=b.rng.random() < 0.3)
    gpus = any(n.free.gpu for n in b.nodes)
    queues = flat_queues(b, b.rng.randint(1, 4), capacity_fields=True)
    random_jobs(b, b.rng.randint(3, 9), queues=queues, gpus=gpus, running=0.4)
    actions = b.rng.choice(["enqueue, allocate", "enqueue, allocate, reclaim", "enqueue, allocate, preempt, reclaim"])
    return conf(actions, base_tier1(), base_tier2("capacity"))


def area_capacity_hierarchy(b: Builder) -> Obj:
    """The capacity plugin with enableHierarchy over a queue tree (now and then a job in a non-leaf queue)."""
    b.add_nodes()
    leaves = queue_tree(b)
    random_jobs(b, b.rng.randint(3, 9), queues=leaves, running=0.4)
    others = [q for q in b.queues if q not in leaves and q != "root"]
    if others and b.rng.random() < 0.15:
        # A job in a queue with children makes the whole tree unschedulable, in Volcano as in volcanolib.
        random_jobs(b, 1, queues=others)
    actions = b.rng.choice(["enqueue, allocate", "enqueue, allocate, reclaim", "allocate, reclaim"])
    fairness = plugin("capacity", enableHierarchy=True)
    return conf(actions, base_tier1(), [plugin("drf"), plugin("predicates"), fairness, plugin("nodeorder")])


def area_drf(b: Builder) -> Obj:
    """drf's job order by dominant share, with running jobs holding shares, and drf-preemption."""
    b.add_nodes(gpus=b.rng.random() < 0.3)
    gpus = any(n.free.gpu for n in b.nodes)
    queues = flat_queues(b, b.rng.randint(0, 2))
    random_jobs(b, b.rng.randint(3, 9), queues=[*queues, "default"], gpus=gpus, running=0.4)
    preemptable = b.rng.random() < 0.5
    actions = "enqueue, allocate, preempt" if preemptable else b.rng.choice(["enqueue, allocate", "allocate"])
    drf = plugin("drf", enablePreemptable=preemptable)
    return conf(actions, base_tier1(), [drf, plugin("predicates"), plugin("proportion"), plugin("nodeorder")])


def area_drf_hierarchy(b: Builder) -> Obj:
    """drf with enableHierarchy: queues carry ``volcano.sh/hierarchy`` paths and weights."""
    b.add_nodes()
    paths = [("root/a", "1/2"), ("root/b", "1/1"), ("root/a/x", "1/2/3"), ("root/a/y", "1/2/1"), ("root/c/z", "1/4/1")]
    queues = []
    for i, (path, _) in enumerate(b.rng.sample(paths, b.rng.randint(2, 4))):
        weights = "/".join(str(b.rng.randint(1, 5)) for _ in path.split("/"))
        annotations = {"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights}
        queues.append(b.add_queue(f"q{i + 1}", annotations=annotations))
    random_jobs(b, b.rng.randint(3, 9), queues=queues, running=0.4)
    actions = b.rng.choice(["enqueue, allocate", "allocate", "enqueue, allocate, backfill"])
    drf = plugin("drf", enableHierarchy=True)
    return conf(actions, base_tier1(), [drf, plugin("predicates"), plugin("nodeorder")])


def area_priority(b: Builder) -> Obj:
    """Job and task priorities from PriorityClasses (and ``volcano.sh/task-priority``), with preemption."""
    b.add_nodes(2, 5)
    classes = b.add_priority_classes(never=b.rng.random() < 0.3)
    queues = flat_queues(b, b.rng.randint(0, 2))
    random_jobs(b, b.rng.randint(3, 9), queues=[*queues, "default"], priorities=classes, running=0.4)
    for pod in b.objects["Pod"]:
        if b.rng.random() < 0.15:
            pod["metadata"]["annotations"]["volcano.sh/task-priority"] = str(b.rng.randint(1, 100))
    actions = b.rng.choice(
        ["enqueue, allocate, preempt", "enqueue, allocate, backfill", "enqueue, allocate, preempt, reclaim"]
    )
    return conf(actions, base_tier1(), base_tier2())


def area_gang(b: Builder) -> Obj:
    """Gangs: minMember below the pod count, per-role minimum (minTaskMember, volcano.sh/task-spec)."""
    b.add_nodes(2, 6)
    classes = b.add_priority_classes()
    for _ in range(b.rng.randint(2, 6)):
        masters = b.rng.randint(0, 1)
        workers = b.rng.randint(1, 5)
        roles = ["master"] * masters + ["worker"] * workers
        b.rng.shuffle(roles)
        size = len(roles)
        min_task = {"worker": b.rng.randint(0, workers)}
        if masters:
            min_task["master"] = 1
        # Sometimes a minimum the pods cannot meet, or a minMember above the pod count.
        min_member = b.rng.randint(1, size) if b.rng.random() < 0.9 else size + 1
        b.add_job(
            Job(
                request=random_request(b.rng),
                size=size,
                min_member=min_member,
                namespace="ns1",
                priority_class=b.rng.choice(classes),
                running=size if b.rng.random() < 0.2 else 0,
                min_resources=b.rng.random() < 0.5,
                roles=roles,
                min_task_member=min_task if b.rng.random() < 0.7 else None,
            )
        )
    actions = b.rng.choice(["enqueue, allocate, backfill", "enqueue, allocate, preempt", "allocate"])
    return conf(actions, base_tier1(), base_tier2())


def area_binpack(b: Builder) -> Obj:
    """binpack's scores with random weights over cpu, memory and GPUs, on partly filled nodes."""
    b.add_nodes(gpus=b.rng.random() < 0.4)
    gpus = any(n.free.gpu for n in b.nodes)
    random_jobs(b, b.rng.randint(2, 8), gpus=gpus, running=0.4, gang=b.rng.random() < 0.5)
    arguments: Obj = {
        "binpack.weight": b.rng.randint(1, 10),
        "binpack.cpu": b.rng.randint(0, 5),
        "binpack.memory": b.rng.randint(0, 5),
    }
    if gpus and b.rng.random() < 0.7:
        arguments["binpack.resources"] = GPU
        arguments[f"binpack.resources.{GPU}"] = b.rng.randint(1, 10)
    scoring = [plugin("binpack", arguments)]
    if b.rng.random() < 0.3:
        scoring.append(plugin("nodeorder"))
    return conf("enqueue, allocate", base_tier1(), [plugin("predicates"), plugin("proportion"), *scoring])


def node_affinity(rng: random.Random, required: bool) -> Obj:
    """A node affinity term on the labels :func:`area_nodeorder` and :func:`area_predicates` give nodes."""
    key, ops = rng.choice(
        [("disk", ["In", "NotIn", "Exists", "DoesNotExist"]), ("rank", ["Gt", "Lt", "In"]), (ZONE, ["In", "NotIn"])]
    )
    op = rng.choice(ops)
    values = {"disk": ["ssd", "hdd"], "rank": ["1", "2", "3"], ZONE: ["zone-a", "zone-b"]}[key]
    expression: Obj = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        expression["values"] = rng.sample(values, rng.randint(1, 2))
    elif op in ("Gt", "Lt"):
        expression["values"] = [rng.choice(values)]
    term = {"matchExpressions": [expression]}
    if required:
        return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    return {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": rng.randint(1, 100), "preference": term}]}


def pod_affinity(rng: random.Random, anti: bool, required: bool) -> Obj:
    """A pod (anti-)affinity term on the ``app`` label, by host or zone."""
    term = {
        "labelSelector": {"matchLabels": {"app": rng.choice(["web", "db"])}},
        "topologyKey": rng.choice([HOSTNAME, HOSTNAME, ZONE]),
    }
    kind = "podAntiAffinity" if anti else "podAffinity"
    if required:
        return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.randint(1, 100), "podAffinityTerm": term}
            ]
        }
    }


def taint(rng: random.Random, effects: list[str]) -> Obj:
    """A taint ``dedicated=<team>``."""
    return {"key": "dedicated", "value": rng.choice(["a", "b"]), "effect": rng.choice(effects)}


def toleration(rng: random.Random) -> Obj:
    """A toleration of some ``dedicated`` taints."""
    if rng.random() < 0.3:
        return {"key": "dedicated", "operator": "Exists"}
    tol: Obj = {"key": "dedicated", "operator": "Equal", "value": rng.choice(["a", "b"])}
    if rng.random() < 0.5:
        tol["effect"] = rng.choice(["NoSchedule", "PreferNoSchedule", "NoExecute"])
    return tol


def labelled_nodes(b: Builder, *, effects: list[str], small_pods: float) -> None:
    """Nodes with ``disk`` and ``rank`` labels, some tainted, some unschedulable."""
    for _ in range(b.rng.randint(2, 8)):
        labels = {"rank": str(b.rng.randint(1, 3))}
        if b.rng.random() < 0.6:
            labels["disk"] = b.rng.choice(["ssd", "hdd"])
        taints = [taint(b.rng, effects)] if b.rng.random() < 0.3 else None
        b.add_node(
            random_node_shape(b.rng),
            pods=random_pod_count(b.rng, small_pods),
            labels=labels,
            taints=taints,
            unschedulable=b.rng.random() < 0.05,
        )


def constraint_decorator(b: Builder, *, required: bool, ports: bool) -> PodDecorator:
    """Adds placement constraints to some pods: selectors, affinities, tolerations, host ports."""
    rng = b.rng

    def decorate(pod: Obj, index: int) -> None:
        spec = pod["spec"]
        pod["metadata"].setdefault("labels", {})["app"] = rng.choice(["web", "db", "batch"])
        affinity: Obj = {}
        if rng.random() < 0.25:
            affinity["nodeAffinity"] = node_affinity(rng, required and rng.random() < 0.6)
        if rng.random() < 0.25:
            affinity.update(pod_affinity(rng, anti=rng.random() < 0.6, required=required and rng.random() < 0.6))
        if affinity:
            spec["affinity"] = affinity
        if required and rng.random() < 0.15:
            spec["nodeSelector"] = rng.choice([{"disk": "ssd"}, {ZONE: "zone-a"}, {"rank": "2"}])
        if rng.random() < 0.3:
            spec["tolerations"] = [toleration(rng)]
        if ports and rng.random() < 0.2:
            port = rng.choice([8080, 9090])
            spec["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]

    return decorate


def area_nodeorder(b: Builder) -> Obj:
    """nodeorder's weighted scores: least/most requested, balanced, node and pod affinity, taints."""
    labelled_nodes(b, effects=["PreferNoSchedule"], small_pods=0.0)
    decorate = constraint_decorator(b, required=False, ports=False)
    random_jobs(b, b.rng.randint(2, 7), running=0.4, gang=b.rng.random() < 0.5, decorate=decorate)
    names = [
        "leastrequested.weight",
        "mostrequested.weight",
        "balancedresource.weight",
        "nodeaffinity.weight",
        "podaffinity.weight",
        "tainttoleration.weight",
    ]
    arguments = {k: b.rng.randint(0, 5) for k in names if b.rng.random() < 0.6}
    return conf(
        "enqueue, allocate", base_tier1(), [plugin("predicates"), plugin("proportion"), plugin("nodeorder", arguments)]
    )


def area_predicates(b: Builder) -> Obj:
    """predicates: selectors, node and pod (anti-)affinity, taints, host ports, pod counts, unschedulable nodes."""
    labelled_nodes(b, effects=["NoSchedule", "NoExecute", "PreferNoSchedule"], small_pods=0.3)
    decorate = constraint_decorator(b, required=True, ports=True)
    random_jobs(b, b.rng.randint(3, 8), running=0.4, gang=b.rng.random() < 0.5, decorate=decorate)
    arguments: Obj = {}
    for key in (
        "predicate.NodeAffinityEnable",
        "predicate.PodAffinityEnable",
        "predicate.TaintTolerationEnable",
        "predicate.NodePortsEnable",
    ):
        if b.rng.random() < 0.1:
            arguments[key] = False
    tier2 = [plugin("predicates", arguments), plugin("proportion"), plugin("nodeorder")]
    return conf(b.rng.choice(["enqueue, allocate", "enqueue, allocate, backfill"]), base_tier1(), tier2)


def full_cluster_jobs(b: Builder, queues: list[str], classes: list[str], *, low: str = "low") -> None:
    """Running low-priority jobs that fill much of the cluster, and pending ones above them."""
    for _ in range(b.rng.randint(3, 7)):
        random_job(
            b,
            4,
            runs=True,
            queue=b.rng.choice(queues),
            priority_class=low,
            pod_annotations={"volcano.sh/preemptable": "false"} if b.rng.random() < 0.15 else {},
        )
    for _ in range(b.rng.randint(1, 4)):
        random_job(
            b,
            4,
            runs=b.rng.random() < 0.2,
            queue=b.rng.choice(queues),
            priority_class=b.rng.choice(classes),
            phase=b.rng.choice(["Inqueue", "Inqueue", "Pending"]),
        )


def small_nodes(b: Builder) -> None:
    """2 to 5 small nodes, so that preemption has something to do."""
    for _ in range(b.rng.randint(2, 5)):
        cores = b.rng.choice([2, 4, 4, 8])
        b.add_node(Request(cores * 1000, cores * 2048), pods=random_pod_count(b.rng, 0.15))


def area_preempt(b: Builder) -> Obj:
    """preempt: pending high-priority jobs over running low-priority ones in the same queues."""
    small_nodes(b)
    classes = b.add_priority_classes(never=b.rng.random() < 0.3)
    queues = [*flat_queues(b, b.rng.randint(0, 2)), "default"]
    full_cluster_jobs(b, queues, classes)
    actions = b.rng.choice(
        ["enqueue, allocate, preempt", "enqueue, preempt, allocate", "enqueue, allocate, preempt, backfill"]
    )
    tier1 = base_tier1()
    if b.rng.random() < 0.3:
        tier1[1] = plugin("gang", enablePreemptable=False)
    return conf(
        actions,
        tier1,
        [
            plugin("drf", enablePreemptable=b.rng.random() < 0.3),
            plugin("predicates"),
            plugin("proportion"),
            plugin("nodeorder"),
        ],
    )


def area_preempt_topology(b: Builder) -> Obj:
    """preempt with enableTopologyAwarePreemption (dry-run victim selection), pod anti-affinity and ports."""
    small_nodes(b)
    classes = b.add_priority_classes()
    queues = [*flat_queues(b, b.rng.randint(0, 1)), "default"]
    full_cluster_jobs(b, queues, classes)
    decorate = constraint_decorator(b, required=True, ports=True)
    for pod in b.objects["Pod"]:
        if b.rng.random() < 0.4:
            decorate(pod, 0)
    arguments: Obj = {"enableTopologyAwarePreemption": True}
    if b.rng.random() < 0.5:
        arguments["minCandidateNodesPercentage"] = b.rng.choice([10, 50, 100])
        arguments["minCandidateNodesAbsolute"] = b.rng.randint(1, 3)
    configurations = [{"name": "preempt", "arguments": arguments}]
    return conf("enqueue, allocate, preempt", base_tier1(), base_tier2(), configurations=configurations)


def area_reclaim(b: Builder) -> Obj:
    """reclaim across queues: a queue over its share, reclaimable or not, and starving jobs elsewhere."""
    small_nodes(b)
    classes = b.add_priority_classes(never=b.rng.random() < 0.2)
    fairness = b.rng.choice(["proportion", "capacity"])
    queues = flat_queues(b, b.rng.randint(2, 3), capacity_fields=fairness == "capacity")
    hog = queues[0]
    for _ in range(b.rng.randint(2, 4)):
        random_job(b, 4, runs=True, queue=hog, priority_class=b.rng.choice(classes))
    random_jobs(b, b.rng.randint(2, 5), queues=queues[1:], priorities=classes, running=0.2)
    actions = b.rng.choice(
        ["enqueue, allocate, reclaim", "enqueue, reclaim, allocate", "enqueue, allocate, preempt, reclaim"]
    )
    return conf(actions, base_tier1(), base_tier2(fairness))


def area_backfill(b: Builder) -> Obj:
    """backfill of best-effort pods (no requests) beside regular ones, on nodes with few pod slots."""
    labelled_nodes(b, effects=["NoSchedule"], small_pods=0.5)
    random_jobs(b, b.rng.randint(1, 4), running=0.5)
    decorate = constraint_decorator(b, required=True, ports=False)
    for _ in range(b.rng.randint(1, 6)):
        random_job(
            b,
            3,
            request=Request(),
            namespace=b.rng.choice(["ns1", "ns2"]),
            phase=b.rng.choice(["Pending", "Inqueue"]),
            decorate=decorate if b.rng.random() < 0.4 else None,
        )
    actions = b.rng.choice(["enqueue, allocate, backfill", "enqueue, backfill", "allocate, backfill"])
    return conf(actions, base_tier1(), base_tier2())


def area_enqueue_overcommit(b: Builder) -> Obj:
    """enqueue's admission with the overcommit plugin and its factor; PodGroups with minResources."""
    b.add_nodes(2, 5)
    queues = [*flat_queues(b, b.rng.randint(0, 2)), "default"]
    for _ in range(b.rng.randint(2, 7)):
        runs = b.rng.random() < 0.3
        random_job(
            b,
            6,
            runs=runs,
            queue=b.rng.choice(queues),
            phase=None if runs else b.rng.choice(["Pending", "Pending", "Inqueue"]),
            min_resources=b.rng.random() < 0.8,
        )
    factor = b.rng.choice([1.0, 1.2, 1.5, 2.0, 3.0])
    overcommit = plugin("overcommit", {"overcommit-factor": factor} if b.rng.random() < 0.8 else None)
    tier2 = [overcommit, plugin("drf"), plugin("predicates"), plugin("nodeorder")]
    if b.rng.random() < 0.5:
        tier2.insert(3, plugin("proportion"))
    return conf(b.rng.choice(["enqueue", "enqueue, allocate"]), base_tier1(), tier2)


def area_sla(b: Builder) -> Obj:
    """sla: waiting times (global and per job) against creation times, in job order and enqueue."""
    b.timestamps = True
    b.add_nodes(2, 5)
    for _ in range(b.rng.randint(2, 7)):
        annotations: dict[str, str] = {}
        if b.rng.random() < 0.5:
            key = b.rng.choice(["sla-waiting-time", "volcano.sh/sla-waiting-time"])
            annotations[key] = f"{b.rng.randint(5, 200)}s"
        random_job(
            b,
            5,
            phase=b.rng.choice(["Pending", "Pending", "Inqueue"]),
            min_resources=b.rng.random() < 0.6,
            group_annotations=annotations,
        )
    sla = plugin("sla", {"sla-waiting-time": f"{b.rng.randint(5, 200)}s"} if b.rng.random() < 0.6 else None)
    tier1 = [plugin("priority"), plugin("gang"), sla]
    return conf(b.rng.choice(["enqueue, allocate", "enqueue"]), tier1, base_tier2())


def area_deviceshare(b: Builder) -> Obj:
    """deviceshare: GPU sharing by memory and whole cards by number, unhealthy cards, placed pods' cards."""
    # Volcano refuses both switches at once; pods of the other kind still come, now and then.
    sharing = b.rng.random() < 0.6
    for _ in range(b.rng.randint(2, 5)):
        cards = b.rng.choice([1, 2, 4])
        per_card = b.rng.choice([8000, 16000])
        annotations = None
        if cards > 1 and b.rng.random() < 0.2:
            annotations = {"volcano.sh/gpu-unhealthy-ids": str(b.rng.randrange(cards))}
        b.add_node(
            Request(16000, 65536, 0, per_card * cards, cards),
            pods=random_pod_count(b.rng, 0.1),
            annotations=annotations,
        )
    for _ in range(b.rng.randint(2, 7)):
        if sharing == (b.rng.random() < 0.8):
            request = Request(1000, 1024, gpu_memory=b.rng.choice([1000, 3000, 4000, 8000, 12000]))
        else:
            request = Request(1000, 1024, gpu_number=b.rng.randint(1, 2))
        random_job(b, 4, request=request, phase="Inqueue")
    placed_cards(b)
    arguments = {"deviceshare.GPUSharingEnable": sharing, "deviceshare.GPUNumberEnable": not sharing}
    return conf(
        "allocate", [plugin("priority"), plugin("gang"), plugin("predicates"), plugin("deviceshare", arguments)]
    )


def placed_cards(b: Builder) -> None:
    """Runs a few GPU pods already, each with the ``volcano.sh/gpu-index`` card it holds."""
    for _ in range(b.rng.randint(0, 3)):
        node = b.rng.choice(b.nodes)
        card = b.rng.randrange(node.cards)
        memory = b.rng.choice([2000, 4000])
        request = Request(500, 512, gpu_memory=memory)
        if not request.fits(node.free) or node.pods <= 0:
            continue
        b.add_job(
            Job(request=request, running=1, nodes=[node.name], pod_annotations={"volcano.sh/gpu-index": str(card)})
        )


def hyper_nodes(b: Builder) -> None:
    """Tier-1 HyperNodes of two or three nodes, tier-2 ones over them, sometimes a tier-3 top."""
    names = [n.name for n in b.nodes]
    groups: list[list[str]] = []
    while names:
        take = min(len(names), b.rng.randint(2, 3))
        groups.append(names[:take])
        names = names[take:]
    leaves = []
    for i, group in enumerate(groups):
        leaf = f"s{i}"
        if b.rng.random() < 0.3:
            for n in group:
                b.label_node(n, "rack", leaf)
            members = [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": leaf}}}}]
        else:
            members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in group]
        b.add_hyper_node(leaf, 1, members)
        leaves.append(leaf)
    spines = []
    for i in range(0, len(leaves), 2):
        spine = f"t{i // 2}"
        b.add_hyper_node(
            spine, 2, [{"type": "HyperNode", "selector": {"exactMatch": {"name": s}}} for s in leaves[i : i + 2]]
        )
        spines.append(spine)
    if len(spines) > 1 and b.rng.random() < 0.5:
        b.add_hyper_node("top", 3, [{"type": "HyperNode", "selector": {"exactMatch": {"name": s}}} for s in spines])


def area_network_topology(b: Builder) -> Obj:
    """network-topology-aware: HyperNodes in tiers, PodGroups with hard or soft networkTopology."""
    for _ in range(b.rng.randint(4, 8)):
        cores = b.rng.choice([4, 8])
        b.add_node(Request(cores * 1000, cores * 2048))
    hyper_nodes(b)
    for _ in range(b.rng.randint(2, 5)):
        topology: Obj | None = None
        if b.rng.random() < 0.8:
            topology = {"mode": b.rng.choice(["hard", "soft"]), "highestTierAllowed": b.rng.randint(1, 2)}
        runs = b.rng.random() < 0.2
        random_job(b, 5, runs=runs, phase=None if runs else "Inqueue", network_topology=topology)
    weight = {"weight": b.rng.randint(1, 10)} if b.rng.random() < 0.5 else None
    tier2 = [plugin("predicates"), plugin("proportion"), plugin("nodeorder"), plugin("network-topology-aware", weight)]
    if b.rng.random() < 0.5:
        tier2.append(plugin("binpack"))
    return conf(b.rng.choice(["allocate", "enqueue, allocate"]), base_tier1(), tier2)


def area_multi_session(b: Builder) -> Obj:
    """Several sessions over running, releasing (deletionTimestamp) and pipelined pods."""
    small_nodes(b)
    classes = b.add_priority_classes()
    queues = [*flat_queues(b, b.rng.randint(0, 2)), "default"]
    for _ in range(b.rng.randint(1, 4)):
        random_job(b, 4, runs=True, releasing=True, queue=b.rng.choice(queues), priority_class=b.rng.choice(classes))
    random_jobs(b, b.rng.randint(2, 6), queues=queues, priorities=classes, running=0.2)
    actions = b.rng.choice(
        [
            "enqueue, allocate, backfill",
            "enqueue, allocate, preempt, backfill",
            "enqueue, allocate, reclaim",
            "enqueue, allocate, preempt, reclaim, backfill",
        ]
    )
    return conf(actions, base_tier1(), base_tier2())


AreaBuilder = Callable[[Builder], Obj]

_AREAS: dict[str, AreaBuilder] = {
    "queues": area_queues,
    "proportion": area_proportion,
    "capacity": area_capacity,
    "capacity-hierarchy": area_capacity_hierarchy,
    "drf": area_drf,
    "drf-hierarchy": area_drf_hierarchy,
    "priority": area_priority,
    "gang": area_gang,
    "binpack": area_binpack,
    "nodeorder": area_nodeorder,
    "predicates": area_predicates,
    "preempt": area_preempt,
    "preempt-topology": area_preempt_topology,
    "reclaim": area_reclaim,
    "backfill": area_backfill,
    "enqueue-overcommit": area_enqueue_overcommit,
    "sla": area_sla,
    "deviceshare": area_deviceshare,
    "network-topology": area_network_topology,
    "multi-session": area_multi_session,
}


def generate(seed: int, area: str) -> Obj:
    """A random scenario mapping for ``area`` (one of :data:`AREAS`); the same seed gives the same scenario.

    :raises ValueError: for an unknown area.
    """
    build = _AREAS.get(area)
    if build is None:
        raise ValueError(f"unknown area {area!r}; the areas are {', '.join(AREAS)}")
    b = Builder(random.Random(seed))
    scheduler = build(b)
    sessions = b.rng.randint(2, 4) if area == "multi-session" else 1
    return b.scenario(f"{area}-{seed}", scheduler, sessions)
