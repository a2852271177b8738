"""volcanolib: batch scheduling with the architecture of the Volcano scheduler.

This module re-exports the public API; nothing else lives here.
"""

from volcanolib.api import (
    ClusterInfo,
    HyperNode,
    HyperNodeMember,
    HyperNodeTree,
    JobInfo,
    MemberType,
    Mode,
    NetworkTopology,
    Node,
    NodeInfo,
    Pod,
    PodGroup,
    PodGroupPhase,
    QueueInfo,
    QueueState,
    Resource,
    Taint,
    TaskInfo,
    TaskStatus,
    build_node,
    build_pod_group,
    build_queue,
    build_resource,
    build_task,
)
from volcanolib.cache import Binder, Cache, Evictor, InMemoryCache, StatusUpdater
from volcanolib.errors import (
    CacheError,
    ConfigError,
    ManifestError,
    MissingExtraError,
    PluginConfigError,
    PluginError,
    PluginNotFoundError,
    QuantityError,
    ResourceError,
    VolcanolibError,
)
from volcanolib.framework.action import BaseAction
from volcanolib.framework.arguments import NoArguments, argument, argument_per_name, argument_table, parse_arguments
from volcanolib.framework.config import Arguments, SchedulerConfig, load_config, parse_config
from volcanolib.framework.nodeclass import NodeClassKey
from volcanolib.framework.placement import Placement, PredicateCache
from volcanolib.framework.plugin_session import PluginSession
from volcanolib.framework.queues import PriorityQueue, job_queues
from volcanolib.framework.registry import Action, Plugin, Registry, hookimpl
from volcanolib.framework.session import Session
from volcanolib.framework.statement import Savepoint, Statement
from volcanolib.framework.status import Code, Event, Status, Vote
from volcanolib.framework.sums import PartSums
from volcanolib.framework.traits import Traits
from volcanolib.framework.victims import EvictionContext, EvictionKind, VictimOrder
from volcanolib.scheduler import CycleResult, Scheduler

__version__ = "0.1.0"

__all__ = [
    "Action",
    "Arguments",
    "BaseAction",
    "Binder",
    "Cache",
    "CacheError",
    "ClusterInfo",
    "Code",
    "ConfigError",
    "CycleResult",
    "Event",
    "EvictionContext",
    "EvictionKind",
    "Evictor",
    "HyperNode",
    "HyperNodeMember",
    "HyperNodeTree",
    "InMemoryCache",
    "JobInfo",
    "ManifestError",
    "MemberType",
    "MissingExtraError",
    "Mode",
    "NetworkTopology",
    "NoArguments",
    "Node",
    "NodeClassKey",
    "NodeInfo",
    "PartSums",
    "Placement",
    "Plugin",
    "PluginConfigError",
    "PluginError",
    "PluginNotFoundError",
    "PluginSession",
    "Pod",
    "PodGroup",
    "PodGroupPhase",
    "PredicateCache",
    "PriorityQueue",
    "QuantityError",
    "QueueInfo",
    "QueueState",
    "Registry",
    "Resource",
    "ResourceError",
    "Savepoint",
    "Scheduler",
    "SchedulerConfig",
    "Session",
    "Statement",
    "Status",
    "StatusUpdater",
    "Taint",
    "TaskInfo",
    "TaskStatus",
    "Traits",
    "VictimOrder",
    "VolcanolibError",
    "Vote",
    "__version__",
    "argument",
    "argument_per_name",
    "argument_table",
    "build_node",
    "build_pod_group",
    "build_queue",
    "build_resource",
    "build_task",
    "hookimpl",
    "job_queues",
    "load_config",
    "parse_arguments",
    "parse_config",
]
