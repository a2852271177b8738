"""BaseAction: declared arguments reach the action built by the scheduler."""

from __future__ import annotations

import doctest

import attrs

import volcanolib.framework.action
from volcanolib.actions.allocate import Allocate, AllocateArguments
from volcanolib.framework.action import BaseAction
from volcanolib.framework.arguments import NoArguments, argument
from volcanolib.framework.registry import Registry


def test_the_module_example_runs() -> None:
    assert doctest.testmod(volcanolib.framework.action).failed == 0


def test_built_without_arguments_an_action_takes_the_declared_defaults() -> None:
    assert Allocate().arguments == AllocateArguments()

    class Bare(BaseAction[NoArguments]):
        name = "bare"

    assert Bare().arguments == NoArguments()


def test_the_registry_parses_an_actions_configuration_into_its_declaration() -> None:
    action = Registry().action("allocate", {"nodeClassesEnable": False})
    assert isinstance(action, Allocate)
    assert action.arguments.node_classes is False and action.arguments.predicate_error_cache is True


def test_a_subclass_keeps_its_own_declaration() -> None:
    @attrs.frozen
    class Args:
        limit: int = argument(key="limit", default=3, doc="a limit")

    class Limited(BaseAction[Args]):
        name = "limited"
        Arguments = Args

    assert Limited().arguments.limit == 3
    assert Limited(Args(limit=7)).arguments.limit == 7
