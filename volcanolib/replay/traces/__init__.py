"""Trace formats: public cluster traces -> the Kubernetes objects a replay reads.

Each :class:`TraceFormat` turns its files into Nodes, PriorityClasses, Queues,
bare Pods and Volcano Jobs carrying ``metadata.creationTimestamp`` (trace
second 0 is 1970-01-01T00:00:00Z) and the replay annotations
``volcanolib.io/duration``, ``volcanolib.io/exit-code`` and
``volcanolib.io/cancel-after`` (spec/replay.md), so that a converted trace is
replayed exactly like objects read from YAML files, and
:func:`export_objects` can write it out as an ordinary replay file::

    from volcanolib.replay.traces import TRACE_FORMATS, export_objects

    fmt = TRACE_FORMATS["openb"]
    objects = fmt.read([Path("pods.csv")], Path("nodes.csv"))
    export_objects(objects, Path("openb.yaml"))

A bad row is a :class:`~volcanolib.errors.TraceError` naming the file, the
row (1-based, the header being row 1) and the column.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import yaml

from volcanolib.errors import ManifestError
from volcanolib.replay.traces._objects import NODE_COLUMNS
from volcanolib.replay.traces._table import header_of
from volcanolib.replay.traces.helios import LOG_COLUMNS, read_helios
from volcanolib.replay.traces.openb import POD_COLUMNS, read_openb

__all__ = ["TRACE_FORMATS", "TraceFormat", "export_objects", "trace_format", "trace_table"]


@attrs.frozen
class TraceFormat:
    """A trace format: its name (the value of ``--format``) and its reader."""

    #: The value of ``--format``.
    name: str
    #: One line for ``--help`` and the docs.
    description: str
    #: Whether the format needs a node list (``--nodes``) besides its trace files.
    needs_nodes: bool
    #: ``(trace files, --nodes file or None) -> Kubernetes objects``; raises
    #: :class:`~volcanolib.errors.TraceError` naming the file, row and column of a bad row.
    read: Callable[[Sequence[Path], Path | None], list[dict[str, Any]]]


#: Every trace format, by ``--format`` name.
TRACE_FORMATS: Final[Mapping[str, TraceFormat]] = {
    "openb": TraceFormat(
        "openb",
        "Alibaba GPU cluster trace v2023: openb pod lists, with the openb node list as --nodes",
        True,
        read_openb,
    ),
    "helios": TraceFormat(
        "helios",
        "SenseTime Helios: cluster_log.csv (and optionally cluster_gpu_number.csv), with a node list as --nodes",
        True,
        read_helios,
    ),
}


#: The tables of the trace formats, by the columns their header holds: what each is and how to give it.
_TABLES: Final = (
    (POD_COLUMNS, "an openb pod list (CSV), not a replay file: read it with --format openb --nodes NODES.csv"),
    (LOG_COLUMNS, "a Helios job log (CSV), not a replay file: read it with --format helios --nodes NODES.csv"),
    (NODE_COLUMNS, "a node list (CSV), not a replay file: give it with --nodes, and the trace with --format"),
)


def trace_table(text: str, *, source: str) -> str | None:
    """What a trace table given as a replay file is, and how to read it; ``None`` for other text.

    A replay file is YAML or JSON; a CSV table read as YAML would be one long
    string. The header row tells the tables of :data:`TRACE_FORMATS` apart,
    and any other file named ``*.csv`` is a table too.

    >>> trace_table("sn,cpu_milli,memory_mib,gpu,model\\n", source="nodes.csv")
    'a node list (CSV), not a replay file: give it with --nodes, and the trace with --format'
    """
    header = header_of(text.removeprefix("\ufeff"))
    for columns, what in _TABLES:
        if set(columns) <= set(header):
            return what
    if len(header) > 1 and header[0] == "date":
        return "a Helios per-VC GPU table (CSV), not a replay file: give it with --format helios after cluster_log.csv"
    if source.lower().endswith(".csv"):
        known = " or ".join(f"--format {name}" for name in sorted(TRACE_FORMATS))
        return f"a CSV file, not a replay file (YAML or JSON): read a trace with {known}"
    return None


def trace_format(name: str) -> TraceFormat:
    """The trace format called ``name``.

    :raises ManifestError: naming the known formats when there is none of that name.
    """
    fmt = TRACE_FORMATS.get(name)
    if fmt is None:
        raise ManifestError(f"unknown trace format {name!r} (expected one of {', '.join(sorted(TRACE_FORMATS))})")
    return fmt


def export_objects(objects: Sequence[Mapping[str, Any]], path: Path, *, source: str | None = None) -> None:
    """Write objects as a replay file (a mapping with ``objects``) that reads back to the same objects.

    The file is JSON when ``path`` ends in ``.json`` (faster to read for large
    traces), YAML otherwise; keys keep their order. The file may be edited and
    replayed like any other (``volcanolib replay FILE``).

    :param source: free text recorded as the file's ``source`` (e.g. the trace files it came from).
    :raises ManifestError: naming the file when it cannot be written.
    """
    document: dict[str, Any] = {}
    if source:
        document["source"] = source
    document["objects"] = [dict(obj) for obj in objects]
    if path.suffix.lower() == ".json":
        text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    else:
        dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text = yaml.dump(
            document, Dumper=dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=4096
        )
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ManifestError(f"cannot write: {exc.strerror or exc}", source=str(path)) from None
