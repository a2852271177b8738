"""teamfence: keep fenced teams on their own nodes and run jobs by deadline.

An example of a volcanolib plugin shipped as its own package. It does two
things:

* **Fence.** A task belongs to the team named by its pod label
  ``teamfence.teamLabel`` (default ``team``), or, when the pod has no such
  label, by the same label on its PodGroup. A task of a *fenced* team
  (``teamfence.fencedTeams``) may only run on a node whose label
  ``teamfence.nodeLabel`` (default ``example.com/teams``) lists that team,
  comma separated. Tasks of other teams, and tasks without a team, may run
  anywhere.
* **Deadline order.** A job whose PodGroup carries the annotation
  ``teamfence.deadlineAnnotation`` (default ``example.com/deadline``, an ISO
  8601 time such as ``2030-01-31T18:00:00Z``) goes before a job with a later
  deadline, and before every job without one. A missing or unreadable
  deadline is no opinion: such jobs are left to the next plugins.

Configured by name, like any plugin::

    tiers:
    - plugins:
      - name: gang
      - name: teamfence
        arguments:
          teamfence.fencedTeams: [interns]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, ClassVar, Final

import attrs

from volcanolib import Status, Traits, argument, hookimpl
from volcanolib.framework.arguments import parse_str

if TYPE_CHECKING:
    from volcanolib import JobInfo, NodeInfo, Session, TaskInfo

__all__ = [
    "DEFAULT_DEADLINE_ANNOTATION",
    "DEFAULT_NODE_LABEL",
    "DEFAULT_TEAM_LABEL",
    "NO_DEADLINE",
    "TeamFenceArguments",
    "TeamFencePlugin",
    "parse_deadline",
]

#: The pod (or PodGroup) label naming a task's team, unless configured otherwise.
DEFAULT_TEAM_LABEL: Final = "team"
#: The node label listing the fenced teams a node accepts, unless configured otherwise.
DEFAULT_NODE_LABEL: Final = "example.com/teams"
#: The PodGroup annotation holding a job's deadline, unless configured otherwise.
DEFAULT_DEADLINE_ANNOTATION: Final = "example.com/deadline"
#: The order key of a job without a deadline: after every job that has one.
NO_DEADLINE: Final = math.inf


def parse_deadline(raw: str | None) -> float:
    """Turn a deadline annotation into seconds since the epoch.

    Accepts ISO 8601 times; a trailing ``Z`` means UTC, and a time without
    an offset is taken as UTC.

    :returns: the deadline, or :data:`NO_DEADLINE` when ``raw`` is missing
        or not a time.

    >>> parse_deadline("1970-01-01T00:01:00Z")
    60.0
    >>> parse_deadline("next tuesday")
    inf
    """
    if not raw:
        return NO_DEADLINE
    text = raw.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return NO_DEADLINE
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _label_key(raw: object) -> str:
    """A non-empty string (a label or annotation key)."""
    value = parse_str(raw).strip()
    if not value:
        raise ValueError("must not be empty")
    return value


def _team_names(raw: object) -> frozenset[str]:
    """A list of team names, given as a YAML list or a comma-separated string."""
    items: Sequence[object]
    if isinstance(raw, str):
        items = raw.split(",")
    elif isinstance(raw, (list, tuple)):
        items = raw
    else:
        items = [raw]
    names = set()
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"expected a list of team names or a comma-separated string, got {raw!r}")
        names.add(item.strip())
    return frozenset(names)


@attrs.frozen
class TeamFenceArguments:
    """The arguments of teamfence, all optional."""

    team_label: str = argument(
        key="teamfence.teamLabel",
        default=DEFAULT_TEAM_LABEL,
        doc="The pod or PodGroup label naming a task's team.",
        parse=_label_key,
    )
    node_label: str = argument(
        key="teamfence.nodeLabel",
        default=DEFAULT_NODE_LABEL,
        doc="The node label listing, comma separated, the fenced teams the node accepts.",
        parse=_label_key,
    )
    deadline_annotation: str = argument(
        key="teamfence.deadlineAnnotation",
        default=DEFAULT_DEADLINE_ANNOTATION,
        doc="The PodGroup annotation with the job's deadline.",
        parse=_label_key,
    )
    fenced_teams: frozenset[str] = argument(
        key="teamfence.fencedTeams",
        default=frozenset(),
        doc="The teams kept on their nodes: a list, or a comma-separated string (none: the fence is off).",
        parse=_team_names,
    )


class TeamFencePlugin:
    """Keeps fenced teams on the nodes that accept them; orders jobs by deadline.

    Its arguments are declared by :class:`TeamFenceArguments`; the
    scheduler parses them when it loads the configuration and refuses one
    with a wrong type or an empty label key, naming the key.
    """

    name: ClassVar[str] = "teamfence"
    Arguments: ClassVar[type[TeamFenceArguments]] = TeamFenceArguments
    #: What it promises across sessions (docs/incremental.md): no clock, a job's key read from the job
    #: alone, no job status written but through the session.
    traits: ClassVar[Traits] = Traits(clock_free=True, local_job_keys=True, status_through_session=True)

    def __init__(self, arguments: TeamFenceArguments) -> None:
        self.team_label = arguments.team_label
        self.node_label = arguments.node_label
        self.deadline_annotation = arguments.deadline_annotation
        self.fenced_teams = arguments.fenced_teams
        # Per-session state, filled in on_session_open.
        self._deadlines: dict[str, float] = {}
        self._accepted: dict[str, frozenset[str]] = {}

    # ------------------------------------------------------------------ session lifecycle

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        """Read every job's deadline and every node's accepted teams once per session.

        The plugin object outlives sessions, so this also drops what the
        previous session computed.
        """
        self._deadlines = {
            uid: parse_deadline(job.pod_group.annotations.get(self.deadline_annotation))
            for uid, job in ssn.jobs.items()
        }
        self._accepted = {name: self._teams_of_node(node) for name, node in ssn.nodes.items()}

    @hookimpl
    def on_session_close(self, ssn: Session) -> None:
        """Forget the session's jobs and nodes."""
        self._deadlines = {}
        self._accepted = {}

    # ------------------------------------------------------------------ deadline order

    def _deadline(self, job: JobInfo) -> float:
        """The job's deadline, read at session open (or now, for a job the session did not start with)."""
        deadline = self._deadlines.get(job.uid)
        if deadline is None:
            deadline = parse_deadline(job.pod_group.annotations.get(self.deadline_annotation))
        return deadline

    @hookimpl
    def job_order(self, ssn: Session, left: JobInfo, right: JobInfo) -> int:
        """The job with the earlier deadline goes first; a job with a deadline goes before one without.

        Two jobs with the same deadline, or both without one, get ``0``
        (no opinion).
        """
        left_deadline, right_deadline = self._deadline(left), self._deadline(right)
        if left_deadline == right_deadline:
            return 0
        return -1 if left_deadline < right_deadline else 1

    @hookimpl
    def job_order_key(self, ssn: Session, job: JobInfo) -> float:
        """Key form of :meth:`job_order`: the deadline in seconds, :data:`NO_DEADLINE` when there is none."""
        return self._deadline(job)

    # ------------------------------------------------------------------ fence

    def _teams_of_node(self, node: NodeInfo) -> frozenset[str]:
        """The fenced teams a node accepts, from its label."""
        raw = node.node.labels.get(self.node_label, "")
        return frozenset(team.strip() for team in raw.split(",") if team.strip())

    def _team(self, ssn: Session, task: TaskInfo) -> str:
        """The task's team: its pod label, else its PodGroup label, else ``""``."""
        if task.pod is not None:
            team = task.pod.labels.get(self.team_label)
            if team:
                return team
        job = ssn.jobs.get(task.job)
        if job is not None:
            return job.pod_group.labels.get(self.team_label, "")
        return ""

    def _check(self, team: str, node: NodeInfo) -> Status:
        """Whether a node accepts a fenced team."""
        accepted = self._accepted.get(node.name)
        if accepted is None:
            accepted = self._teams_of_node(node)
        if team in accepted:
            return Status.success()
        # Evicting tasks from the node cannot change its labels, so preempt and reclaim skip it.
        return Status.unresolvable(f"node(s) not open to team {team}")

    @hookimpl
    def predicate(self, ssn: Session, task: TaskInfo, node: NodeInfo) -> Status:
        """Refuse a node to a task of a fenced team unless the node's label lists the team.

        :returns: success for tasks of other teams; ``UNSCHEDULABLE_AND_UNRESOLVABLE``
            with the reason ``node(s) not open to team <team>`` otherwise.
        """
        team = self._team(ssn, task)
        if team not in self.fenced_teams:
            return Status.success()
        return self._check(team, node)

    @hookimpl
    def batch_predicate(self, ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> Mapping[str, Status]:
        """:meth:`predicate` over many nodes: the team is looked up once.

        :returns: the refused nodes only, by name (empty for other teams).
        """
        team = self._team(ssn, task)
        if team not in self.fenced_teams:
            return {}
        failures: dict[str, Status] = {}
        for node in nodes:
            status = self._check(team, node)
            if not status.ok:
                failures[node.name] = status
        return failures
