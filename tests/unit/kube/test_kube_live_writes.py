"""KeyedWriter: writes per object, in order, coalesced, held until due, retried; the Pool they run on."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from volcanolib.kube.live._client import ApiError
from volcanolib.kube.live._effectors import Pool
from volcanolib.kube.live._writes import KeyedWriter


@pytest.fixture
def pool() -> Any:
    p = Pool(4, "test-writes")
    yield p
    p.shutdown()


def test_writes_for_one_object_go_one_at_a_time_in_order_and_the_waiting_one_takes_later_fields(pool: Pool) -> None:
    writer = KeyedWriter(pool.submit)
    release = threading.Event()
    sent: list[dict[str, Any]] = []
    in_flight = threading.Event()

    def write(fields: dict[str, Any]) -> None:
        sent.append(dict(fields))
        in_flight.set()
        release.wait(5)

    writer.put("g", {"phase": "Pending", "running": 0}, write)
    assert in_flight.wait(5)
    writer.put("g", {"phase": "Inqueue"}, write)
    writer.put("g", {"running": 3}, write)
    writer.put("g", {"phase": "Running"}, write)
    assert writer.waiting("g") == {"phase": "Running", "running": 3}
    assert writer.coalesced == 2
    release.set()
    assert writer.flush(5)
    assert sent == [{"phase": "Pending", "running": 0}, {"phase": "Running", "running": 3}]
    writer.stop()


def test_a_held_write_is_sent_when_due_without_another_put_and_release_sends_it_now(pool: Pool) -> None:
    now = [100.0]
    writer = KeyedWriter(pool.submit, clock=lambda: now[0])
    sent: list[tuple[str, dict[str, Any]]] = []
    writer.put("a", {"running": 1}, lambda f: sent.append(("a", f)), due=101.0)
    writer.put("b", {"running": 2}, lambda f: sent.append(("b", f)), due=10_000.0)
    assert writer.flush(5) and sent == [] and writer.held == 2
    now[0] = 101.0
    with writer._wake:  # the timer waits on real time: wake it to look at the moved clock
        writer._wake.notify_all()
    assert writer.flush(5)  # waits for what is due by the clock: "a"
    assert sent == [("a", {"running": 1})]
    writer.release()
    assert writer.flush(5)
    assert sent == [("a", {"running": 1}), ("b", {"running": 2})]
    writer.forget("b")
    writer.stop()


def test_a_write_without_an_answer_is_retried_under_later_fields_and_a_refusal_is_not(pool: Pool) -> None:
    now = [0.0]
    writer = KeyedWriter(pool.submit, clock=lambda: now[0])
    attempts: list[dict[str, Any]] = []
    failures = [ApiError(503, "busy")]

    def write(fields: dict[str, Any]) -> None:
        attempts.append(dict(fields))
        if failures:
            raise failures.pop()

    writer.put("g", {"phase": "Pending", "running": 1}, write)
    assert writer.flush(5)
    assert writer.held == 1  # backing off
    writer.put("g", {"running": 2}, write, due=1_000.0)
    now[0] = 1.0  # past the first back-off (0.5 s)
    writer.release()
    assert writer.flush(5)
    assert attempts == [{"phase": "Pending", "running": 1}, {"phase": "Pending", "running": 2}]

    failures.append(ApiError(404, "gone"))  # refused for good: logged, not sent again
    writer.put("h", {"phase": "Running"}, write)
    assert writer.flush(5)
    assert writer.held == 0 and writer.waiting("h") is None
    assert attempts[-1] == {"phase": "Running"} and len(attempts) == 3
    writer.stop()


def test_a_held_pool_starts_nothing_until_released_then_runs_everything_submitted_meanwhile() -> None:
    pool = Pool(2, "test-held")
    ran: list[int] = []
    try:
        pool.hold()
        pool.hold()  # holds nest
        for i in range(5):
            pool.submit(ran.append, i)
        assert not pool.flush(0.1)
        assert ran == [] and pool.pending == 5 and pool.held
        pool.release()
        assert not pool.flush(0.1) and ran == []
        pool.release()
        assert pool.flush(5)
        assert sorted(ran) == [0, 1, 2, 3, 4] and pool.pending == 0 and not pool.held
    finally:
        pool.shutdown()


def test_a_pool_runs_at_most_its_workers_at_once_and_survives_a_failing_call() -> None:
    pool = Pool(3, "test-bound")
    lock = threading.Lock()
    running = [0, 0]  # now, most
    gate = threading.Event()

    def call() -> None:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        gate.wait(5)
        with lock:
            running[0] -= 1

    def fail() -> None:
        raise ApiError(500, "boom")

    try:
        pool.submit(fail)
        for _ in range(10):
            pool.submit(call)
        time.sleep(0.2)
        gate.set()
        assert pool.flush(5)
        assert running == [0, 3]
    finally:
        pool.shutdown()


def test_shutting_down_a_held_pool_runs_what_it_held() -> None:
    pool = Pool(2, "test-shutdown")
    ran: list[str] = []
    pool.hold()
    pool.submit(ran.append, "bind")
    pool.shutdown()
    assert ran == ["bind"] and pool.pending == 0
    with pytest.raises(RuntimeError):
        pool.submit(ran.append, "late")


def test_work_a_pool_still_holds_when_the_interpreter_exits_is_run_first(tmp_path: Path) -> None:
    script = tmp_path / "exit.py"
    script.write_text(
        "from volcanolib.kube.live._effectors import Pool\n"
        "pool = Pool(2, 'test-exit')\n"
        "pool.hold()\n"
        "pool.submit(print, 'bound')\n"
        "print('exiting')\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["exiting", "bound"]


def test_a_write_refused_with_retry_after_waits_at_least_that_long(pool: Pool) -> None:
    now = [0.0]
    writer = KeyedWriter(pool.submit, clock=lambda: now[0])
    failures = [ApiError(429, "slow down", retry_after=7.0)]

    def write(fields: dict[str, Any]) -> None:
        if failures:
            raise failures.pop()

    writer.put("g", {"phase": "Pending"}, write)
    assert writer.flush(5)
    assert writer.waiting("g") == {"phase": "Pending"}
    assert writer._pending["g"].due == 7.0  # not the first back-off (0.5 s): the server's 7 s
    writer.stop()
