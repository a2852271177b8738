"""Benchmarks: measured here, never asserted in tests. Run ``python -m benchmarks --help``.

With ``VOLCANOLIB_BENCH_CLOCK=cpu`` in the environment (``python -m benchmarks
--clock cpu`` sets it for the processes it starts), every timing a benchmark
process takes, the Scheduler's included, is the process's CPU time instead of
wall-clock time: on a machine shared with other work, CPU time moves far less.
"""

import os
import time

#: The environment variable that selects the clock (``wall``, the default, or ``cpu``).
CLOCK_ENV = "VOLCANOLIB_BENCH_CLOCK"

if os.environ.get(CLOCK_ENV) == "cpu":
    # Every timing is taken through time.perf_counter (the Scheduler's, the runners'); read it as CPU time.
    time.perf_counter = time.process_time
