"""InMemoryCache's methods show their own signatures and types, not the locking wrapper's."""

from __future__ import annotations

import inspect
import typing

import pytest

from volcanolib import InMemoryCache, JobInfo, QueueInfo, TaskInfo

PUBLIC_METHODS = sorted(
    name for name, value in vars(InMemoryCache).items() if not name.startswith("_") and inspect.isfunction(value)
)


def test_tasks_and_jobs_are_typed() -> None:
    assert typing.get_type_hints(InMemoryCache.tasks) == {"return": list[TaskInfo]}
    assert typing.get_type_hints(InMemoryCache.jobs) == {"return": list[JobInfo]}
    assert typing.get_type_hints(InMemoryCache.add_queue) == {"queue": QueueInfo, "return": type(None)}


@pytest.mark.parametrize("name", PUBLIC_METHODS)
def test_no_public_method_shows_a_catch_all_signature(name: str) -> None:
    method = getattr(InMemoryCache, name)
    kinds = {param.kind for param in inspect.signature(method).parameters.values()}
    assert inspect.Parameter.VAR_POSITIONAL not in kinds, f"{name}{inspect.signature(method)}"
    assert inspect.signature(method).return_annotation is not typing.Any, name
    assert method.__doc__, f"{name} has no docstring"


def test_the_lock_is_still_taken() -> None:
    cache = InMemoryCache()
    entered = []

    class Spy:
        def __enter__(self) -> None:
            entered.append(True)

        def __exit__(self, *exc: object) -> None:
            pass

    cache._lock = Spy()  # type: ignore[assignment]
    cache.tasks()
    cache.add_queue(QueueInfo("research"))
    assert entered == [True, True]
    assert [q.name for q in cache.queues()] == ["root", "default", "research"]
