"""Converted traces replay as the spec says: runtimes from the trace, Failed pods, patience, GPU models, gangs.

Each check reads the per-pod records only, as anyone re-checking a replay would.
"""

from __future__ import annotations

from pathlib import Path

from volcanolib.replay import load_workload, run_replay
from volcanolib.replay.records import PodRecord
from volcanolib.replay.traces import TRACE_FORMATS, export_objects

DATA = Path(__file__).resolve().parent / "data"
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def pods_by_name(pods: list[PodRecord]) -> dict[str, PodRecord]:
    return {p.name.split("/", 1)[1]: p for p in pods}


def test_openb_pods_run_their_trace_runtimes_on_their_gpu_models() -> None:
    record = run_replay(load_workload([DATA / "openb_pods.csv"], format="openb", nodes=DATA / "openb_nodes.csv"))
    pods = pods_by_name(record.pods)
    for name, runtime in {"p-whole": 3598, "p-frac": 600, "p-multi": 870, "p-cpu": 59.5, "p-never": 60}.items():
        pod = pods[name]
        assert pod.started is not None and pod.finished is not None
        assert pod.finished - pod.started == runtime, name
    assert pods["p-multi"].phase == "Failed"
    assert {p.phase for n, p in pods.items() if n != "p-multi"} == {"Succeeded"}
    assert pods["p-multi"].node in {"gpu-node-a", "gpu-node-c"}
    assert pods["p-never"].node == "gpu-node-b"
    assert pods["p-frac"].request["nvidia.com/gpu"] == 1.0


def test_a_pod_that_never_ran_gives_up_after_its_lifetime(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nt4,16000,65536,2,T4\n")
    trace = tmp_path / "pods.csv"
    trace.write_text(
        f"{HEADER}\n"
        "big,4000,4096,2,1000,,LS,Running,0,1000,0\n"  # holds both GPUs for 1000 s
        "impatient,1000,1024,1,300,T4,BE,Pending,10,110,\n"  # waits 100 s, then is deleted
        "patient,1000,1024,1,300,,BE,Pending,20,2000,\n"  # waits up to 1980 s, then runs 1980 s
    )
    pods = pods_by_name(run_replay(load_workload([trace], format="openb", nodes=nodes)).pods)
    assert (pods["impatient"].phase, pods["impatient"].bound, pods["impatient"].finished) == ("Deleted", None, 110.0)
    assert (pods["patient"].started, pods["patient"].finished, pods["patient"].phase) == (1000.0, 2980.0, "Succeeded")


def test_the_exported_file_replays_like_the_trace(tmp_path: Path) -> None:
    paths = [DATA / "helios_cluster_log.csv", DATA / "helios_gpu_number.csv"]
    nodes = DATA / "helios_nodes.csv"
    exported = tmp_path / "helios.yaml"
    export_objects(TRACE_FORMATS["helios"].read(paths, nodes), exported)
    direct = run_replay(load_workload(paths, format="helios", nodes=nodes))
    again = run_replay(load_workload([exported]))
    assert [(p.name, p.node, p.started, p.finished, p.phase) for p in direct.pods] == [
        (p.name, p.node, p.started, p.finished, p.phase) for p in again.pods
    ]
    assert [(j.name, j.queue, j.phase) for j in direct.jobs] == [(j.name, j.queue, j.phase) for j in again.jobs]


def test_a_helios_job_starts_as_a_gang_and_fails_as_the_trace_says() -> None:
    paths = [DATA / "helios_cluster_log.csv", DATA / "helios_gpu_number.csv"]
    record = run_replay(load_workload(paths, format="helios", nodes=DATA / "helios_nodes.csv"))
    jobs = {j.name: j for j in record.jobs}
    gang = [p for p in record.pods if p.job == "default/job-1002"]
    assert len(gang) == 2 and len({p.started for p in gang}) == 1 and len({p.node for p in gang}) == 2
    assert jobs["default/job-1002"].queue == "vcTeamB"
    assert jobs["default/job-1002"].phase == "Failed"
    assert jobs["default/job-1001"].phase == "Completed"
