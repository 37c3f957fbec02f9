"""What an exported Go task carries so that a grader without repogym runs its tests as
:meth:`~repogym.toolchains.go.GoToolchain.run_tests` runs them when grading (the canary
planted, no ``-test.failfast``).

:func:`grading_plan` returns plain JSON data, made from the toolchain's own code (the run
script is :meth:`~repogym.toolchains.go.script.GoRun.script`'s), the same for every task:
nothing in it depends on a task's files, so it is made without a sandbox.

``script``
    the run script with placeholders for what each run draws or selects: :data:`SCRATCH`
    (the run's scratch folder, a path of shell-safe characters), :data:`NONCE` (the run's
    nonce, 32 hex digits) and ``@RG_NONCE:<n>@`` (its first ``n`` digits: the canary's
    name and file), :data:`PACKAGES` (the ``go list`` patterns of the selected folders:
    ``./<folder>`` words, ``.`` for the root, unquoted, as the script has them),
    :data:`DEFAULT_TIMEOUT` (a binary's ``-test.timeout`` in seconds where the run gives
    its folder none), and :data:`RUN`, :data:`SKIP` and :data:`TIMEOUTS` for the entries of
    the ``declare -A`` arrays of, per folder, the ``-test.run`` and ``-test.skip`` patterns
    and the ``-test.timeout`` value: ``[<folder>]=<value>`` words (shell-quoted, by folder;
    a time limit as ``<whole seconds>s``), the selection's rules those of
    :func:`repogym.toolchains.go.plan` (after :func:`repogym.toolchains.go.by_file`).
``report``, ``build_log``
    where the script writes the run's events, and a package's build output (:data:`INDEX`:
    the package's number, which its ``repogym-package`` marker carries).
``command``
    :meth:`~repogym.toolchains.go.script.GoRun.command` with :data:`SCRIPT` for the path
    of the script's file: the script read into memory and removed, then run.
``canary``
    the canary test's name, with ``@RG_NONCE:<n>@`` placeholders.
``test_functions``
    the pattern (multi-line) of a ``_test.go`` file's top-level tests
    (:data:`repogym.toolchains.go.files.TEST_FUNC`): a test id's file is the one that
    declares its top-level test (:func:`repogym.toolchains.go.id_of`).
``min_binary_timeout``
    a binary's ``-test.timeout`` is never below this.
``fresh``
    folders each run must find fresh (:data:`~repogym.layout.TOOL_CACHE`, where the build
    cache of a run starts from the environment's warmed one).
``protection``
    :func:`protection_rules`: which paths a graded patch may not change, as data.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from repogym.layout import TOOL_CACHE
from repogym.toolchains.go import MIN_BINARY_TIMEOUT, files
from repogym.toolchains.go.script import GoRun

SCRATCH, NONCE, PACKAGES = "@RG_SCRATCH@", "@RG_NONCE@", "@RG_PACKAGES@"
RUN, SKIP, TIMEOUTS = "@RG_RUN@", "@RG_SKIP@", "@RG_TIMEOUTS@"
DEFAULT_TIMEOUT, SCRIPT, INDEX = "@RG_DEFAULT_TIMEOUT@", "@RG_SCRIPT@", "@RG_INDEX@"
# the run the template is made from: values found nowhere else in the script
_PROBE_SCRATCH = "/var/tmp/rgprobe-scratch-5d1f0c"
_PROBE_NONCE = "8c3be0f1a97d46e2b5f0c19d3a7e6b24"
_PROBE_DIR = "rgprobe-folder-73ad"
_PROBE_TIMEOUT, _PROBE_FOLDER_TIMEOUT = 86399.0, 86397.0
_PROBE_SCRIPT = "/var/tmp/rgprobe-script-e41b.sh"
_PROBE_INDEX = 987654321
_SHORTEST_PREFIX = 6  # a shorter piece of the nonce could be anything


def nonce_slot(n: int) -> str:
    """The placeholder of the nonce's first ``n`` digits (:data:`NONCE` for all of it)."""
    return NONCE if n >= len(_PROBE_NONCE) else f"@RG_NONCE:{n}@"


def _nonce_slots(text: str) -> str:
    """``text`` with every piece of the probe nonce (its longest prefix at each place, of
    :data:`_SHORTEST_PREFIX` digits or more) a placeholder."""
    prefixes = [_PROBE_NONCE[:n] for n in range(len(_PROBE_NONCE), _SHORTEST_PREFIX - 1, -1)]
    pattern = re.compile("|".join(prefixes))
    return pattern.sub(lambda m: nonce_slot(len(m.group(0))), text)


def script_template() -> str:
    """The run script with placeholders (module docstring).

    Raises:
        ValueError: the toolchain's script no longer has a part the placeholders stand for
            (or holds a probe value where the template cannot tell it from the rest).
    """
    run = GoRun(scratch=_PROBE_SCRATCH, nonce=_PROBE_NONCE, dirs=(_PROBE_DIR,),
                run={_PROBE_DIR: RUN}, skip={_PROBE_DIR: SKIP},
                timeouts={_PROBE_DIR: _PROBE_FOLDER_TIMEOUT},
                default_timeout=_PROBE_TIMEOUT, canary=True)
    text = run.script()
    for entry, slot in ((f"[{_PROBE_DIR}]={RUN}", RUN), (f"[{_PROBE_DIR}]={SKIP}", SKIP),
                        (f"[{_PROBE_DIR}]={_PROBE_FOLDER_TIMEOUT:.0f}s", TIMEOUTS),
                        (f"./{_PROBE_DIR}", PACKAGES),
                        (f"{_PROBE_TIMEOUT:.0f}", DEFAULT_TIMEOUT)):
        text = _exactly_once(text, entry, slot)
    text = _slotted(text)
    if any(p in text for p in (_PROBE_DIR, _PROBE_SCRATCH, _PROBE_NONCE[:_SHORTEST_PREFIX])):
        raise ValueError("the Go run script holds a probe value the template cannot place")
    return text


def _slotted(text: str) -> str:
    """``text`` with the probe run's scratch folder and nonce placeholders."""
    return _nonce_slots(text.replace(_PROBE_SCRATCH, SCRATCH))


def _exactly_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ValueError(f"the Go run script holds {old!r} {text.count(old)} times, not once")
    return text.replace(old, new)


def protection_rules() -> dict[str, list[str]]:
    """:meth:`GoToolchain.is_protected` as data, in the form the JavaScript plan's rules
    take: a path is protected when its file name matches one of ``name_patterns``, a
    folder above it is one of ``test_dirs``, or any part of it is one of ``any_part``."""
    names = "|".join(re.escape(n) for n in sorted(files.RUNNER_NAMES))
    return {"name_patterns": [r"_test\.go\Z", f"^(?:{names})\\Z"],
            "test_dirs": ["testdata", "vendor"], "any_part": []}


def _command_template(run: GoRun) -> str:
    command = run.command(_PROBE_SCRIPT)
    if _PROBE_SCRIPT not in command:
        raise ValueError("the Go run's command does not name its script's file")
    return command.replace(_PROBE_SCRIPT, SCRIPT)


@functools.cache
def _plan_text() -> str:
    run = GoRun(scratch=_PROBE_SCRATCH, nonce=_PROBE_NONCE, canary=True)
    plan = {
        "script": script_template(),
        "command": _command_template(run),
        "canary": _nonce_slots(run.canary_name),
        "report": _slotted(run.report),
        "build_log": _slotted(run.build_log(_PROBE_INDEX)).replace(str(_PROBE_INDEX), INDEX),
        "test_functions": files.TEST_FUNC.pattern,
        "min_binary_timeout": MIN_BINARY_TIMEOUT,
        "fresh": [TOOL_CACHE],
        "protection": protection_rules(),
    }
    return json.dumps(plan)


def grading_plan() -> dict[str, Any]:
    """The plan (module docstring): plain data, a fresh copy each call.

    Raises:
        ValueError: the toolchain's run script cannot be templated (:func:`script_template`).
    """
    plan: dict[str, Any] = json.loads(_plan_text())
    return plan


__all__ = ["DEFAULT_TIMEOUT", "INDEX", "NONCE", "PACKAGES", "RUN", "SCRATCH", "SCRIPT", "SKIP",
           "TIMEOUTS", "grading_plan", "nonce_slot", "protection_rules", "script_template"]
