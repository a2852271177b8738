"""The built-in actions: enqueue, allocate, backfill, preempt, reclaim."""
