"""What an exported JavaScript task carries so that a grader without repogym runs its tests
as :meth:`~repogym.toolchains.javascript.JavaScriptToolchain.run_tests` does.

:func:`grading_plan` reads it from a sandbox in the task's graded state (the broken state
plus the test patch: every file it reads there -- ``package.json``, the listed tests' files
-- is protected, so a graded run sees the same ones) and returns plain JSON data:

``runner``, ``build``
    the runner the project's ``package.json`` names; the npm script run before the tests
    (:meth:`~repogym.toolchains.javascript.project.Project.build_script`), or None.
``command``, ``command_exitfirst``
    the runner's command line (:meth:`~repogym.toolchains.javascript.runners.Runner.command`)
    for a selection, without and with stopping at the first failure, as words with three
    placeholders: :data:`SCRATCH` inside a word (the run's scratch directory, where the
    reporter files are), :data:`FILES` a whole word (the selected tests' files, sorted, one
    word each) and :data:`PATTERN` inside a word (the name pattern of
    :func:`~repogym.toolchains.javascript.runners.name_pattern`).
``env``
    the run's variables less the settings file's (``RUN_ENV`` and the runner's own, with
    :data:`SCRATCH`); ``REPOGYM_JS_CONFIG`` names the settings file (see
    :mod:`~repogym.toolchains.javascript.placed`).
``reporters``, ``test_timeout_ms``
    the reporter files the run copies into its scratch directory (name -> text); the
    per-test limit in the settings.
``canaries``, ``canary_words``
    per selected test file, the canary planted beside it
    (:mod:`~repogym.toolchains.javascript.canary`) with its random names left out:
    ``prefix`` + ``rg<8 hex>`` + ``suffix`` is its path, ``style`` (``describe`` or ``uvu``)
    how its checks are wrapped, ``head`` its first lines, ``checks`` the checks that must
    fail; the grader draws the names (:func:`canary_of` assembles one as ``plant`` does).
``protection``
    :func:`protection_rules`: which paths a graded patch may not change, as data.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from pathlib import PurePosixPath
from typing import Any, Sequence

from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import TimeLimits
from repogym.toolchains.javascript import _project_in, files
from repogym.toolchains.javascript.canary import (
    _WORDS,
    CANARY_RUNNERS,
    _checks,
    _js,
    _loads,
    _suffix,
    _uvu_checks,
)
from repogym.toolchains.javascript.placed import RUN_ENV, reporter_source
from repogym.toolchains.javascript.report import split_id
from repogym.toolchains.javascript.report import test_id as make_test_id
from repogym.toolchains.javascript.runners import Invocation, Runner, runner_for, timeout_ms
from repogym.toolchains.runs import text_or_none

SCRATCH = "@RG_SCRATCH@"
FILES = "@RG_FILES@"
PATTERN = "@RG_PATTERN@"
_PROBE_FILE, _PROBE_NAME = "@RG_FILE@", "@RG_NAME@"  # the selection the templates are made with
_CANARY_NAME = re.compile(r"\.(test|spec)(\.[cm]?[jt]sx?)$")  # canary._sibling's


def command_template(runner: Runner, project_args: Sequence[str], limits: TimeLimits | None,
                     exitfirst: bool) -> list[str]:
    """The runner's command line for any selection, with :data:`SCRATCH`, :data:`FILES`
    and :data:`PATTERN` where the run's own go (see the module docstring).

    Raises:
        ValueError: the runner's command line does not take the selection in a form the
            placeholders can stand for (a file named inside a word, say).
    """
    probe = [make_test_id(_PROBE_FILE, [_PROBE_NAME])]
    inv = Invocation(scratch=SCRATCH, project_args=tuple(project_args), select=probe,
                     limits=limits, exitfirst=exitfirst)
    probe_pattern = f"^(?:{_PROBE_NAME})$"  # name_pattern(probe, ())
    out = []
    for word in shlex.split(runner.command(inv)):
        if word == _PROBE_FILE:
            out.append(FILES)
            continue
        word = word.replace(probe_pattern, PATTERN)
        if _PROBE_FILE in word or _PROBE_NAME in word:
            raise ValueError(f"{runner.name}'s command line takes the selection as {word!r}")
        out.append(word)
    return out


def canary_template(path: str, text: str, runner: str) -> dict[str, Any] | None:
    """The canary :func:`~repogym.toolchains.javascript.canary.plant` puts beside the test
    file ``path`` (its ``text``), less its random names; None when it plants none."""
    if runner not in CANARY_RUNNERS:
        return None
    if runner == "uvu":
        checks = _uvu_checks(text)
        esm = bool(re.search(r"^\s*import\s", text, re.M))
        head = ["import { test as __rgTest } from 'uvu';" if esm
                else "const { test: __rgTest } = require('uvu');"]
        style = "uvu"
    else:
        checks, head, style = _checks(text), [], "describe"
    if not checks:
        return None
    p = PurePosixPath(path)
    m = _CANARY_NAME.search(p.name)
    suffix = f".{m.group(1)}{m.group(2)}" if m else _suffix(p)
    prefix = "" if str(p.parent) == "." else f"{p.parent}/"
    return {"prefix": prefix, "suffix": suffix, "style": style,
            "head": [*_loads(path, text), *head], "checks": list(checks)}


def canary_of(template: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(path, text, test ids) of one canary from its template, names drawn as ``plant``
    draws them (the in-container grader does the same; a parity test holds them equal)."""
    where = f"{template['prefix']}rg{secrets.token_hex(4)}{template['suffix']}"
    checks = template["checks"]
    lines = list(template["head"])
    if template["style"] == "uvu":
        titles = [f"{secrets.choice(_WORDS)} case {secrets.token_hex(3)}" for _ in checks]
        lines += [f"__rgTest({_js(t)}, () => {{ {c} }});" for t, c in zip(titles, checks)]
        lines.append("__rgTest.run();")
        return where, "\n".join(lines) + "\n", [make_test_id(where, [t]) for t in titles]
    suite = f"{secrets.choice(_WORDS)} {secrets.token_hex(3)}"
    titles = [f"{secrets.choice(_WORDS)} case {secrets.token_hex(3)}" for _ in checks]
    lines.append(f"describe({_js(suite)}, () => {{")
    lines += [f"  it({_js(t)}, () => {{ {c} }});" for t, c in zip(titles, checks)]
    lines.append("});")
    return where, "\n".join(lines) + "\n", [make_test_id(where, [suite, t]) for t in titles]


def protection_rules() -> dict[str, list[str]]:
    """:meth:`JavaScriptToolchain.is_protected` as data: a path is protected when its file
    name matches one of ``name_patterns`` (Python regular expressions), a directory above
    it is one of ``test_dirs``, or any part of it is one of ``any_part``."""
    names = "|".join(re.escape(n) for n in sorted(files._CONFIG_NAMES))
    prefixes = "|".join(re.escape(p) for p in files._CONFIG_PREFIXES)
    return {
        "name_patterns": [files._TEST_NAME.pattern, f"^(?:{names})$", f"^(?:{prefixes})",
                          "(?i)" + files._SETUP_NAME.pattern, r"^(?=.*test).*\.d\.ts$"],
        "test_dirs": sorted(files.TEST_DIRS),
        "any_part": ["node_modules"],
    }


def grading_plan(sandbox: Sandbox, tests: Sequence[str],
                 limits: TimeLimits | None) -> dict[str, Any]:
    """The plan (module docstring) of a task whose listed tests are ``tests``, read from
    ``sandbox`` in the task's graded state; ``limits`` are the run's.

    Raises:
        NoTestsError: the project has no runner repogym can run.
        ValueError: its command line cannot be templated (:func:`command_template`).
        SandboxError: the sandbox broke.
    """
    project = _project_in(sandbox)
    name = project.runner()
    runner = runner_for(name)
    args = project.runner_args(name)
    canaries: dict[str, Any] = {}
    for path in sorted({split_id(t)[0] for t in tests}):
        text = text_or_none(sandbox, path)
        template = None if text is None else canary_template(path, text, name)
        if template is not None:
            canaries[path] = template
    inv = Invocation(scratch=SCRATCH, project_args=tuple(args), limits=limits)
    plan = {
        "runner": name, "build": project.build_script(),
        "command": command_template(runner, args, limits, exitfirst=False),
        "command_exitfirst": command_template(runner, args, limits, exitfirst=True),
        "env": {**RUN_ENV, **runner.env(inv)},
        "reporters": {f: reporter_source(f) for f in runner.files},
        "test_timeout_ms": timeout_ms(limits), "canaries": canaries,
        "canary_words": list(_WORDS), "protection": protection_rules(),
    }
    json.dumps(plan)  # plain data only
    return plan


__all__ = ["FILES", "PATTERN", "SCRATCH", "canary_of", "canary_template", "command_template",
           "grading_plan", "protection_rules"]
