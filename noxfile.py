"""Automation: nox -s tests | typecheck | lint | bench | docs | soak | differential."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "typecheck", "lint"]
nox.options.reuse_existing_virtualenvs = True

INSTALL = (
    "-e",
    ".[dev]",
    "-e",
    "./plugins_contrib",
    "-e",
    "./tests/thirdparty_plugin",
    "-e",
    "./examples/custom-plugin",
    "-e",
    "./examples/custom-action",
)


@nox.session
def tests(session: nox.Session) -> None:
    """The default test run (what CI runs)."""
    session.install(*INSTALL)
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over volcanolib and plugins_contrib."""
    session.install(*INSTALL)
    session.run("mypy", "--strict", "volcanolib", "plugins_contrib/volcanolib_contrib")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def bench(session: nox.Session) -> None:
    """The workloads W1..W4 at sizes S and M against Volcano v1.7 (results as JSON under bench-results/).

    Extra arguments go to the runner: ``nox -s bench -- --sizes S,M,L`` adds
    the large sizes, ``nox -s bench -- --format yaml,json`` times JSON loading too.
    """
    session.install(*INSTALL)
    session.run("python", "-m", "benchmarks", "all", "--sizes", "S,M", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site in strict mode, the API reference included (mkdocstrings)."""
    session.install(*INSTALL)
    session.run("mkdocs", "build", "--strict")


@nox.session
def soak(session: nox.Session) -> None:
    """Long-running and scale tests kept out of the default run, then the soak (200 cycles of 1,000 nodes).

    Arguments after ``--`` go to benchmarks/soak.py (e.g. ``nox -s soak -- --cycles 50``).
    """
    session.install(*INSTALL)
    session.run("python", "-m", "pytest", "-m", "slow", "--runslow")
    session.run("python", "benchmarks/soak.py", *session.posargs)


@nox.session
def differential(session: nox.Session) -> None:
    """Random scenarios per feature area through the real Volcano (the oracle, built with Go) and volcanolib.

    Prints the agreement per area and the most common disagreements. Arguments after ``--`` go to
    tests/oracle/differential.py (default here: 1,000 scenarios per area, 8 oracle runs each and 40
    more on a disagreement; e.g.
    ``nox -s differential -- --count 50 --areas gang,preempt --out DIR``).
    """
    session.install(*INSTALL)
    args = session.posargs or ["--count", "1000", "--runs", "8", "--confirm-runs", "40"]
    session.run("python", "-m", "tests.oracle.differential", *args)


@nox.session
def job_differential(session: nox.Session) -> None:
    """Random job event sequences through Volcano's job controller (the oracle, built with Go) and volcanolib's.

    Prints the agreement rate, the speed of each side and the disagreements; fails on a disagreement.
    Arguments after ``--`` go to tests/oracle/jobdiff.py (default here: 20,000 sequences; e.g.
    ``nox -s job_differential -- --count 2000 --out DIR``).
    """
    session.install(*INSTALL)
    args = session.posargs or ["--count", "20000"]
    session.run("python", "-m", "tests.oracle.jobdiff", *args)
