"""Replay over time: a workload's jobs arrive, are scheduled, run and finish, session after session.

::

    from volcanolib.replay import ReplayOptions, load_workload, run_replay

    workload = load_workload(["examples/replay/workload.yaml"])
    record = run_replay(workload, options=ReplayOptions(period=1.0))

The scheduling decisions are made by the same :class:`~volcanolib.scheduler.Scheduler`
as everywhere else; the engine (:mod:`volcanolib.replay.engine`) adds the
clock, the job controller and a simulated kubelet.
"""

from volcanolib.replay.engine import ReplayOptions, run_replay
from volcanolib.replay.inputs import Workload, load_workload, parse_duration
from volcanolib.replay.records import JobRecord, PodRecord, QueueRecord, ReplayRecord, Sample

__all__ = [
    "JobRecord",
    "PodRecord",
    "QueueRecord",
    "ReplayOptions",
    "ReplayRecord",
    "Sample",
    "Workload",
    "load_workload",
    "parse_duration",
    "run_replay",
]
