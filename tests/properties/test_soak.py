"""A short soak: cycles of a small cluster with jobs arriving and finishing lose no task and do not leak.

The full soak (200 cycles of 1,000 nodes) is ``benchmarks/soak.py``, run by
``nox -s soak``. Figures are not asserted, only the accounting and a
generous bound on memory growth after the warm-up.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # the benchmarks package lives beside volcanolib, uninstalled
    sys.path.insert(0, str(ROOT))

from benchmarks.soak import SoakError, main, run_soak  # noqa: E402


def test_a_short_soak_loses_no_task_and_does_not_leak() -> None:
    figures = run_soak(cycles=20, nodes=50, seed=1, bind_failure=0.1, check_every=2, warmup=5)
    assert figures["tasks_submitted"] > 100 and figures["tasks_finished"] > 0
    assert figures["bind_failures"] > 0  # the binder did fail, and nothing was lost (run_soak checks)
    assert figures["tasks_finished"] + figures["tasks_evicted"] + figures["tasks_present"] == figures["tasks_submitted"]
    assert figures["traced_mib_end"] - figures["traced_mib_after_warmup"] < 16


def test_the_soak_reports_a_lost_task() -> None:
    """The accounting fails when a task disappears from the cache without finishing."""
    from volcanolib import InMemoryCache

    original = InMemoryCache.finish_evictions

    def lose_one(self: InMemoryCache) -> list[object]:
        gone = original(self)
        for task in self.tasks():
            if task.status.name == "RUNNING":
                self.delete_task(task.uid)  # vanishes: neither finished nor evicted
                break
        return gone  # type: ignore[return-value]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(InMemoryCache, "finish_evictions", lose_one)
        with pytest.raises(SoakError, match="lost"):
            run_soak(cycles=3, nodes=10, seed=0, trace_memory=False)


def test_the_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["--cycles", "2", "--nodes", "5", "--no-tracemalloc"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["cycles"] == 2 and figures["nodes"] == 5
