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
    for a selection, without and with stopping at the first failure, as words with
    placeholders: :data:`SCRATCH` inside a word (the run's scratch directory, where the
    reporter files are), :data:`FILES` a whole word (the selected tests' files, sorted, one
    word each), :data:`PATTERN` inside a word (the name pattern of
    :func:`~repogym.toolchains.javascript.runners.name_pattern` over the selection and the
    exclusion), and a word that starts with :data:`EACH_SELECT` or :data:`EACH_EXCLUDE`
    stands for one word per selected (excluded) test, in order, :data:`TITLE` in it that
    test's last title (ava's ``--match``).
``tap``
    the run is read from the TAP the runner prints (ava:
    :func:`~repogym.toolchains.javascript.tap.parse_tap`), not from a reporter's report.
``prefix``, ``fresh``
    shell commands the run's command line comes after, joined with ``&&`` (the tool-cache
    folder made, the build script run); folders a reset empties that each run must find
    fresh (:data:`~repogym.layout.TOOL_CACHE`, where ``node_modules/.cache`` points).
``env``
    the run's variables less the settings file's (``RUN_ENV`` and the runner's own, with
    :data:`SCRATCH`); ``REPOGYM_JS_CONFIG`` names the settings file (see
    :mod:`~repogym.toolchains.javascript.placed`).
``reporters``, ``test_timeout_ms``
    the reporter files the run copies into its scratch directory (name -> text); the
    per-test limit in the settings.
``canaries``
    per selected test file, the canary :func:`~repogym.toolchains.javascript.canary.plant`
    puts beside it (:func:`canary_template`): its ``path``, ``text`` and ``tests`` (ids) with
    each random token it drew replaced by a placeholder, and ``tokens`` (placeholder -> bytes
    of hex): the grader draws fresh tokens for every run (:func:`canary_of`).
``protection``
    :func:`protection_rules`: which paths a graded patch may not change, as data.

"""

from __future__ import annotations

import json
import re
import secrets
import shlex
from typing import Any, Sequence

from repogym.layout import TOOL_CACHE
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import TimeLimits
from repogym.toolchains.javascript import _project_in, files
from repogym.toolchains.javascript.canary import plant
from repogym.toolchains.javascript.placed import RUN_ENV, reporter_source
from repogym.toolchains.javascript.report import split_id
from repogym.toolchains.javascript.report import test_id as make_test_id
from repogym.toolchains.javascript.runners import (
    Invocation,
    Runner,
    name_pattern,
    runner_for,
    timeout_ms,
)
from repogym.toolchains.runs import text_or_none

SCRATCH = "@RG_SCRATCH@"
FILES = "@RG_FILES@"
PATTERN = "@RG_PATTERN@"
EACH_SELECT, EACH_EXCLUDE, TITLE = "@RG_EACH_SELECT@", "@RG_EACH_EXCLUDE@", "@RG_TITLE@"
# the selection and exclusion the templates are made with
_PROBE_FILE, _PROBE_NAME, _PROBE_EXCLUDED = "@RG_FILE@", "@RG_NAME@", "@RG_XNAME@"
# the random tokens canary.plant draws: the file's ``rg<8 hex>`` stem, the titles' 6 hex
_STEM_TOKEN = re.compile(r"(?:^|/)rg([0-9a-f]{8})[^/]*$")
_TITLE_TOKEN = re.compile(r"(?<![0-9a-f])([0-9a-f]{6})$")


def command_template(runner: Runner, project_args: Sequence[str], limits: TimeLimits | None,
                     exitfirst: bool) -> list[str]:
    """The runner's command line for any selection, with :data:`SCRATCH`, :data:`FILES`
    and :data:`PATTERN` where the run's own go (see the module docstring).

    Raises:
        ValueError: the runner's command line does not take the selection in a form the
            placeholders can stand for (a word per selected test, say).
    """
    probe = [make_test_id(_PROBE_FILE, [_PROBE_NAME])]
    excluded = [make_test_id(_PROBE_FILE, [_PROBE_EXCLUDED])]
    inv = Invocation(scratch=SCRATCH, project_args=tuple(project_args), select=probe,
                     exclude=excluded, limits=limits, exitfirst=exitfirst)
    probe_pattern = name_pattern(probe, excluded)
    out = []
    for word in shlex.split(runner.command(inv)):
        if runner.whole_files and word.startswith("--grep="):
            continue  # node-tap's top-level filter: the grader runs the files whole
        if word == _PROBE_FILE:
            out.append(FILES)
            continue
        if probe_pattern:
            word = word.replace(probe_pattern, PATTERN)
        if _PROBE_NAME in word and _PROBE_EXCLUDED not in word:
            word = EACH_SELECT + word.replace(_PROBE_NAME, TITLE)
        elif _PROBE_EXCLUDED in word and _PROBE_NAME not in word:
            word = EACH_EXCLUDE + word.replace(_PROBE_EXCLUDED, TITLE)
        if _PROBE_FILE in word or _PROBE_NAME in word or _PROBE_EXCLUDED in word:
            raise ValueError(f"{runner.name}'s command line takes the selection as {word!r}")
        out.append(word)
    return out


def canary_template(path: str, text: str, runner: str) -> dict[str, Any] | None:
    """The canary :func:`~repogym.toolchains.javascript.canary.plant` puts beside the test
    file ``path`` (its ``text``) for ``runner``, its random tokens made placeholders (see
    the module docstring); None when it plants none.

    Raises:
        ValueError: no planting gave tokens that can be told from the file's own text.
    """
    for _ in range(8):
        canary = plant({path: text}, runner)
        if not canary.tests:
            return None
        [(where, body)] = canary.files.items()
        stem = _STEM_TOKEN.search(where)
        tokens = [stem.group(1)] if stem else []
        for test in canary.tests:
            for title in split_id(test)[1]:
                m = _TITLE_TOKEN.search(title)
                if m and m.group(1) not in tokens:
                    tokens.append(m.group(1))
        if not stem or any(t in text or t in path for t in tokens):
            continue  # a token that is not only the canary's: draw again
        names = {t: f"@RG_TOKEN_{i}@" for i, t in enumerate(tokens)}

        def templated(s: str, names: dict[str, str] = names) -> str:
            for token, name in names.items():
                s = s.replace(token, name)
            return s

        return {"path": templated(where), "text": templated(body),
                "tests": [templated(t) for t in canary.tests],
                "tokens": {name: len(token) // 2 for token, name in names.items()}}
    raise ValueError(f"cannot tell the canary of {path} from the file's own text")


def canary_of(template: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(path, text, test ids) of one canary from its template, with fresh tokens (the
    in-container grader does the same)."""
    values = {name: secrets.token_hex(n) for name, n in template["tokens"].items()}

    def filled(s: str) -> str:
        for name, value in values.items():
            s = s.replace(name, value)
        return s

    return (filled(template["path"]), filled(template["text"]),
            [filled(t) for t in template["tests"]])


def protection_rules() -> dict[str, list[str]]:
    """:meth:`JavaScriptToolchain.is_protected` as data: a path is protected when its file
    name matches one of ``name_patterns`` (Python regular expressions), a directory above
    it is one of ``test_dirs``, or any part of it is one of ``any_part``."""
    names = "|".join(re.escape(n) for n in sorted(files._CONFIG_NAMES))
    prefixes = "|".join(re.escape(p) for p in files._CONFIG_PREFIXES)
    return {
        # the toolchain's own patterns as they are; exact names and suffixes end at \Z
        # (``$`` would also match before a final line break, ``in`` and ``endswith`` not)
        "name_patterns": [files._TEST_NAME.pattern, f"^(?:{names})\\Z", f"^(?:{prefixes})",
                          "(?i)" + files._SETUP_NAME.pattern, r"(?s)^(?=.*test).*\.d\.ts\Z"],
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
    build = project.build_script()
    inv = Invocation(scratch=SCRATCH, project_args=tuple(args), limits=limits)
    plan = {
        "runner": name, "build": build, "tap": runner.tap,
        "prefix": [f"mkdir -p {TOOL_CACHE}",
                   *([f"npm run --silent {shlex.quote(build)}"] if build else [])],
        "fresh": [TOOL_CACHE],
        "command": command_template(runner, args, limits, exitfirst=False),
        "command_exitfirst": command_template(runner, args, limits, exitfirst=True),
        "env": {**RUN_ENV, **runner.env(inv)},
        "reporters": {f: reporter_source(f) for f in runner.files},
        "test_timeout_ms": timeout_ms(limits), "canaries": canaries,
        "protection": protection_rules(),
    }
    json.dumps(plan)  # plain data only
    return plan


__all__ = ["FILES", "PATTERN", "SCRATCH", "canary_of", "canary_template", "command_template",
           "grading_plan", "protection_rules"]
