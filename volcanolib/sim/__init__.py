"""Offline simulation: run a scenario (a cluster and a configuration) and see what the scheduler decides.

::

    from volcanolib.sim import explain, simulate
    from volcanolib.sim.report import format_explanation, to_json

    result = simulate(["examples/quickstart.yaml"], seed=0)
    result.binds                  # {"default/tensorflow-dist-mnist-ps-0": "node-3", ...}
    result.pod_groups["default/tensorflow-dist-mnist"].phase     # PodGroupPhase.RUNNING
    print(to_json(result))        # what `volcanolib simulate --json` prints
    print(format_explanation(explain(result, "default/tensorflow-dist-mnist")))

See ``docs/scenario-format.md`` for the files and ``docs/cli.md`` for the
``volcanolib`` command built on this package.
"""

from volcanolib.sim.expect import Expectation, compare, parse_expect
from volcanolib.sim.explain import Explanation, NodeVerdict, PodExplanation, explain
from volcanolib.sim.runner import (
    CheckOutcome,
    PodGroupReport,
    Scenario,
    SimulationResult,
    check_scenario,
    load_scenario,
    run_scenario,
    simulate,
)

__all__ = [
    "CheckOutcome",
    "Expectation",
    "Explanation",
    "NodeVerdict",
    "PodExplanation",
    "PodGroupReport",
    "Scenario",
    "SimulationResult",
    "check_scenario",
    "compare",
    "explain",
    "load_scenario",
    "parse_expect",
    "run_scenario",
    "simulate",
]
