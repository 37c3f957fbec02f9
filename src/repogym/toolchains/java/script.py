"""The shell script of one Maven test run, and the plan it hands to repogym's extension.

The code lives in :mod:`repogym.toolchains.plugins.repogym_maven` (standard library only,
so that an exported task's in-container grader runs the same script); this module names it.

One ``mvn -o clean test`` over the whole reactor, with repogym's extension
(:mod:`~repogym.toolchains.java.maven`) loaded and the run's *plan* (its nonce, reports
folder, test filter, fork time limits, canary) in a properties file the extension reads and
removes before any of the project's code runs. ``clean`` first: every run compiles the
main and test code from the work tree as it is, so nothing a patch or an earlier run left
in ``target/`` (a stale or forged class file) is ever run.

A watchdog in the script stops a forked test JVM that outlives its module's time limit: it
takes a thread dump first (``jstack``, to name the test it hung in) and records the kill in
the run's event log.

The script reaches the sandbox as a file it reads into memory and removes before anything
else runs, so neither the command line nor the work tree shows the nonce; Maven's command
line names only the plan's path, and the plan is gone before a test starts.
"""

from __future__ import annotations

from repogym.toolchains.plugins.repogym_maven import (
    CANARY_GLOB,
    M2,
    MAVEN,
    MAVEN_OPTS,
    SKIPS,
    WATCH_INTERVAL,
    MavenRun,
)

__all__ = ["CANARY_GLOB", "MAVEN", "MAVEN_OPTS", "M2", "SKIPS", "WATCH_INTERVAL", "MavenRun"]
