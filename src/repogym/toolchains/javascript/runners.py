"""How each JavaScript test runner is started: its command line for one run, with
repogym's reporter, the tests to run, and a per-test time limit.

A run is the runner's own binary (``node_modules/.bin/<runner>``), never the project's
``npm test`` (which may lint, type-check or build for publication first), given:

* the arguments the project's test script gives it (``--env node``, ``-r esm``, the spec
  files), less those about reporting, watching and coverage;
* repogym's reporter (``reporters/rg-<runner>.*``), which writes the run's report (see
  :mod:`repogym.toolchains.javascript.report`);
* for a selection, the files of the selected tests and a pattern matching exactly their
  full names (titles joined by spaces, as every runner matches them); for an exclusion, a
  pattern that matches every other name;
* ``--testTimeout`` / ``--timeout`` from the run's per-test limits: a test past its limit
  fails there, and the others still run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from repogym.schemas.records import TimeLimits
from repogym.toolchains.javascript.report import split_id

JS_REGEX_SPECIAL = re.compile(r"[.*+?^${}()|\[\]\\/-]")
DEFAULT_TEST_TIMEOUT_MS = 60_000


def js_escape(text: str) -> str:
    """``text`` as a JavaScript regular expression matching it literally."""
    return JS_REGEX_SPECIAL.sub(lambda m: "\\" + m.group(0), text)


def name_pattern(select: Sequence[str] | None, exclude: Sequence[str]) -> str | None:
    """A pattern over full names (titles joined by spaces) that matches the selected tests
    and none of the excluded ones; None when every name may run."""
    def names(ids: Sequence[str]) -> str:
        full = sorted({" ".join(split_id(i)[1]) for i in ids})
        return "|".join(js_escape(n) for n in full)

    if select is None and not exclude:
        return None
    keep = f"(?:{names(select)})$" if select is not None else ""
    drop = f"(?!(?:{names(exclude)})$)" if exclude else ""
    return f"^{drop}{keep}" if keep else f"^{drop}"


def files_of(ids: Sequence[str]) -> list[str]:
    return sorted({split_id(i)[0] for i in ids if split_id(i)[0]})


def timeout_ms(limits: TimeLimits | None) -> int:
    """The per-test limit the runner enforces: the largest of the run's test limits."""
    if limits is None:
        return DEFAULT_TEST_TIMEOUT_MS
    values = [*limits.tests.values(), *([limits.default] if limits.default else [])]
    return int(max(values) * 1000) if values else DEFAULT_TEST_TIMEOUT_MS


@dataclass(frozen=True)
class Invocation:
    """What one run asks of the runner."""

    scratch: str  # where the reporter files are
    project_args: tuple[str, ...] = ()
    select: Sequence[str] | None = None
    exclude: Sequence[str] = ()
    collect: Sequence[str] = ()
    limits: TimeLimits | None = None
    exitfirst: bool = False

    @property
    def files(self) -> list[str]:
        """The test files to name: the selected tests' and those to collect (none: the
        runner's own discovery, or the project's)."""
        return sorted({*files_of(self.select or []), *self.collect})


@dataclass(frozen=True)
class Runner:
    """One runner: its reporter files and how its command line is built."""

    name: str
    reporter: str  # the reporter's file name in reporters/
    build: Callable[[Invocation, str], list[str]]  # (invocation, reporter path) -> argv tail
    drop_args: frozenset[str] = field(default_factory=frozenset)  # project args to leave out
    drop_with_value: frozenset[str] = field(default_factory=frozenset)
    helpers: tuple[str, ...] = ()  # more files of reporters/ the reporter loads
    preload: bool = False  # the reporter is loaded into the runner's process by node itself
    tap: bool = False  # no reporter: the run is read from the TAP the runner prints
    whole_files: bool = False  # a selection runs more (its files, or top-level subtests):
    # results outside it are dropped

    @property
    def files(self) -> tuple[str, ...]:
        """Every file of reporters/ a run needs beside it."""
        if self.tap:
            return ()
        return ("rg-common.cjs", self.reporter, *self.helpers)

    def env(self, inv: Invocation) -> dict[str, str]:
        """Variables the runner's process needs (a preloaded reporter goes in
        ``NODE_OPTIONS``)."""
        return {"NODE_OPTIONS": f"--require {inv.scratch}/{self.reporter}"} if self.preload \
            else {}

    def command(self, inv: Invocation) -> str:
        reporter = f"{inv.scratch}/{self.reporter}"
        inv = replace(inv, project_args=tuple(self.project_args(inv.project_args)))
        binary = "node" if self.name == "node-test" else f"node_modules/.bin/{self.name}"
        return shlex.join([binary, *self.build(inv, reporter)])

    def project_args(self, args: Sequence[str]) -> list[str]:
        """The project's arguments less those about reporting, watching and coverage, and
        less file arguments when the run names files itself."""
        out: list[str] = []
        skip = False
        for arg in args:
            key = arg.split("=", 1)[0]
            if skip:
                skip = False
                continue
            if key in self.drop_with_value and "=" not in arg:
                skip = True
                continue
            if key in self.drop_args or key in self.drop_with_value:
                continue
            out.append(arg)
        return out


def _positional(args: Sequence[str], with_value: frozenset[str]) -> tuple[list[str], list[str]]:
    """(options, positional arguments) of a command line."""
    options: list[str] = []
    positional: list[str] = []
    take = False
    for arg in args:
        if take:
            options.append(arg)
            take = False
        elif arg.startswith("-"):
            options.append(arg)
            take = "=" not in arg and arg in with_value
        else:
            positional.append(arg)
    return options, positional


_JEST_VALUED = frozenset({"--env", "--testEnvironment", "-c", "--config", "--rootDir",
                          "--roots", "--testMatch", "--testPathIgnorePatterns", "--selectProjects",
                          "--maxWorkers", "-w", "--setupFiles", "--preset"})


def _jest(inv: Invocation, reporter: str) -> list[str]:
    options, positional = _positional(inv.project_args, _JEST_VALUED)
    args = [*options, f"--reporters={reporter}", "--ci", "--coverage=false",
            "--passWithNoTests", "--no-watchman", "--colors=false",
            f"--testTimeout={timeout_ms(inv.limits)}"]
    pattern = name_pattern(inv.select, inv.exclude)
    if pattern:
        args.append(f"--testNamePattern={pattern}")
    if inv.exitfirst:
        args.append("--bail=1")
    files = inv.files
    if files:
        args += ["--runTestsByPath", *files]
    else:
        args += positional
    return args


_VITEST_VALUED = frozenset({"--config", "-c", "--root", "-r", "--dir", "--project",
                            "--environment", "--pool", "--mode"})


def _vitest(inv: Invocation, reporter: str) -> list[str]:
    options, positional = _positional(inv.project_args, _VITEST_VALUED)
    args = ["run", *options, f"--reporter={reporter}", "--coverage.enabled=false",
            "--passWithNoTests", f"--testTimeout={timeout_ms(inv.limits)}",
            "--watch=false"]
    pattern = name_pattern(inv.select, inv.exclude)
    if pattern:
        args.append(f"--testNamePattern={pattern}")
    if inv.exitfirst:
        args.append("--bail=1")
    return args + (inv.files or [p for p in positional if p not in ("run", "test")])


_MOCHA_VALUED = frozenset({"--require", "-r", "--ui", "-u", "--config", "--package",
                           "--extension", "--ignore", "--spec", "--file", "--node-option",
                           "-n", "--import"})


def _mocha(inv: Invocation, reporter: str) -> list[str]:
    options, positional = _positional(inv.project_args, _MOCHA_VALUED)
    # ``--no-colors``: mocha 3's commander knows no ``--no-color``; later yargs reads both
    args = [*options, "--reporter", reporter, "--no-colors", "--timeout",
            str(timeout_ms(inv.limits))]
    pattern = name_pattern(inv.select, inv.exclude)
    if pattern:
        args += ["--grep", pattern]
    if inv.exitfirst:
        args.append("--bail")
    return args + (inv.files or positional)


def _uvu(inv: Invocation, reporter: str) -> list[str]:
    # the selection goes through the report's settings: uvu has no name filter
    return list(inv.project_args)


def _ava(inv: Invocation, reporter: str) -> list[str]:
    # ava's own timeout is for inactivity and crashes its TAP reporter when it fires: the
    # run's limit stops a hang instead
    options, positional = _positional(inv.project_args, frozenset({"--match", "-m"}))
    run_s = int(inv.limits.run) + 60 if inv.limits else 3600
    args = [*options, "--tap", "--no-worker-threads", f"--timeout={run_s}s"]
    for test in inv.select or ():
        args.append(f"--match={_glob(split_id(test)[1][-1])}")
    for test in inv.exclude:
        args.append(f"--match=!{_glob(split_id(test)[1][-1])}")
    if inv.exitfirst:
        args.append("--fail-fast")
    return args + (inv.files or positional)


def _glob(title: str) -> str:
    """ava's --match is a glob over titles; a literal ``*`` cannot be said: it matches itself
    and more."""
    return title


def _node_test(inv: Invocation, reporter: str) -> list[str]:
    # the runner is node itself: ``node --test``; names are filtered after the run
    options, positional = _positional(inv.project_args, frozenset({"--test-reporter",
                                                                   "--test-name-pattern"}))
    return ["--test", f"--test-reporter={reporter}", "--test-reporter-destination=stdout",
            f"--test-timeout={timeout_ms(inv.limits)}", *options, *(inv.files or positional)]


_TAP_VALUED = frozenset({"--node-arg", "--test-arg", "--test-env", "--before", "--after",
                         "--plugin", "-P", "--exclude", "-i", "--include", "--tsconfig"})


def _node_tap(inv: Invocation, reporter: str) -> list[str]:
    """node-tap 18 and newer: every test file in a process of its own, its TAP read by the
    reporter in tap's own process. A selection runs its files, with ``--grep`` naming the
    top-level subtests wanted (tap cannot pick deeper ones across files: their parents run
    whole, and the results are filtered); an exclusion is filtered likewise. tap's
    ``--timeout`` is per test file: the largest per-test limit and a margin."""
    options, positional = _positional(inv.project_args, _TAP_VALUED)
    per_file = max(30, timeout_ms(inv.limits) // 1000 + 30)
    args = [*options, f"--reporter={reporter}", "--disable-coverage", "--no-color",
            f"--timeout={per_file}"]
    tops = {tuple(split_id(t)[1][:1]) for t in inv.select or ()}
    if inv.select is not None and tops and () not in tops:  # () : a file's own assertions
        args.append("--grep=^(?:" + "|".join(sorted(js_escape(t[0]) for t in tops)) + ")$")
    if inv.exitfirst:
        args.append("--bail")
    return args + (inv.files or positional)


RUNNERS: dict[str, Runner] = {
    "jest": Runner("jest", "rg-jest.cjs", _jest,
                   drop_args=frozenset({"--coverage", "--watch", "--watchAll", "--ci",
                                        "--silent", "--verbose", "--json", "--colors",
                                        "--no-coverage", "--runInBand", "-i",
                                        "--passWithNoTests", "--detectOpenHandles"}),
                   drop_with_value=frozenset({"--reporters", "--outputFile",
                                              "--coverageReporters", "--testTimeout"})),
    "vitest": Runner("vitest", "rg-vitest.mjs", _vitest,
                     drop_args=frozenset({"--coverage", "--watch", "--run", "--ui",
                                          "--silent", "--passWithNoTests", "--typecheck"}),
                     drop_with_value=frozenset({"--reporter", "--outputFile",
                                                "--testTimeout"})),
    "uvu": Runner("uvu", "rg-uvu.cjs", _uvu, drop_args=frozenset({"-b", "--bail"}),
                  helpers=("rg-uvu-esm.mjs",), preload=True),
    "ava": Runner("ava", "", _ava, drop_args=frozenset({"--tap", "-t", "--verbose", "-v",
                                                        "--watch", "-w", "--fail-fast"}),
                  drop_with_value=frozenset({"--timeout", "-T", "--match", "-m"}), tap=True),
    "node-test": Runner("node-test", "rg-node-test.mjs", _node_test,
                        drop_args=frozenset({"--test", "--watch"}),
                        drop_with_value=frozenset({"--test-reporter",
                                                   "--test-reporter-destination"})),
    "mocha": Runner("mocha", "rg-mocha.cjs", _mocha,
                    drop_args=frozenset({"--watch", "-w", "--colors", "-c", "--no-colors",
                                         "--forbid-only", "--bail", "-b"}),
                    drop_with_value=frozenset({"--reporter", "-R", "--reporter-option",
                                               "--reporter-options", "-O", "--timeout",
                                               "-t", "--grep", "-g", "--fgrep", "-f"})),
    "tap": Runner("tap", "rg-tap.mjs", _node_tap, whole_files=True,
                  drop_args=frozenset({"--watch", "-w", "--bail", "-b", "--no-bail", "-B",
                                       "--color", "-c", "--no-color", "-C", "--changed", "-n",
                                       "--only", "-O", "--disable-coverage",
                                       "--allow-empty-coverage", "--allow-incomplete-coverage",
                                       "--show-full-coverage", "--save", "-s"}),
                  drop_with_value=frozenset({"--reporter", "-R", "--reporter-file", "-f",
                                             "--reporter-arg", "-r", "--coverage-report",
                                             "--timeout", "-t", "--grep", "-g"})),
}


TAP_OLDEST = 18  # node-tap's first release with a runner that loads reporter modules


def tap_major(spec: str) -> int | None:
    """The major version a ``package.json`` range for node-tap allows at least (``^21.7.5``
    -> 21); None when it does not say (``latest``, a git URL)."""
    m = re.match(r"\s*(?:[\^~>=v]|>=)*\s*(\d+)", spec)
    return int(m.group(1)) if m else None


def runner_for(name: str) -> Runner:
    """The adapter of a runner.

    Raises:
        NoTestsError: repogym cannot run that runner yet.
    """
    from repogym.errors import NoTestsError

    try:
        return RUNNERS[name]
    except KeyError:
        raise NoTestsError(f"test runner {name!r} is not supported yet (supported: "
                           f"{', '.join(sorted(RUNNERS))})") from None


__all__ = ["RUNNERS", "Invocation", "Runner", "js_escape", "name_pattern", "runner_for",
           "timeout_ms"]
