"""The bounds of the framework's caches, in one place: how much each remembers before it starts over.

Every cache here is an optimisation: forgetting costs time, never a
decision. The bounds keep a long-running scheduler's memory flat.

.. versionadded:: 0.2
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CLASS_ANSWER_SIGNATURES",
    "FIT_REQUESTS",
    "GROUPINGS",
    "GROUPING_CHANGES",
    "INTERNED_CLASS_KEYS",
    "NODE_CLASS_PLANS",
    "POD_NAME_INDEXES",
]

#: Node class plans a session remembers by their key objects and tokens.
NODE_CLASS_PLANS: Final = 1024
#: Pod names whose trailing index the default task order remembers (per process).
POD_NAME_INDEXES: Final = 1 << 16
#: Groupings (one per plan token) a set of node classes keeps.
GROUPINGS: Final = 64
#: Changes a grouping keeps across sessions (plus four per class).
GROUPING_CHANGES: Final = 4096
#: Keys of empty classes a grouping keeps interned (beyond two per current class).
INTERNED_CLASS_KEYS: Final = 4096
#: Task signatures (plan token, request) whose class answers are remembered.
CLASS_ANSWER_SIGNATURES: Final = 4096
#: Distinct requests the fit index remembers the fitting nodes of.
FIT_REQUESTS: Final = 1024
