"""What an exported Rust task carries so that a grader without repogym runs its tests as
:meth:`~repogym.toolchains.rust.RustToolchain.run_tests` runs them when grading (the
canary planted, no fail-fast).

:func:`grading_plan` returns plain JSON data, made from the toolchain's own code, the
same for every task: nothing in it depends on a task's files, so it is made without a
sandbox.

``script``
    the runner's program (:func:`repogym.toolchains.rust.program`: the scanner and the
    runner, standard library only) and its call, :meth:`~repogym.toolchains.rust.RustRun.
    script`'s, with :data:`PAYLOAD` where the call's argument goes: the run's plan as
    ``json.dumps(json.dumps(payload))``.
``payload``
    the plan's entries that are the same for every run (the warm seed, cargo's settings,
    the variables the runner drops); a run adds :data:`RUN_KEYS` as
    :func:`repogym.toolchains.rust.plan` makes them.
``canary``, ``report``, ``cleanup``
    the canary test's name (``@RG_NONCE:<n>@``: the nonce's first ``n`` digits), where
    the runner writes its report, and :meth:`~repogym.toolchains.rust.RustRun.cleanup`
    (root files a run that stopped mid-build left a canary in put back), with
    :data:`SCRATCH` for the run's scratch folder.
``command``
    :func:`repogym.toolchains.rust.runner.command` with :data:`SCRIPT` for the path of the
    script's file: the script read into memory and removed, then run.
``fresh``
    folders each run must find fresh (:data:`~repogym.toolchains.rust.project.TARGET_TMP`:
    the scratch space the warm target directory's ``tmp`` links to, a reset empties it).
``protection``
    :func:`protection_rules`: which paths a graded patch may not change, as data.

A listed test's file that is runtime source (a ``#[cfg(test)]`` module in ``src/lib.rs``)
is guarded by its test code only (:func:`repogym.grading.span_guarded_paths`); the grader
finds that code with the program's own :func:`~repogym.toolchains.rust.scan.test_lines`.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from repogym.toolchains.rust import CANARY_PREFIX, RustRun, files
from repogym.toolchains.rust.project import TARGET_TMP
from repogym.toolchains.rust.runner import command

SCRATCH, PAYLOAD, SCRIPT = "@RG_SCRATCH@", "@RG_PAYLOAD@", "@RG_SCRIPT@"
# the payload's entries a run sets itself (repogym.toolchains.rust.plan's)
RUN_KEYS = ("nonce", "scratch", "report", "budget", "select", "exclude", "collect", "limits",
            "canary", "canary_name", "failfast")
_PROBE_SCRATCH = "/var/tmp/rgprobe-scratch-2c7e91"
_PROBE_NONCE = "5e0b9d27c4a1f3868d2e7b40a9c1f65d"
_PROBE_SCRIPT = "/var/tmp/rgprobe-script-93ab.py"
_CANARY_DIGITS = 16


def _probe() -> RustRun:
    return RustRun(nonce=_PROBE_NONCE, scratch=_PROBE_SCRATCH, budget=600.0, canary=True)


def script_template() -> str:
    """The runner's script with :data:`PAYLOAD` for its plan.

    Raises:
        ValueError: the script no longer holds its plan once, as ``json.dumps`` twice.
    """
    run = _probe()
    text, payload = run.script(), json.dumps(json.dumps(run.payload()))
    if text.count(payload) != 1 or PAYLOAD in text:
        raise ValueError("the Rust runner's script does not hold its plan once")
    return text.replace(payload, PAYLOAD)


def constant_payload() -> dict[str, Any]:
    """The plan's entries every run shares.

    Raises:
        ValueError: the plan has an entry :data:`RUN_KEYS` lacks that differs per run.
    """
    payload = _probe().payload()
    shared = {k: v for k, v in payload.items() if k not in RUN_KEYS}
    if any(_PROBE_SCRATCH in json.dumps(v) or _PROBE_NONCE[:8] in json.dumps(v)
           for v in shared.values()) or not set(RUN_KEYS) <= set(payload):
        raise ValueError("the Rust runner's plan has per-run entries the export misses")
    return shared


def protection_rules() -> dict[str, list[str]]:
    """:meth:`RustToolchain.is_protected` as data: a path is protected when its file name
    matches one of ``name_patterns``, the whole path one of ``path_patterns`` (build
    scripts outside ``src/``, cargo's configuration), or a folder above it is one of
    ``test_dirs`` (tests, their data, benches)."""
    names = "|".join(re.escape(n) for n in sorted(files.RUNNER_NAMES))
    configs = "|".join(re.escape(n) for n in sorted(files.CARGO_CONFIGS))
    return {"name_patterns": [r"^tests\.rs\Z", r"_tests?\.rs\Z", f"^(?:{names})\\Z"],
            "path_patterns": [r"^(?!(?:[^/]*/)*src/)(?:[^/]*/)*build\.rs\Z",
                              f"(?:^|/)\\.cargo/(?:{configs})\\Z"],
            "test_dirs": sorted(files.TEST_DIRS | {"benches"}), "any_part": []}


def _slotted(text: str) -> str:
    return text.replace(_PROBE_SCRATCH, SCRATCH)


@functools.cache
def _plan_text() -> str:
    run = _probe()
    canary = run.canary_name.replace(_PROBE_NONCE[:_CANARY_DIGITS],
                                     f"@RG_NONCE:{_CANARY_DIGITS}@")
    cmd = command(_PROBE_SCRIPT)
    if canary != f"{CANARY_PREFIX}@RG_NONCE:{_CANARY_DIGITS}@" or _PROBE_SCRIPT not in cmd:
        raise ValueError("the Rust run's canary or command is not what the export places")
    plan = {
        "script": script_template(),
        "payload": constant_payload(),
        "canary": canary,
        "report": _slotted(run.report),
        "cleanup": _slotted(run.cleanup()),
        "command": cmd.replace(_PROBE_SCRIPT, SCRIPT),
        "fresh": [TARGET_TMP],
        "protection": protection_rules(),
    }
    return json.dumps(plan)


def grading_plan() -> dict[str, Any]:
    """The plan (module docstring): plain data, a fresh copy each call.

    Raises:
        ValueError: the toolchain's runner cannot be templated.
    """
    plan: dict[str, Any] = json.loads(_plan_text())
    return plan


__all__ = ["PAYLOAD", "RUN_KEYS", "SCRATCH", "SCRIPT", "constant_payload", "grading_plan",
           "protection_rules", "script_template"]
