"""What kept node classes share with the next session, checked against a fresh build after every cycle.

The random cycles of :mod:`test_carry` run one scheduler on an incremental
cache. A grouping interns its class keys (one key object per class, shared
by its members), and a session that takes classes over shares their node
positions instead of working them out again; both must stay exactly what a
fresh grouping of the session's nodes gives.
"""

from __future__ import annotations

import pytest
from test_carry import _plans, run

from volcanolib import Session
from volcanolib.framework.nodeclass import _MAX_INTERNED, NodeClasses
from volcanolib.framework.placement import NodeChanges


@pytest.mark.parametrize("seed", range(4))
def test_kept_groupings_intern_their_keys_and_share_positions(seed: int) -> None:
    shared = [0]
    last: list[dict[str, int] | None] = [None]

    def check(ssn: Session, previous: Session | None) -> None:
        kept = ssn.placement.node_classes()
        if kept is None:
            last[0] = None
            return
        assert kept.positions() == {node.name: i for i, node in enumerate(ssn.node_list)}
        if previous is not None and kept is previous.placement.node_classes():
            # Carried over: the positions are the previous session's very mapping, not worked out again.
            assert kept.positions() is last[0]
            shared[0] += 1
        last[0] = kept.positions()
        fresh = NodeClasses(NodeChanges(ssn.node_list, []))
        for plan in _plans(ssn):
            part = kept.partition(plan)
            again = fresh.partition(plan)
            # The same classes, and each node's key equal to the one a fresh grouping gives it.
            assert part.classes == again.classes
            assert part.key_of == again.key_of
            # One key object per class, shared by its members and interned; the keys of emptied classes
            # stay interned up to a bound (a class that comes back gets its old key object).
            for key, members in part.classes.items():
                assert all(part.key_of[p] is key for p in members)
                assert part.interned[key.value] is key
            assert all(key.value == value for value, key in part.interned.items())
            assert len(part.interned) <= _MAX_INTERNED + 2 * len(part.classes) + 1

    run(seed, 30, check)
    assert shared[0] > 5
