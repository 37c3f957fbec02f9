"""Per-test-file line coverage of JavaScript and TypeScript runs.

The map says which tests execute which lines of the project's code
(:class:`~repogym.schemas.records.CoverageMap`): generators mutate only lines some stable
passing test executes, and the judge runs only the tests that execute a changed line.

Granularity is the test *file*. Each test file of the selection runs alone, with coverage
on, through the same command line a judged run uses (the runner's own binary, repogym's
reporter, the project's runner arguments, the selected tests' name pattern; see
:mod:`~repogym.toolchains.javascript.runners`); every line that run executes maps to every
selected test of the file that ran in it. No runner reports coverage per test, and a test
file's tests share its module-level code and hooks, so a finer map would be guesswork.

Lines run at import belong to the tests of each file that imports them: a change there can
reach exactly those tests, so :attr:`CoverageMap.import_lines` stays empty.

Measuring, per runner, each writing istanbul JSON (``coverage-final.json``) from V8's own
coverage (no instrumentation, so the code runs as the judge runs it):

* jest: ``--coverage --coverageProvider=v8`` (built into jest; source-mapped through the
  project's transformer, ts-jest or babel, to the original lines);
* vitest: ``--coverage.provider=v8``, which needs ``@vitest/coverage-v8`` of the same
  version as vitest: :func:`coverage_tools_steps` installs it at environment build when the
  project lacks it;
* mocha (and any other runner): ``c8`` around the runner's command (``NODE_V8_COVERAGE``;
  source maps that the loaded code carries, such as ts-node's or tsx's, are honoured), which
  :func:`coverage_tools_steps` installs into the environment's ``bin``.

A statement's lines count when it ran; with V8 coverage every statement is one line and a
branch not taken is a range of its own with no count.

Limits:

* one runner start per test file: the cost is the runner's start-up times the number of
  files (a second or two each for jest with ts-jest, and for vitest);
* a file whose run fails, dies, times out or writes no coverage contributes nothing (it is
  logged); the lines only it executes are then absent from the map, so generators leave
  them alone and the judge finds no test for them. None only when no file was measured;
* the project's build (a ``pretest`` that builds) runs once before the file runs. Tests
  that read built output are attributed lines of the sources only when the build writes
  source maps; otherwise they show as lines of the built files (``dist/``...), which are
  kept in the map but are never mutated;
* the project's own coverage settings still apply (jest's ``collectCoverageFrom``,
  vitest's ``coverage.include``/``exclude``, ``.c8rc``): what they exclude is not measured.
  Coverage thresholds may fail a run's exit code; the exit code is not read here.
"""

from __future__ import annotations

import json
import logging
import secrets
import shlex
import time
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from repogym.errors import NoTestsError, SandboxError
from repogym.layout import VENV
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import CoverageMap, Outcome
from repogym.toolchains.javascript import files
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
    return [f"npm install -g --prefix {VENV} c8@{C8_VERSION} || "
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
    measured: list[FileCoverage] = []
    for test_file, tests in by_file.items():
        left = deadline - time.monotonic()
        if left < MIN_FILE_SECONDS:
            log.warning("coverage: out of time, %d test file(s) not measured",
                        len(by_file) - len(measured))
            break
        try:
            got = measure_file(sandbox, project, runner, test_file, tests,
                               timeout=min(left, timeout / FILE_SHARE))
        except SandboxError as exc:  # lost, and a reset could not bring it back
            log.warning("coverage: the sandbox broke, measuring stopped: %s", exc)
            break
        if got is not None:
            measured.append(got)
    if not measured:
        return None
    return merge(measured)


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
# one test file


def measure_file(sandbox: Sandbox, project: Project, runner: Runner, test_file: str,
                 tests: Sequence[str], *, timeout: float) -> FileCoverage | None:
    """Run ``tests`` (all of ``test_file``) with coverage on: the lines they executed, or
    None when the run is unusable (logged).

    Raises:
        SandboxError: the sandbox broke and could not be reset.
    """
    from repogym.toolchains.javascript import RUN_ENV

    scratch = sandbox.scratch_path()
    report, nonce, config = _place_reporter(sandbox, runner, scratch)
    out = f"{scratch}/coverage"
    inv = Invocation(scratch=scratch, project_args=tuple(project.runner_args(runner.name)),
                     select=tests)
    cmd = coverage_command(runner, runner.command(inv), out)
    result, lost = exec_or_lost(sandbox, cmd, timeout=timeout,
                                env={**RUN_ENV, "REPOGYM_JS_CONFIG": config})
    if lost:
        log.warning("coverage of %s: %s", test_file, lost)
        sandbox.reset()
        return None
    raw = read_or_empty(sandbox, report).decode("utf-8", errors="replace")
    istanbul = read_or_empty(sandbox, f"{out}/coverage-final.json")
    sandbox.exec(["rm", "-rf", scratch], timeout=30)
    run = parse_report(raw, nonce=nonce, exit_code=result.exit_code,
                       duration=result.duration, timed_out=result.timed_out)
    ran = tuple(t for t in tests if t in run.results
                and run.results[t].outcome is not Outcome.skipped)
    why = ("timed out" if result.timed_out else "no report" if not run.finished
           else "no coverage written" if not istanbul else "none of its tests ran"
           if not ran else "")
    if why:
        tail = (result.stdout + result.stderr)[-300:].strip()
        log.warning("coverage of %s: %s (exit %d): %s", test_file, why, result.exit_code,
                    tail)
        return None
    try:
        lines = executed_lines(json.loads(istanbul), sandbox.repo_dir)
    except ValueError as exc:
        log.warning("coverage of %s: unreadable coverage report: %s", test_file, exc)
        return None
    return FileCoverage(test_file=test_file, tests=ran, lines=lines)


def coverage_command(runner: Runner, command: str, out: str) -> str:
    """The runner's command line (as :meth:`Runner.command` builds it) with coverage on,
    written as istanbul JSON into the directory ``out``."""
    argv = shlex.split(command)
    if runner.name == "jest":
        return shlex.join(_with_options(argv, 1, "--coverage=false", [
            "--coverage=true", "--coverageProvider=v8", "--coverageReporters=json",
            f"--coverageDirectory={out}"]))
    if runner.name == "vitest":
        return shlex.join(_with_options(argv, 2 if argv[1:2] == ["run"] else 1,
                                        "--coverage.enabled=false", [
            "--coverage.enabled=true", "--coverage.provider=v8",
            "--coverage.reporter=json", f"--coverage.reportsDirectory={out}",
            "--coverage.reportOnFailure=true", "--coverage.thresholds.autoUpdate=false"]))
    return shlex.join(["c8", "--reporter=json", f"--report-dir={out}",
                       f"--temp-directory={out}/v8", "--all=false", "--clean=true", *argv])


def _with_options(argv: list[str], at: int, drop: str, options: list[str]) -> list[str]:
    """``argv`` less the word ``drop``, with ``options`` inserted at index ``at``."""
    kept = [word for word in argv if word != drop]
    return [*kept[:at], *options, *kept[at:]]


def _place_reporter(sandbox: Sandbox, runner: Runner, scratch: str) -> tuple[str, str, str]:
    """Write the runner's reporter and the run's settings (as a judged run does): the
    report's path, the nonce, the settings file's path."""
    from repogym.toolchains.javascript import reporter_source

    report = f"{scratch}/r-{secrets.token_hex(8)}.jsonl"
    nonce = secrets.token_hex(16)
    config = f"{scratch}/c-{secrets.token_hex(8)}.json"
    for reporter in ("rg-common.cjs", runner.reporter):
        sandbox.write_file(f"{scratch}/{reporter}", reporter_source(reporter))
    sandbox.write_file(config, json.dumps({"report": report, "nonce": nonce,
                                           "root": sandbox.repo_dir}))
    return report, nonce, config


# ---------------------------------------------------------------------------------------
# istanbul JSON


def executed_lines(report: Any, root: str) -> dict[str, set[int]]:
    """istanbul's ``coverage-final.json`` -> repo-relative file -> the lines that ran, for
    the project's own files (not tests, runner files, declarations or dependencies)."""
    out: dict[str, set[int]] = {}
    if not isinstance(report, dict):
        raise ValueError("not an istanbul coverage map")
    for key, entry in report.items():
        if not isinstance(entry, dict):
            continue
        path = _relative(str(entry.get("path") or key), root)
        if path is None or not _measured_source(path):
            continue
        lines = statement_lines(entry.get("statementMap") or {}, entry.get("s") or {})
        if lines:
            out.setdefault(path, set()).update(lines)
    return out


def statement_lines(statements: Mapping[str, Any], counts: Mapping[str, Any]) -> set[int]:
    """The lines that ran: the first line of each statement that ran, and its other lines
    unless a statement that did not run covers them too (a branch not taken inside it)."""
    starts: set[int] = set()
    ran_span: set[int] = set()
    idle_span: set[int] = set()
    for key, where in statements.items():
        try:
            first, last = int(where["start"]["line"]), int(where["end"]["line"])
        except (KeyError, TypeError, ValueError):
            continue
        span = set(range(first, max(first, last) + 1))
        if _count(counts.get(key)) > 0:
            starts.add(first)
            ran_span |= span
        else:
            idle_span |= span
    return starts | (ran_span - idle_span)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


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
    run = toolchain.run_tests(sandbox, timeout=timeout)
    return [t for t, r in run.results.items() if r.outcome is not Outcome.skipped]


def _build(sandbox: Sandbox, project: Project, timeout: float) -> bool:
    """The project's build before the tests (once, not per file); False when it failed."""
    from repogym.toolchains.javascript import RUN_ENV

    build = project.build_script()
    if not build:
        return True
    result = sandbox.exec(f"npm run --silent {shlex.quote(build)}", timeout=timeout,
                          env=dict(RUN_ENV))
    if not result.ok:
        log.warning("no JavaScript coverage: the build (npm run %s) failed: %s", build,
                    (result.stdout + result.stderr)[-300:].strip())
    return result.ok


__all__ = ["FileCoverage", "coverage_command", "coverage_map", "coverage_tools_steps",
           "executed_lines", "merge", "statement_lines", "group_by_file"]
