"""The data model: resources, tasks, jobs, nodes, queues and cluster snapshots.

Nothing here knows about sessions or plugins.
"""

from volcanolib.api.builders import build_node, build_pod_group, build_queue, build_resource, build_task
from volcanolib.api.cluster import ClusterInfo, SnapshotChanges
from volcanolib.api.fiterrors import FitError, FitErrors
from volcanolib.api.hypernode import HyperNode, HyperNodeMember, HyperNodeTree, MemberType, NetworkTopology
from volcanolib.api.job import ConditionType, JobInfo, PodGroup, PodGroupCondition, PodGroupPhase
from volcanolib.api.node import Node, NodeInfo, Taint
from volcanolib.api.quantity import milli_value, parse_quantity, value
from volcanolib.api.queue import QueueInfo, QueueState
from volcanolib.api.resource import Mode, Resource
from volcanolib.api.task import ALLOCATED_STATUSES, Pod, TaskInfo, TaskStatus, allocated_status

__all__ = [
    "ALLOCATED_STATUSES",
    "ClusterInfo",
    "ConditionType",
    "FitError",
    "FitErrors",
    "HyperNode",
    "HyperNodeMember",
    "HyperNodeTree",
    "JobInfo",
    "MemberType",
    "Mode",
    "NetworkTopology",
    "Node",
    "NodeInfo",
    "Pod",
    "PodGroup",
    "PodGroupCondition",
    "PodGroupPhase",
    "QueueInfo",
    "QueueState",
    "Resource",
    "SnapshotChanges",
    "Taint",
    "TaskInfo",
    "TaskStatus",
    "allocated_status",
    "build_node",
    "build_pod_group",
    "build_queue",
    "build_resource",
    "build_task",
    "milli_value",
    "parse_quantity",
    "value",
]
