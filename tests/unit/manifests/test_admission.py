"""Volcano's admission of Jobs, Queues and PodGroups: the defaults its mutating webhooks set, what it refuses."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from volcanolib.controllers import JobController
from volcanolib.errors import ManifestError
from volcanolib.kube.loader import ManifestLoader
from volcanolib.manifests.admission import (
    QueueFacts,
    admit_job,
    default_job,
    default_pod_group,
    default_queue,
    read_policies,
    validate_job,
    validate_pod_group,
    validate_queue,
)
from volcanolib.manifests.fields import Ref


def container(name: str = "c", cpu: str = "1") -> dict[str, Any]:
    return {"name": name, "image": "busybox", "resources": {"requests": {"cpu": cpu}}}


def task(name: str | None, replicas: int, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"replicas": replicas, "template": {"spec": {"containers": [container()]}}}
    if name is not None:
        out["name"] = name
    out.update(extra)
    return out


def job(*tasks: dict[str, Any], name: str = "j", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns1"},
        "spec": {"tasks": list(tasks) or [task("a", 2)], **spec},
    }


REF = Ref("job.yaml", "objects[0]", "Job", "j", "ns1")


def refusal(manifest: dict[str, Any], queues: dict[str, QueueFacts] | None = None) -> str:
    with pytest.raises(ManifestError) as info:
        admit_job(manifest, REF, queues=queues)
    return str(info.value)


# ---------------------------------------------------------------------- Job defaults


def test_job_defaults_are_those_of_the_mutating_webhook() -> None:
    manifest = job(
        task(None, 2),
        task("b", 3, minAvailable=1, maxRetry=0),
        task("c", 4, partitionPolicy={"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1}),
        plugins={"tensorflow": []},
    )
    manifest["spec"]["tasks"][0]["template"]["spec"]["hostNetwork"] = True
    before = copy.deepcopy(manifest)
    spec = default_job(manifest, scheduler_name="vc", default_queue="q0")["spec"]
    assert manifest == before  # the argument is left as it was
    assert (spec["queue"], spec["schedulerName"], spec["maxRetry"]) == ("q0", "vc", 3)
    assert [t["name"] for t in spec["tasks"]] == ["default0", "b", "c"]
    assert [t["minAvailable"] for t in spec["tasks"]] == [2, 1, 2]  # replicas; as set; minPartitions x size
    assert [t["maxRetry"] for t in spec["tasks"]] == [3, 3, 3]
    assert spec["tasks"][0]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert "dnsPolicy" not in spec["tasks"][1]["template"]["spec"]
    assert spec["minAvailable"] == 5  # the sum of the tasks' minAvailable
    assert spec["plugins"] == {"tensorflow": [], "svc": []}


def test_mpi_brings_svc_and_ssh_and_explicit_values_stay() -> None:
    manifest = job(
        task("master", 1),
        task("worker", 2),
        plugins={"mpi": []},
        queue="q1",
        schedulerName="other",
        maxRetry=5,
        minAvailable=2,
    )
    spec = default_job(manifest)["spec"]
    assert spec["plugins"] == {"mpi": [], "svc": [], "ssh": []}
    assert (spec["queue"], spec["schedulerName"], spec["maxRetry"], spec["minAvailable"]) == ("q1", "other", 5, 2)


def test_an_explicit_zero_min_available_counts_as_unset() -> None:
    assert default_job(job(task("a", 3), minAvailable=0))["spec"]["minAvailable"] == 3


# ---------------------------------------------------------------------- Job refusals


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (job(task("a", 1), task("a", 2)), "spec.tasks[1].name: duplicate task name 'a'"),
        (job(task("a", 1), minAvailable=2), "spec.minAvailable: 2 is more than the 1 replicas"),
        (job(task("a", 1, minAvailable=2)), "spec.tasks[0].minAvailable: 2 is more than the task's 1 replicas"),
        (job(task("a", -1)), "spec.tasks[0].replicas: must be at least 0"),
        (job(task("Big_Task", 1)), "spec.tasks[0].name: the task name 'Big_Task' is not a DNS label"),
        (job(task("a", 1), name="j" * 70), "metadata.name: the Job's name"),
        (job(task("t" * 60, 1)), "spec.tasks[0].name: its pods' names such as"),
        (job(task("a", 1), maxRetry=-1), "spec.maxRetry: must be at least 0"),
        (job(task("a", 1), minSuccess=0), "spec.minSuccess: must be at least 1"),
        (job(task("a", 1), ttlSecondsAfterFinished=-5), "spec.ttlSecondsAfterFinished: must be at least 0"),
        (job(task("a", 1), plugins={"envv": []}), "spec.plugins.envv: unknown job plugin 'envv'"),
        (job(task("a", 1), plugins={"mpi": []}), "spec.plugins.mpi: the mpi plugin's master task 'master'"),
        (
            job(task("lead", 1), task("worker", 1), plugins={"mpi": ["--master=boss"]}),
            "the mpi plugin's master task 'boss' is not a task of this Job",
        ),
        (
            job(task("a", 1), policies=[{"event": "PodFailed", "action": "RestartJobb"}]),
            "spec.policies[0].action: unknown action 'RestartJobb'",
        ),
        (
            job(task("a", 1), policies=[{"exitCode": 3, "action": "Whatever"}]),
            "spec.policies[0].action: unknown action 'Whatever'",
        ),
        (
            job(task("a", 1), policies=[{"events": ["PodFailed", "OutOfSync"], "action": "AbortJob"}]),
            "spec.policies[0].events: unknown event 'OutOfSync'",
        ),
        (
            job(
                task("a", 1),
                policies=[{"event": "PodFailed", "action": "RestartJob"}, {"event": "PodFailed", "action": "AbortJob"}],
            ),
            "spec.policies[1]: event 'PodFailed' is already handled by policy 0",
        ),
        (
            job(task("a", 1, policies=[{"event": "*", "action": "AbortJob"}, {"event": "PodFailed", "action": "X"}])),
            "spec.tasks[0].policies[1].action: unknown action 'X'",
        ),
        (
            job(task("a", 1, policies=[{"event": "*", "action": "AbortJob"}, {"exitCode": 1, "action": "AbortJob"}])),
            "",  # '*' with an exit-code policy is accepted: '*' excludes only other events
        ),
        (
            job(task("a", 1), policies=[{"exitCode": 0, "action": "AbortJob"}]),
            "spec.policies[0].exitCode: 0 is a success",
        ),
        (
            job(task("a", 1), policies=[{"exitCode": 1, "action": "AbortJob"}, {"exitCode": 1, "action": "AbortJob"}]),
            "spec.policies[1].exitCode: exit code 1 is already handled by policy 0",
        ),
        (
            job(task("a", 1), policies=[{"event": "PodFailed", "exitCode": 1, "action": "AbortJob"}]),
            "spec.policies[0]: a policy names events or an exitCode, not both",
        ),
        (job(task("a", 1), policies=[{"action": "AbortJob"}]), "spec.policies[0]: a policy needs events or an exit"),
        (
            job(task("a", 1), volumes=[{"mountPath": "/d", "volumeClaimName": "x"}, {"mountPath": "/d"}]),
            "spec.volumes[1].mountPath: mount path '/d' is used twice",
        ),
        (job(task("a", 1), volumes=[{"mountPath": "/d"}]), "spec.volumes[0]: a volume needs volumeClaim"),
        (
            job(task("a", 1), networkTopology={"highestTierAllowed": 1, "highestTierName": "rack"}),
            "spec.networkTopology: highestTierAllowed and highestTierName exclude each other",
        ),
        (
            job(task("a", 1, topologyPolicy="best-effort", template={"spec": {"containers": [container(cpu="500m")]}})),
            "spec.tasks[0].template.spec.containers[0].resources: with a topologyPolicy",
        ),
        (
            job(task("a", 1, template={"spec": {"containers": [container(), container()]}})),
            "spec.tasks[0].template.spec.containers[1].name: duplicate container name 'c'",
        ),
        (
            job(task("a", 4, partitionPolicy={"totalPartitions": 3, "partitionSize": 2})),
            "spec.tasks[0].partitionPolicy: replicas 4 differ from totalPartitions x partitionSize (6)",
        ),
        (job(task("a", 1, dependsOn={"name": ["b"]})), "spec.tasks[0].dependsOn.name[0]: no task named 'b'"),
        (
            job(task("a", 1, dependsOn={"name": ["b"]}), task("b", 1, dependsOn={"name": ["a"]})),
            "spec.tasks: the tasks' dependsOn form a cycle: a -> b -> a",
        ),
        (job(), ""),
    ],
)
def test_the_webhooks_refusals(manifest: dict[str, Any], message: str) -> None:
    if not message:
        admit_job(manifest, REF)
        return
    text = refusal(manifest)
    assert text.startswith("job.yaml: Job ns1/j: "), text
    assert message in text, text


def test_no_task_is_refused() -> None:
    assert "spec.tasks: missing required field: a Job needs at least one task" in refusal(
        {"kind": "Job", "metadata": {"name": "j"}, "spec": {"tasks": []}}
    )


@pytest.mark.parametrize(
    "policy",
    [
        {"events": ["PodEvicted", "PodFailed", "PodEvicted"], "action": "RestartJob"},
        {"event": "PodFailed", "events": ["PodFailed"], "action": "RestartJob"},
    ],
)
def test_an_event_repeated_within_one_policy_counts_once(policy: dict[str, Any]) -> None:
    (read,) = read_policies([policy], REF, "spec.policies")
    assert read.events == frozenset(policy.get("events", [])) | {policy.get("event", "PodFailed")}
    # the job controller takes the Job and the policy fires once on the event
    manifest = job(task("a", 1), policies=[policy])
    manifest["metadata"]["uid"] = "u"
    ctrl = JobController()
    ctrl.submit(manifest, now=0.0)
    ctrl.pod_group_phase("ns1", "j-u", "Inqueue", now=1.0)
    ctrl.pod_phase("ns1", "j-a-0", "Failed", now=2.0, exit_code=1)
    assert (ctrl.job("ns1", "j").phase, ctrl.job("ns1", "j").retry_count) == ("Restarting", 1)


def test_simulate_and_the_job_controller_agree_on_what_is_refused() -> None:
    ok = job(task("a", 1), policies=[{"events": ["PodFailed", "PodFailed"], "action": "AbortJob"}])
    bad = job(task("a", 1), policies=[{"event": "PodFailed", "action": "RestartJobb"}])
    for manifest, accepted in ((ok, True), (bad, False)):
        loader = ManifestLoader()
        loader.add(copy.deepcopy(manifest), source="s.yaml", where="objects[0]")
        outcomes = []
        for run in (loader.load, lambda m=manifest: JobController().submit(copy.deepcopy(m), now=0.0)):
            try:
                run()
            except ManifestError as exc:
                outcomes.append(exc.field)
            else:
                outcomes.append(None)
        assert outcomes == ([None, None] if accepted else ["spec.policies[0].action"] * 2)


# ---------------------------------------------------------------------- a Job and its queue


QUEUES = {
    "root": QueueFacts("root"),
    "default": QueueFacts("default", parent="root"),
    "closed": QueueFacts("closed", state="Closed"),
    "eng": QueueFacts("eng", parent="root"),
    "eng-dev": QueueFacts("eng-dev", parent="eng"),
}


@pytest.mark.parametrize(
    ("queue", "message"),
    [
        ("nowhere", "spec.queue: queue 'nowhere' does not exist"),
        ("closed", "spec.queue: queue 'closed' is Closed: only an Open queue takes a new Job"),
        ("root", "spec.queue: the root queue takes no jobs"),
        ("eng", "spec.queue: queue 'eng' has child queues (eng-dev): only a leaf queue takes jobs"),
        ("eng-dev", ""),
        ("default", ""),
    ],
)
def test_a_new_job_needs_an_open_leaf_queue(queue: str, message: str) -> None:
    manifest = job(task("a", 1), queue=queue)
    if message:
        assert message in refusal(manifest, QUEUES)
    else:
        admit_job(manifest, REF, queues=QUEUES)
    # a Job with a status was admitted when it was created: its queue is not judged again
    manifest["status"] = {"state": {"phase": "Running"}}
    admit_job(manifest, REF, queues=QUEUES)


# ---------------------------------------------------------------------- Queues


def queue(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def test_queue_defaults() -> None:
    raw = queue("q", weight=0)
    raw["metadata"]["annotations"] = {"volcano.sh/hierarchy": "eng/dev", "volcano.sh/hierarchy-weights": "2/3"}
    out = default_queue(raw)
    assert (out["spec"]["weight"], out["spec"]["reclaimable"]) == (1, True)
    assert out["metadata"]["annotations"] == {
        "volcano.sh/hierarchy": "root/eng/dev",
        "volcano.sh/hierarchy-weights": "1/2/3",
    }
    assert raw["spec"]["weight"] == 0
    kept = default_queue(queue("q", weight=4, reclaimable=False))["spec"]
    assert (kept["weight"], kept["reclaimable"]) == (4, False)


@pytest.mark.parametrize(
    ("raw", "message", "created"),
    [
        (queue("q", weight=-1), "spec.weight: must be from 0 to 65535, got -1", False),
        (queue("q", weight=70000), "spec.weight: must be from 0 to 65535", False),
        ({**queue("q"), "status": {"state": "Closing"}}, "status.state: unknown queue state 'Closing'", True),
        ({**queue("q"), "status": {"state": "Sleeping"}}, "status.state: unknown queue state 'Sleeping'", False),
        (queue("q", capability={"cpu": "2"}, deserved={"cpu": "4"}), "spec.deserved: deserved must not exceed", True),
        (
            queue("q", capability={"cpu": "2"}, deserved={"cpu": "2"}, guarantee={"resource": {"cpu": "3"}}),
            "spec.guarantee.resource: guarantee must not exceed capability",
            True,
        ),
        (
            queue("q", guarantee={"resource": {"cpu": "1"}}),
            "spec.guarantee.resource: guarantee must not exceed deserved",
            True,
        ),
        (queue("q", parent="q"), "spec.parent: a queue cannot be its own parent", True),
        (queue("q", parent="nope"), "spec.parent: parent queue 'nope' does not exist", True),
        (queue("q", parent="p", capability={"cpu": "8"}), "spec.capability: capability exceeds parent queue p's", True),
        (
            queue("q", parent="p", deserved={"cpu": "3"}, guarantee={"resource": {"cpu": "3"}}),
            "the children's guarantee together exceed queue p's limit",
            True,
        ),
    ],
)
def test_queue_refusals(raw: dict[str, Any], message: str, created: bool) -> None:
    others = [queue("p", capability={"cpu": "4"}, guarantee={"resource": {"cpu": "4"}}, deserved={"cpu": "4"})]
    others.append(queue("sibling", parent="p", deserved={"cpu": "1"}, guarantee={"resource": {"cpu": "2"}}))
    with pytest.raises(ManifestError) as info:
        validate_queue(default_queue(raw), queues=others, created=created)
    assert message in str(info.value)


def test_hierarchy_annotations_must_match() -> None:
    raw = queue("q")
    raw["metadata"]["annotations"] = {"volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1"}
    with pytest.raises(ManifestError, match="must have as many levels"):
        validate_queue(raw, created=False)
    raw["metadata"]["annotations"]["volcano.sh/hierarchy-weights"] = "1/0"
    with pytest.raises(
        ManifestError, match=re.escape("weight '0' of volcano.sh/hierarchy-weights is not a number above 0")
    ):
        validate_queue(raw, created=False)


def test_a_stored_queue_is_not_judged_by_the_create_time_rules() -> None:
    raw = {**queue("q", guarantee={"resource": {"cpu": "1"}}), "status": {"state": "Closing"}}
    validate_queue(raw, created=False)  # as a stored object: fine


def test_the_loader_reads_a_stored_queue_as_it_is_and_applies_the_schema() -> None:
    loader = ManifestLoader()
    loader.add(queue("q", weight=0), source="s.yaml")
    cluster = loader.load()
    (q,) = cluster.queues
    assert q.weight == 0  # the webhook's default is for a queue being created, not for one stored
    assert any("spec.weight is 0" in w for w in cluster.warnings)
    loader = ManifestLoader()
    loader.add(queue("q", weight=-2), source="s.yaml")
    with pytest.raises(ManifestError, match=re.escape("s.yaml: Queue q: spec.weight: must be from 0 to 65535, got -2")):
        loader.load()


# ---------------------------------------------------------------------- PodGroups


def test_pod_group_defaults_and_refusals() -> None:
    pg = {"kind": "PodGroup", "metadata": {"name": "pg", "namespace": "ns"}, "spec": {"minMember": 1}}
    assert default_pod_group(pg)["spec"]["queue"] == "default"
    annotated = default_pod_group(pg, namespace_annotations={"scheduling.volcano.sh/queue-name": "team"})
    assert annotated["spec"]["queue"] == "team"
    named = {**pg, "spec": {"queue": "mine"}}
    assert (
        default_pod_group(named, namespace_annotations={"scheduling.volcano.sh/queue-name": "team"})["spec"]["queue"]
        == "mine"
    )
    validate_pod_group(default_pod_group(pg), queues=QUEUES)
    with pytest.raises(ManifestError, match=re.escape("PodGroup ns/pg: spec.queue: queue 'closed' is Closed")):
        validate_pod_group({**pg, "spec": {"queue": "closed"}}, queues=QUEUES)
    with pytest.raises(ManifestError, match=re.escape("spec.networkTopology: highestTierAllowed and highestTierName")):
        validate_pod_group({**pg, "spec": {"networkTopology": {"highestTierAllowed": 2, "highestTierName": "x"}}})


def test_validate_job_reads_a_defaulted_job_and_leaves_it_alone() -> None:
    manifest = default_job(job(task("a", 2)))
    before = copy.deepcopy(manifest)
    validate_job(manifest, REF)
    assert manifest == before
