"""A base class for actions: a name, declared arguments, and one run per cycle.

An action is anything with a ``name`` and ``execute(ssn)`` (the
:class:`~volcanolib.framework.registry.Action` protocol). Subclassing
:class:`BaseAction` adds the usual rest: the declaration class of its
arguments (:mod:`volcanolib.framework.arguments`) and a constructor that
keeps the parsed instance in :attr:`BaseAction.arguments`.

>>> import attrs
>>> from volcanolib.framework.arguments import argument
>>> @attrs.frozen
... class LimitArguments:
...     limit: int = argument(key="limit", default=10, doc="How many jobs to admit per cycle.")
>>> class Limit(BaseAction[LimitArguments]):
...     name = "limit"
...     Arguments = LimitArguments
...     def execute(self, ssn):
...         pass
>>> Limit().arguments.limit, Limit(LimitArguments(limit=3)).arguments.limit
(10, 3)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from volcanolib.framework.arguments import NoArguments

if TYPE_CHECKING:
    from volcanolib.framework.session import Session

__all__ = ["BaseAction"]

A = TypeVar("A")


class BaseAction(Generic[A]):
    """An action with declared arguments.

    Subclasses set :attr:`name` and :attr:`Arguments` and implement
    :meth:`execute`. The scheduler builds the action once per configuration
    with its ``configurations`` arguments parsed into :attr:`Arguments`;
    built without them, it takes the declared defaults.
    """

    #: The name the configuration's ``actions`` list uses.
    name: ClassVar[str]
    #: The frozen attrs class declaring the arguments (:class:`NoArguments` when there are none).
    Arguments: ClassVar[type[Any]] = NoArguments

    def __init__(self, arguments: A | None = None) -> None:
        #: The parsed arguments.
        self.arguments: A = arguments if arguments is not None else self.Arguments()

    def execute(self, ssn: Session) -> None:
        """Run the action over the open session."""
        raise NotImplementedError
