"""What an exported Java task carries so that a grader without repogym runs its tests as
:meth:`~repogym.toolchains.java.JavaToolchain.run_tests` runs them when grading (the
canary planted, no fail-fast).

The run itself -- its plan (:func:`~repogym.toolchains.plugins.repogym_maven.plan`: the
Surefire filter, the canary's modules, each module's fork budget), its shell script with
the watchdog, the command that reads the script into memory, the collection of the
reports, and the reading of the event log and reports with every check -- is the
standard-library module :mod:`repogym.toolchains.plugins.repogym_maven`, which the task
carries beside the grader and which repogym's Java toolchain runs too. What the plan adds
is data, the same for every task (made without a sandbox):

``protection``
    :func:`protection_rules`: which paths a graded patch may not change.
``fresh``
    folders each run must find fresh (none: every run is ``mvn clean test``).
``collect_timeout``
    how long collecting the reports after the run may take (seconds).
"""

from __future__ import annotations

import re
from typing import Any

from repogym.toolchains.java import COLLECT_TIMEOUT, files


def protection_rules() -> dict[str, list[str]]:
    """:meth:`JavaToolchain.is_protected` as data: a path is protected when its file name
    matches one of ``name_patterns`` (every POM, the wrappers, Gradle's build files), the
    whole path one of ``path_patterns`` (under a module's ``src/test`` or ``src/it``), or a
    folder above it is one of ``test_dirs`` (``.mvn``)."""
    names = "|".join(re.escape(n) for n in sorted(files.RUNNER_NAMES))
    return {"name_patterns": [f"^(?:{names})\\Z"],
            "path_patterns": [r"(?:^|/)src/(?:test|it)/"],
            "test_dirs": [".mvn"], "any_part": []}


def grading_plan() -> dict[str, Any]:
    """The plan (module docstring): plain data, a fresh copy each call."""
    return {"protection": protection_rules(), "fresh": [], "collect_timeout": COLLECT_TIMEOUT}


__all__ = ["COLLECT_TIMEOUT", "grading_plan", "protection_rules"]
