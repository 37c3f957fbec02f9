"""Per-test-file line coverage of JavaScript and TypeScript runs.

The map says which tests execute which lines of the project's code
(:class:`~repogym.schemas.records.CoverageMap`): generators mutate only lines some stable
passing test executes, and the judge runs only the tests that execute a changed line.

Granularity is the test *file*: every line a test file's run executes maps to every
selected test of that file that ran. No runner reports coverage per test, and a file's
tests share its module-level code and hooks, so a finer map would be guesswork. Lines run
at import belong to the tests of each file that imports them: a change there can reach
exactly those tests, so :attr:`CoverageMap.import_lines` stays empty.

The runs are the judge's: the runner's own binary, repogym's reporter, the project's runner
arguments, the selected tests' files and name pattern (see
:mod:`~repogym.toolchains.javascript.runners`), with coverage switched on. Coverage comes
from V8 itself (no instrumentation: the code runs as the judge runs it), as istanbul JSON:

* jest: ``--coverage --coverageProvider=v8`` (built into jest; mapped through the project's
  transformer, ts-jest or babel, to the original lines). jest already keeps each test
  file's coverage apart (a module registry per file), so *one* run measures every file:
  ``reporters/rg-jest-coverage.cjs`` hands each file's coverage alone to jest's own
  ``CoverageReporter``. A file that run did not give (it died first, or jest's internals
  are not as that reporter expects) is then run alone, as below;
* vitest: ``--coverage.provider=v8``, which needs ``@vitest/coverage-v8`` of the installed
  vitest's version: :func:`coverage_tools_steps` adds it at environment build when the
  project lacks it. One run per test file;
* mocha, uvu and any other runner: ``c8`` around the runner's command (V8 coverage through
  ``NODE_V8_COVERAGE``, honouring the source maps loaded code carries, ts-node's or tsx's),
  installed by :func:`coverage_tools_steps` into the environment's ``bin``. One run per
  test file (these runners load every file in one process: coverage cannot be told apart).

A statement's lines count when it ran, less those of a statement inside it that did not
(a branch not taken); from V8 every statement is one line.

Limits:

* vitest and mocha start the runner once per test file: the map costs the runner's
  start-up times the number of files (about a second each), on top of the tests;
* a file whose run fails, dies, times out or writes no coverage contributes nothing (it is
  logged); the lines only it executes are then absent from the map, so generators leave
  them alone and the judge finds no test for them. None only when no file was measured;
* the project's build (a ``pretest`` that builds) runs once, before the runs. Tests that
  read built output are attributed the sources' lines only when the build writes source
  maps; otherwise the lines are the built files' (``dist/``...), kept but never mutated;
* jest before 25 has no V8 provider: no map there;
* the runs' files are placed as every run places them
  (:class:`~repogym.toolchains.javascript.placed.PlacedRun`);
* the project's own coverage settings still apply (jest's ``collectCoverageFrom``,
  vitest's ``coverage.include``/``exclude``, ``.c8rc``): what they exclude is not measured.
  Coverage thresholds may fail a run's exit code; the exit code is not read here.
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from repogym.errors import NoTestsError, SandboxError
from repogym.layout import TOOL_CACHE
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import CoverageMap, Outcome, TestRun
from repogym.toolchains.javascript import files
from repogym.toolchains.javascript.placed import RUN_ENV, PlacedRun
from repogym.toolchains.javascript.project import Project
from repogym.toolchains.javascript.report import parse_report, split_id
from repogym.toolchains.javascript.runners import Invocation, Runner, runner_for
from repogym.toolchains.runs import exec_or_lost, read_or_empty

if TYPE_CHECKING:
    from repogym.toolchains.javascript import JavaScriptToolchain

log = logging.getLogger(__name__)

C8_VERSION = "10.1.3"
VITEST_V8 = "@vitest/coverage-v8"
# a file's run may use at most this share of the whole budget (the pipeline's budget is
# three whole-suite run limits: one file gets at most one run's limit) ...
FILE_SHARE = 3
# ... and none starts with less than this left
MIN_FILE_SECONDS = 20.0
Statement = tuple[int, int, int]  # first line, last line, times run
OUT = "coverage"  # the coverage tools' directory in a run's scratch directory
ISTANBUL = "coverage-final.json"
PER_FILE = "per-file.jsonl"  # rg-jest-coverage.cjs's output, beside coverage-final.json
JEST_PER_FILE = "rg-jest-coverage.cjs"
# the files a package manager's `add` may rewrite: put back after the coverage tools install
MANIFESTS = ("package.json", "package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml",
             "pnpm-workspace.yaml", "yarn.lock")


# ---------------------------------------------------------------------------------------
# the environment: what the coverage runs need beyond the project's own tools


def coverage_tools_steps(project: Project) -> list[str]:
    """Install steps for what the coverage runs need beyond the project's own tools: none
    for jest; ``@vitest/coverage-v8`` at the installed vitest's version for vitest, when the
    project does not have it; c8 for the other runners. A step that fails says so in the
    build log and leaves the environment as it was (coverage is then not measured)."""
    try:
        runner = project.runner()
    except NoTestsError:
        return []
    if runner == "jest":
        return []
    if runner == "vitest":
        if VITEST_V8 in project.dependencies():
            return []
        return [_vitest_v8_step(project)]
    return [f'npm install -g --prefix "$VIRTUAL_ENV" c8@{C8_VERSION} || '
            f"echo 'repogym: c8 not installed: no per-test coverage' >&2"]


def _vitest_v8_step(project: Project) -> str:
    """Add ``@vitest/coverage-v8`` at the version of the vitest in ``node_modules``, with the
    project's package manager, leaving ``package.json`` and the lock file as they were."""
    names = " ".join(MANIFESTS)
    add = {
        "pnpm": "pnpm add --save-dev $([ -f pnpm-workspace.yaml ] && echo --workspace-root)",
        "yarn": "yarn add --dev" + (" --ignore-workspace-root-check"
                                    if project.package_manager().version[:1] in ("", "1")
                                    else ""),
    }.get(project.package_manager().name, "npm install --no-save")
    version = ("node -p 'JSON.parse(require(\"fs\").readFileSync("
               "\"node_modules/vitest/package.json\", \"utf8\")).version'")
    return "\n".join([
        f"if [ ! -e node_modules/{VITEST_V8}/package.json ]; then",
        '  keep=$(mktemp -d)',
        f'  for f in {names}; do if [ -f "$f" ]; then cp -p "$f" "$keep/"; fi; done',
        f'  v=$({version}) && {add} "{VITEST_V8}@$v" || '
        f"echo 'repogym: {VITEST_V8} not installed: no per-test coverage' >&2",
        f'  for f in {names}; do',
        '    if [ -f "$keep/$f" ]; then cp -p "$keep/$f" "$f"; else rm -f "$f"; fi',
        '  done',
        '  rm -rf "$keep"',
        "fi",
    ])


# ---------------------------------------------------------------------------------------
# the map


@dataclass(frozen=True)
class FileCoverage:
    """What one test file's run executed: the selected tests that ran, and the lines."""

    test_file: str
    tests: tuple[str, ...]
    lines: dict[str, set[int]]


def coverage_map(toolchain: "JavaScriptToolchain", sandbox: Sandbox, project: Project, *,
                 timeout: float, select: Sequence[str] | None = None) -> CoverageMap | None:
    """Which test files execute which lines (None: not measurable here).

    ``timeout`` is the budget of the whole map; ``select`` the tests to measure (None:
    every test a plain run reports).
    """
    try:
        runner = runner_for(project.runner())
    except NoTestsError as exc:
        log.warning("no JavaScript coverage: %s", exc)
        return None
    if (missing := _tool_missing(sandbox, runner)) is not None:
        log.warning("no JavaScript coverage: %s", missing)
        return None
    deadline = time.monotonic() + timeout
    ids = list(select) if select is not None else _every_test(toolchain, sandbox, timeout)
    by_file = group_by_file(ids)
    if not by_file or not _build(sandbox, project, timeout):
        return None
    measured = measure_all(sandbox, project, runner, by_file, timeout=timeout,
                           deadline=deadline)
    return merge(measured.values()) if measured else None


def measure_all(sandbox: Sandbox, project: Project, runner: Runner,
                by_file: Mapping[str, Sequence[str]], *, timeout: float,
                deadline: float) -> dict[str, FileCoverage]:
    """Each test file's coverage (those measured): jest's in one run, then every file it did
    not give in a run of its own, until ``deadline`` (``time.monotonic``)."""
    measured: dict[str, FileCoverage] = {}
    try:
        if runner.name == "jest" and len(by_file) > 1:
            measured = measure_together(sandbox, project, runner, by_file,
                                        timeout=timeout / FILE_SHARE)
        pending = [f for f in by_file if f not in measured]
        for done, test_file in enumerate(pending):
            left = deadline - time.monotonic()
            if left < MIN_FILE_SECONDS:
                log.warning("coverage: out of time, %d test file(s) not measured",
                            len(pending) - done)
                break
            got = measure_file(sandbox, project, runner, test_file, by_file[test_file],
                               timeout=min(left, timeout / FILE_SHARE))
            if got is not None:
                measured[test_file] = got
    except SandboxError as exc:  # lost, and a reset could not bring it back
        log.warning("coverage: the sandbox broke, measuring stopped: %s", exc)
    return measured


def group_by_file(ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Test ids grouped by their test file (files and ids sorted)."""
    out: dict[str, list[str]] = {}
    for test in ids:
        test_file = split_id(test)[0]
        if test_file:
            out.setdefault(test_file, []).append(test)
    return {f: tuple(sorted(set(out[f]))) for f in sorted(out)}


def merge(measured: Iterable[FileCoverage]) -> CoverageMap:
    """Every file's lines -> the tests of every test file that executed them."""
    by_line: dict[str, dict[int, set[str]]] = {}
    for got in measured:
        for path, lines in got.lines.items():
            into = by_line.setdefault(path, {})
            for line in lines:
                into.setdefault(line, set()).update(got.tests)
    return CoverageMap(files={
        path: {line: tuple(sorted(tests)) for line, tests in sorted(lines.items())}
        for path, lines in sorted(by_line.items()) if lines})


# ---------------------------------------------------------------------------------------
# the runs


@dataclass(frozen=True)
class CoverageRun:
    """What one run with coverage on left behind."""

    run: TestRun
    istanbul: bytes  # the whole run's coverage-final.json (b"": none)
    per_file: str  # jest, all files at once: rg-jest-coverage.cjs's lines ("": none)
    log_tail: str

    def ran(self, tests: Iterable[str]) -> tuple[str, ...]:
        """Those of ``tests`` that ran (a result other than skipped)."""
        return tuple(t for t in tests if t in self.run.results
                     and self.run.results[t].outcome is not Outcome.skipped)


def measure_file(sandbox: Sandbox, project: Project, runner: Runner, test_file: str,
                 tests: Sequence[str], *, timeout: float) -> FileCoverage | None:
    """Run ``tests`` (all of ``test_file``) alone with coverage on: the lines they executed,
    or None when the run is unusable (logged).

    Raises:
        SandboxError: the sandbox broke and could not be reset.
    """
    done = run_with_coverage(sandbox, project, runner, tests, timeout=timeout)
    if done is None:
        return None
    ran = done.ran(tests)
    why = ("timed out" if done.run.timed_out else "no report" if not done.run.finished
           else "no coverage written" if not done.istanbul else "none of its tests ran"
           if not ran else "")
    if not why:
        try:
            lines = executed_lines(istanbul_statements(json.loads(done.istanbul)),
                                   sandbox.repo_dir)
            return FileCoverage(test_file=test_file, tests=ran, lines=lines)
        except ValueError as exc:
            why = f"unreadable coverage report: {exc}"
    log.warning("coverage of %s: %s (exit %d): %s", test_file, why, done.run.exit_code,
                done.log_tail)
    return None


def measure_together(sandbox: Sandbox, project: Project, runner: Runner,
                     by_file: Mapping[str, Sequence[str]], *,
                     timeout: float) -> dict[str, FileCoverage]:
    """jest: every file in one run, each file's coverage apart (the files it did not give:
    none when the run died before them, or jest's coverage internals are not as expected).

    Raises:
        SandboxError: the sandbox broke and could not be reset.
    """
    tests = [t for file_tests in by_file.values() for t in file_tests]
    done = run_with_coverage(sandbox, project, runner, tests, timeout=timeout, together=True)
    if done is None:
        return {}
    out: dict[str, FileCoverage] = {}
    for test_file, statements in per_file_statements(done.per_file, sandbox.repo_dir):
        ran = done.ran(by_file.get(test_file, ()))
        if ran and test_file not in out:
            out[test_file] = FileCoverage(test_file=test_file, tests=ran,
                                          lines=executed_lines(statements, sandbox.repo_dir))
    if len(out) < len(by_file):
        log.warning("coverage: one jest run measured %d of %d test file(s), the rest run "
                    "alone: %s", len(out), len(by_file), done.log_tail)
    return out


def per_file_statements(text: str,
                        root: str) -> Iterator[tuple[str, dict[str, list[Statement]]]]:
    """``rg-jest-coverage.cjs``'s lines -> (repo-relative test file, its statements per
    source file); a line cut short (the run was killed while writing it) is skipped."""
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            test_file = _relative(str(entry["file"]), root)
            statements = {str(k): [_triple(r) for r in v]
                          for k, v in entry["statements"].items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if test_file is not None:
            yield test_file, statements


def run_with_coverage(sandbox: Sandbox, project: Project, runner: Runner,
                      tests: Sequence[str], *, timeout: float,
                      together: bool = False) -> CoverageRun | None:
    """One run of ``tests`` with coverage on, as a judged run of them runs (None: the
    sandbox broke under it; it has been reset). ``together``: jest's per-file coverage too.

    Raises:
        SandboxError: the sandbox broke and could not be reset.
    """
    placed = PlacedRun.place(sandbox, runner, select=tests,
                             extra=[JEST_PER_FILE] if together else [])
    scratch, report, nonce = placed.scratch, placed.report, placed.nonce
    inv = Invocation(scratch=scratch, project_args=tuple(project.runner_args(runner.name)),
                     select=tests)
    cmd = coverage_command(runner, runner.command(inv), scratch, together=together,
                           runner_env=runner.env(inv))
    cmd = f"mkdir -p {TOOL_CACHE} && {cmd}"
    result, lost = exec_or_lost(sandbox, cmd, timeout=timeout, env=placed.env())
    if lost:
        log.warning("coverage run of %d test(s): %s", len(tests), lost)
        sandbox.reset()
        return None
    raw = read_or_empty(sandbox, report).decode("utf-8", errors="replace")
    istanbul = b"" if together else read_or_empty(sandbox, f"{scratch}/{OUT}/{ISTANBUL}")
    per_file = read_or_empty(sandbox, f"{scratch}/{OUT}/{PER_FILE}") if together else b""
    sandbox.exec(["rm", "-rf", scratch], timeout=30)
    run = parse_report(raw, nonce=nonce, exit_code=result.exit_code,
                       duration=result.duration, timed_out=result.timed_out)
    return CoverageRun(run=run, istanbul=istanbul,
                       per_file=per_file.decode("utf-8", errors="replace"),
                       log_tail=(result.stdout + result.stderr)[-300:].strip())


def coverage_command(runner: Runner, command: str, scratch: str, *, together: bool = False,
                     runner_env: Mapping[str, str] | None = None) -> str:
    """The runner's command line (as :meth:`Runner.command` builds it) with coverage on,
    written as istanbul JSON into ``<scratch>/coverage``; ``together`` (jest): each test
    file's coverage apart too, by ``rg-jest-coverage.cjs`` from ``scratch``.
    ``runner_env`` (:meth:`Runner.env`) is set for the runner's process only, through
    ``env``: c8 must not load a reporter the runner preloads (the reporter takes the run's
    settings file as it loads, and the runner would find none)."""
    argv = shlex.split(command)
    out = f"{scratch}/{OUT}"
    if runner.name == "jest":
        extra = [f"--reporters={scratch}/{JEST_PER_FILE}"] if together else []
        argv = _with_options(argv, 1, "--coverage=false", [
            "--coverage=true", "--coverageProvider=v8", "--coverageReporters=json",
            f"--coverageDirectory={out}", *extra])
    elif runner.name == "vitest":
        argv = _with_options(argv, 2 if argv[1:2] == ["run"] else 1, "--coverage.enabled=false", [
            "--coverage.enabled=true", "--coverage.provider=v8", "--coverage.reporter=json",
            f"--coverage.reportsDirectory={out}", "--coverage.reportOnFailure=true",
            "--coverage.thresholds.autoUpdate=false"])
    if runner_env:
        argv = ["env", *(f"{k}={v}" for k, v in sorted(runner_env.items())), *argv]
    if runner.name in ("jest", "vitest"):
        return shlex.join(argv)
    return shlex.join(["c8", "--reporter=json", f"--report-dir={out}",
                       f"--temp-directory={out}/v8", "--all=false", "--clean=true", *argv])


def _with_options(argv: list[str], at: int, drop: str, options: list[str]) -> list[str]:
    """``argv`` less the word ``drop``, with ``options`` inserted at index ``at``."""
    kept = [word for word in argv if word != drop]
    return [*kept[:at], *options, *kept[at:]]


# ---------------------------------------------------------------------------------------
# istanbul JSON


def istanbul_statements(report: Any) -> dict[str, list[Statement]]:
    """istanbul's ``coverage-final.json`` -> file -> its statements."""
    if not isinstance(report, dict):
        raise ValueError("not an istanbul coverage map")
    out: dict[str, list[Statement]] = {}
    for key, entry in report.items():
        if not isinstance(entry, dict):
            continue
        where, counts = entry.get("statementMap") or {}, entry.get("s") or {}
        rows = []
        for sid, span in where.items():
            try:
                rows.append(_triple([span["start"]["line"], span["end"]["line"],
                                     counts.get(sid, 0)]))
            except (KeyError, TypeError, ValueError):
                continue
        out[str(entry.get("path") or key)] = rows
    return out


def executed_lines(statements: Mapping[str, Iterable[Statement]],
                   root: str) -> dict[str, set[int]]:
    """File -> statements (paths as the runner wrote them) -> repo-relative file -> the
    lines that ran, for the project's own files (not tests, runner files, declarations or
    dependencies)."""
    out: dict[str, set[int]] = {}
    for path, rows in statements.items():
        rel = _relative(path, root)
        if rel is None or not _measured_source(rel):
            continue
        if lines := statement_lines(rows):
            out.setdefault(rel, set()).update(lines)
    return out


def statement_lines(statements: Iterable[Statement]) -> set[int]:
    """The lines that ran: the first line of each statement that ran, and its other lines
    unless a statement that did not run covers them too (a branch not taken inside it)."""
    starts: set[int] = set()
    ran_span: set[int] = set()
    idle_span: set[int] = set()
    for first, last, count in statements:
        span = set(range(first, max(first, last) + 1))
        if count > 0:
            starts.add(first)
            ran_span |= span
        else:
            idle_span |= span
    return starts | (ran_span - idle_span)


def _triple(row: Any) -> Statement:
    """``[first, last, count]`` as a statement (a count that is no number: 0).

    Raises:
        ValueError: not such a row.
    """
    first, last, count = row
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (first, last)):
        raise ValueError(f"not a statement: {row!r}")
    return first, last, count if isinstance(count, int) and not isinstance(count, bool) else 0


def _relative(path: str, root: str) -> str | None:
    """``path`` relative to the repository (None: outside it, or through a dependency)."""
    p = PurePosixPath(path.removeprefix("file://"))
    if p.is_absolute():
        try:
            p = p.relative_to(root)
        except ValueError:
            return None
    if ".." in p.parts or not p.parts:
        return None
    return p.as_posix()


def _measured_source(path: str) -> bool:
    """A file of the project whose lines the map records: not a test, runner file (setup,
    configuration, ``node_modules``) or declaration file."""
    return not (files.is_test_file(path) or files.is_runner_file(path)
                or files.is_declaration(path))


# ---------------------------------------------------------------------------------------
# around the runs


def _tool_missing(sandbox: Sandbox, runner: Runner) -> str | None:
    """Why the runner's coverage tool cannot run in this environment (None: it can)."""
    if runner.name == "jest":
        return None
    if runner.name == "vitest":
        check, what = f"test -e node_modules/{VITEST_V8}/package.json", VITEST_V8
    else:
        check, what = "command -v c8", "c8"
    if sandbox.exec(check, timeout=30).ok:
        return None
    return f"{what} is not installed in the environment"


def _every_test(toolchain: "JavaScriptToolchain", sandbox: Sandbox,
                timeout: float) -> list[str]:
    """The tests a plain run reports (for a map of every test)."""
    run = toolchain.run_tests(sandbox, timeout=timeout, check_runner=False)
    return [t for t, r in run.results.items() if r.outcome is not Outcome.skipped]


def _build(sandbox: Sandbox, project: Project, timeout: float) -> bool:
    """The project's build before the tests (once, not per file); False when it failed."""
    build = project.build_script()
    if not build:
        return True
    result = sandbox.exec(f"npm run --silent {shlex.quote(build)}", timeout=timeout,
                          env=dict(RUN_ENV))
    if not result.ok:
        log.warning("no JavaScript coverage: the build (npm run %s) failed: %s", build,
                    (result.stdout + result.stderr)[-300:].strip())
    return result.ok


__all__ = ["CoverageRun", "FileCoverage", "coverage_command", "coverage_map",
           "coverage_tools_steps", "executed_lines", "group_by_file", "istanbul_statements",
           "measure_all", "measure_file", "measure_together", "merge", "per_file_statements",
           "statement_lines"]
