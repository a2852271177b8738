"""Order 2,000 jobs through 2 tiers of 3 plugins: compiled dispatch against ``pm.hook``.

Three ways of sorting the same jobs with the same plugins:

- ``pm_hook``: a comparator that calls ``pm.hook.job_order(...)`` and takes the
  first non-zero answer in tier order (what dispatching through pluggy costs);
- ``compiled_cmp``: the session's compiled comparator (``ssn.compare_jobs``);
- ``compiled_key``: the session's composite key (``ssn.job_key``), when every
  plugin also gives a key.

Results are medians over repeats, in milliseconds, printed and returned as JSON.
"""

from __future__ import annotations

import functools
import random
import statistics
import time
from typing import Any, ClassVar

from volcanolib import Arguments, JobInfo, Registry, hookimpl
from volcanolib.framework.session import Session
from volcanolib.testing import FakeCache, build_pod_group, build_task, open_session


class _Field:
    """Orders jobs by one numeric attribute kept per job (ascending or descending)."""

    name: ClassVar[str] = "field"
    use_key: ClassVar[bool] = False

    def __init__(self, arguments: Arguments) -> None:
        self.field = arguments.get_str("field", "priority")
        self.sign = -1 if arguments.get_bool("descending", False) else 1
        self.values: dict[str, float] = {}

    @hookimpl
    def on_session_open(self, ssn: Session) -> None:
        self.values = {uid: float(getattr(job, self.field)) for uid, job in ssn.jobs.items()}

    @hookimpl
    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        lv = self.values[left.uid] * self.sign
        rv = self.values[right.uid] * self.sign
        return -1 if lv < rv else (1 if lv > rv else 0)


class _KeyedField(_Field):
    @hookimpl
    def job_order_key(self, job: JobInfo) -> float:
        return self.values[job.uid] * self.sign


FIELDS = [
    ("priority", True),
    ("min_available", False),
    ("creation_timestamp", False),
    ("priority", False),
    ("min_available", True),
    ("creation_timestamp", True),
]


def _conf() -> str:
    lines = ["actions: ''", "tiers:"]
    for tier in range(2):
        lines.append("- plugins:")
        for i in range(3):
            field, desc = FIELDS[tier * 3 + i]
            lines.append(f"  - name: p{tier * 3 + i}")
            lines.append(f"    arguments: {{field: {field}, descending: {str(desc).lower()}}}")
    return "\n".join(lines) + "\n"


def _session(keyed: bool, jobs: int, seed: int) -> Session:
    rng = random.Random(seed)
    cache = FakeCache()
    for j in range(jobs):
        pg = build_pod_group(f"job{j:05d}", min_member=rng.randint(1, 4), creation_timestamp=float(rng.randint(0, 50)))
        cache.add_pod_group(pg)
        cache.add_task(build_task(f"job{j:05d}-t-0", job=pg.name))
        cache.add_priority_class(f"pc{j}", rng.randint(0, 3))
        pg.priority_class_name = f"pc{j}"
    cls = _KeyedField if keyed else _Field
    registry = Registry(plugins={f"p{i}": cls for i in range(6)})
    return open_session(cache, _conf(), registry=registry)


def _median_ms(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run(jobs: int = 2000, repeat: int = 7, seed: int = 1) -> dict[str, Any]:
    """Measure the three orderings; check they agree; return medians in ms."""
    ssn = _session(keyed=False, jobs=jobs, seed=seed)
    keyed = _session(keyed=True, jobs=jobs, seed=seed)
    items = list(ssn.jobs.values())
    keyed_items = list(keyed.jobs.values())
    random.Random(seed).shuffle(items)
    random.Random(seed).shuffle(keyed_items)

    from volcanolib.framework.registry import PluginHost

    host = PluginHost(ssn.config, Registry(plugins={f"p{i}": _Field for i in range(6)}))
    for name, plugin in host.plugins.items():
        plugin.values = ssn.plugins[name].values
    order = [opt.name for opt in ssn.config.plugin_options()]
    impls = host.pm.hook.job_order.get_hookimpls()
    position = {impl.plugin_name: i for i, impl in enumerate(impls)}
    tier_positions = [position[name] for name in order]
    fallback = ssn.compare_jobs

    def via_pm_hook(left: JobInfo, right: JobInfo) -> int:
        results = host.pm.hook.job_order(ssn=ssn, left=left, right=right)
        results.reverse()  # pluggy calls last-registered first
        for i in tier_positions:
            if results[i]:
                return int(results[i])
        return fallback(left, right)

    by_hook = sorted(items, key=functools.cmp_to_key(via_pm_hook))
    by_cmp = sorted(items, key=functools.cmp_to_key(ssn.compare_jobs))
    by_key = sorted(keyed_items, key=keyed.job_key)
    assert [j.uid for j in by_hook] == [j.uid for j in by_cmp] == [j.uid for j in by_key], "orders disagree"

    result: dict[str, Any] = {
        "jobs": jobs,
        "tiers": "2 tiers x 3 plugins",
        "pm_hook_ms": _median_ms(lambda: sorted(items, key=functools.cmp_to_key(via_pm_hook)), repeat),
        "compiled_cmp_ms": _median_ms(lambda: sorted(items, key=functools.cmp_to_key(ssn.compare_jobs)), repeat),
        "compiled_key_ms": _median_ms(lambda: sorted(keyed_items, key=keyed.job_key), repeat),
    }
    result["cmp_speedup"] = round(result["pm_hook_ms"] / result["compiled_cmp_ms"], 2)
    result["key_speedup"] = round(result["pm_hook_ms"] / result["compiled_key_ms"], 2)
    return result
