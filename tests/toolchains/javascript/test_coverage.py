"""Per-test-file coverage of JavaScript/TypeScript projects: the istanbul reading, the
command lines, the install steps; and real maps of real repositories (jest with ts-jest,
vitest, mocha with c8) in Docker sandboxes."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from repogym.schemas.records import CoverageMap, TestRun
from repogym.toolchains.javascript import JavaScriptToolchain
from repogym.toolchains.javascript.coverage import (
    FileCoverage,
    coverage_command,
    coverage_tools_steps,
    executed_lines,
    group_by_file,
    merge,
    statement_lines,
)
from repogym.toolchains.javascript.project import Project
from repogym.toolchains.javascript.runners import Invocation, runner_for

REPOS = Path("/work/shared/repos")


def _stmt(first: int, last: int | None = None) -> dict:
    return {"start": {"line": first, "column": 0}, "end": {"line": last or first, "column": 9}}


# ---------------------------------------------------------------------------------------
# istanbul JSON


def test_statement_lines_single_line_statements_as_v8_writes_them():
    statements = {"0": _stmt(1), "1": _stmt(2), "2": _stmt(3)}
    assert statement_lines(statements, {"0": 1, "1": 0, "2": 7}) == {1, 3}


def test_statement_lines_drop_a_branch_not_taken_inside_a_statement_that_ran():
    # if (x) {          <- 1..3 ran
    #   return y;       <- 2 did not
    # }
    # throw new Error(  <- 4..6 ran: every line of it counts
    #   'message',
    # );
    statements = {"0": _stmt(1, 3), "1": _stmt(2), "2": _stmt(4, 6)}
    assert statement_lines(statements, {"0": 1, "1": 0, "2": 1}) == {1, 3, 4, 5, 6}


def test_statement_lines_keep_a_line_where_a_statement_that_ran_starts():
    # `if (x) return y;` on one line, the return not taken: the line still ran
    statements = {"0": _stmt(5), "1": _stmt(5)}
    assert statement_lines(statements, {"0": 2, "1": 0}) == {5}


def test_statement_lines_ignore_malformed_entries():
    statements = {"0": _stmt(1), "1": {"start": {}}, "2": "x"}
    assert statement_lines(statements, {"0": 1, "1": 1, "2": 1}) == {1}
    assert statement_lines({"0": _stmt(4)}, {"0": True}) == set()  # a bool is no count


def test_executed_lines_keep_the_projects_own_files_relative_to_the_repo():
    def entry(path: str) -> dict:
        return {"path": path, "statementMap": {"0": _stmt(2), "1": _stmt(3)},
                "s": {"0": 1, "1": 0}}

    report = {p: entry(p) for p in (
        "/repo/src/index.ts", "/repo/lib/util.js", "/repo/src/index.test.ts",
        "/repo/test/helpers.js", "/repo/node_modules/dep/index.js",
        "/opt/deps/node_modules/dep/index.js", "/repo/jest.setup.ts", "/repo/types.d.ts",
        "/elsewhere/x.js")}
    report["/repo/empty.js"] = {"path": "/repo/empty.js", "statementMap": {"0": _stmt(1)},
                                "s": {"0": 0}}
    assert executed_lines(report, "/repo") == {"src/index.ts": {2}, "lib/util.js": {2}}


def test_executed_lines_reject_what_is_not_a_coverage_map():
    with pytest.raises(ValueError):
        executed_lines(["not", "a", "map"], "/repo")


# ---------------------------------------------------------------------------------------
# the map


def test_group_by_file_and_merge():
    ids = ["src/b.test.ts > b > one", "src/a.test.ts > a", "src/b.test.ts > b > two",
           "src/a.test.ts > a"]
    assert group_by_file(ids) == {"src/a.test.ts": ("src/a.test.ts > a",),
                                  "src/b.test.ts": ("src/b.test.ts > b > one",
                                                    "src/b.test.ts > b > two")}
    cov = merge([
        FileCoverage("src/a.test.ts", ("src/a.test.ts > a",), {"src/x.ts": {1, 2}}),
        FileCoverage("src/b.test.ts", ("src/b.test.ts > b > one", "src/b.test.ts > b > two"),
                     {"src/x.ts": {2, 9}, "src/y.ts": {4}}),
    ])
    assert cov.files == {
        "src/x.ts": {1: ("src/a.test.ts > a",),
                     2: ("src/a.test.ts > a", "src/b.test.ts > b > one",
                         "src/b.test.ts > b > two"),
                     9: ("src/b.test.ts > b > one", "src/b.test.ts > b > two")},
        "src/y.ts": {4: ("src/b.test.ts > b > one", "src/b.test.ts > b > two")}}
    assert cov.import_lines == {}
    assert cov.tests_for({"src/x.ts": [1]}) == {"src/a.test.ts > a"}
    assert cov.tests_for({"src/x.ts": [50]}) == set()


# ---------------------------------------------------------------------------------------
# command lines and install steps


def _command(runner: str, project_args: tuple[str, ...] = ()) -> list[str]:
    inv = Invocation(scratch="/tmp/s", project_args=project_args,
                     select=["src/a.test.ts > suite > one"])
    r = runner_for(runner)
    return shlex.split(coverage_command(r, r.command(inv), "/tmp/s/coverage"))


def test_jest_command_turns_v8_coverage_on_and_keeps_the_judged_command():
    argv = _command("jest", ("--env", "node"))
    assert argv[0] == "node_modules/.bin/jest" and "--coverage=false" not in argv
    assert {"--coverage=true", "--coverageProvider=v8", "--coverageReporters=json",
            "--coverageDirectory=/tmp/s/coverage", "--env", "node",
            "--reporters=/tmp/s/rg-jest.cjs"} <= set(argv)
    assert argv[-2:] == ["--runTestsByPath", "src/a.test.ts"]


def test_vitest_command_turns_v8_coverage_on_after_run():
    argv = _command("vitest")
    assert argv[:2] == ["node_modules/.bin/vitest", "run"]
    assert "--coverage.enabled=false" not in argv
    assert {"--coverage.enabled=true", "--coverage.provider=v8", "--coverage.reporter=json",
            "--coverage.reportsDirectory=/tmp/s/coverage",
            "--coverage.reportOnFailure=true"} <= set(argv)
    assert argv[-1] == "src/a.test.ts"


def test_mocha_command_runs_under_c8_writing_into_the_scratch_dir():
    argv = _command("mocha", ("test/test.js",))
    at = argv.index("node_modules/.bin/mocha")
    assert argv[0] == "c8" and {"--reporter=json", "--report-dir=/tmp/s/coverage",
                                "--temp-directory=/tmp/s/coverage/v8"} <= set(argv[:at])
    assert argv[-1] == "src/a.test.ts"


def _project(tmp_path: Path, data: dict, lock: str | None = None) -> Project:
    if lock:
        (tmp_path / lock).write_text("")
    return Project(tmp_path, data)


def test_tools_steps_per_runner(tmp_path):
    jest = _project(tmp_path, {"scripts": {"test": "jest"}, "devDependencies": {"jest": "1"}})
    assert coverage_tools_steps(jest) == []
    vitest_ready = _project(tmp_path, {"scripts": {"test": "vitest"}, "devDependencies": {
        "vitest": "3", "@vitest/coverage-v8": "3"}})
    assert coverage_tools_steps(vitest_ready) == []
    mocha = _project(tmp_path, {"scripts": {"test": "mocha"}})
    (step,) = coverage_tools_steps(mocha)
    assert step.startswith("npm install -g --prefix /opt/venv c8@10.") and "||" in step
    assert coverage_tools_steps(_project(tmp_path, {"scripts": {"test": "echo"}})) == []


def test_vitest_step_adds_coverage_v8_at_vitests_version_and_keeps_the_manifests(tmp_path):
    npm = _project(tmp_path, {"scripts": {"test": "vitest run"},
                              "devDependencies": {"vitest": "3"}})
    (step,) = coverage_tools_steps(npm)
    assert 'npm install --no-save "@vitest/coverage-v8@$v"' in step
    assert "node_modules/vitest/package.json" in step and "package.json" in step
    pnpm_root = tmp_path / "pnpm"
    pnpm_root.mkdir()
    pnpm = _project(pnpm_root, {"scripts": {"test": "vitest"}, "devDependencies": {
        "vitest": "3"}}, lock="pnpm-lock.yaml")
    (step,) = coverage_tools_steps(pnpm)
    assert "pnpm add --save-dev" in step and "--workspace-root" in step


def test_vitest_step_restores_the_manifests_in_a_shell(tmp_path):
    """The step, run with a fake package manager and node: package.json and the lock file
    come back as they were, a lock file the add created goes, the add sees the version."""
    project = _project(tmp_path, {"scripts": {"test": "vitest"},
                                  "devDependencies": {"vitest": "3"}})
    (step,) = coverage_tools_steps(project)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").write_text("#!/bin/sh\necho 3.2.7\n")
    (bin_dir / "npm").write_text('#!/bin/sh\necho "$@" > added\necho changed > package.json\n'
                                 "echo new > package-lock.json\n")
    for tool in ("node", "npm"):
        (bin_dir / tool).chmod(0o755)
    (tmp_path / "package.json").write_text("original\n")
    (tmp_path / "node_modules" / "vitest").mkdir(parents=True)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    subprocess.run(["bash", "-ec", step], cwd=tmp_path, env=env, check=True)
    assert (tmp_path / "added").read_text().split() == [
        "install", "--no-save", "@vitest/coverage-v8@3.2.7"]
    assert (tmp_path / "package.json").read_text() == "original\n"
    assert not (tmp_path / "package-lock.json").exists()


# ---------------------------------------------------------------------------------------
# real repositories, in Docker


@dataclass
class Measured:
    repo: Path
    toolchain: JavaScriptToolchain
    baseline: TestRun
    cov: CoverageMap

    def line_of(self, path: str, text: str) -> int:
        lines = (self.repo / path).read_text().splitlines()
        return next(i for i, line in enumerate(lines, 1) if text in line)

    def files_covering(self, path: str, text: str) -> set[str]:
        tests = self.cov.files.get(path, {}).get(self.line_of(path, text), ())
        return {self.toolchain.test_file(t) for t in tests}


def _measure(name: str, tmp: Path, base_image: str) -> Iterator[Measured]:
    from repogym.config import Settings
    from repogym.pipeline import build_env, prepare, provider_for
    from repogym.schemas.records import RepoSpec

    if not (REPOS / f"{name}.bundle").is_file():
        pytest.skip(f"no bundle {name}")
    src = tmp / name
    subprocess.run(["git", "clone", "-q", str(REPOS / f"{name}.bundle"), str(src)], check=True)
    settings = Settings(out=tmp / "out", provider="docker", base_image=base_image)
    prepared = prepare(RepoSpec(source=str(src)), settings)
    toolchain = prepared.toolchain
    assert isinstance(toolchain, JavaScriptToolchain)
    provider = provider_for(settings)
    env = build_env(provider, prepared, settings)
    with provider.open(env) as sandbox:
        baseline = toolchain.run_tests(sandbox, timeout=300)
        assert baseline.trusted, baseline.log_tail
        sandbox.reset()
        passing = sorted(t for t, r in baseline.results.items() if r.outcome.ok)
        cov = toolchain.coverage(sandbox, timeout=600, select=passing)
    assert cov is not None
    yield Measured(prepared.checkout.path, toolchain, baseline, cov)


def _common_facts(m: Measured) -> None:
    assert m.cov.files
    assert not [p for p in m.cov.files if m.toolchain.is_test_file(p)]
    in_map = {t for lines in m.cov.files.values() for tests in lines.values() for t in tests}
    assert in_map and in_map <= set(m.baseline.results)


@pytest.fixture(scope="module")
def ms(tmp_path_factory, base_image) -> Iterator[Measured]:
    yield from _measure("vercel+ms", tmp_path_factory.mktemp("ms"), base_image)


@pytest.fixture(scope="module")
def path_to_regexp(tmp_path_factory, base_image) -> Iterator[Measured]:
    yield from _measure("pillarjs+path-to-regexp", tmp_path_factory.mktemp("ptr"), base_image)


@pytest.fixture(scope="module")
def mime_types(tmp_path_factory, base_image) -> Iterator[Measured]:
    yield from _measure("jshttp+mime-types", tmp_path_factory.mktemp("mime"), base_image)


@pytest.mark.docker
@pytest.mark.slow
def test_jest_ts_jest_maps_typescript_lines_to_the_test_files_that_run_them(ms):
    _common_facts(ms)
    assert set(ms.cov.files) == {"src/index.ts"}
    # inside parse(): the parse tests run it; the format tests never call parse
    assert "src/parse.test.ts" in ms.files_covering("src/index.ts",
                                                    "const n = parseFloat(value);")
    assert "src/format.test.ts" not in ms.files_covering("src/index.ts",
                                                         "const n = parseFloat(value);")
    # inside format(): the other way round
    short = ms.files_covering("src/index.ts", "return options?.long ? fmtLong(ms)")
    assert "src/format.test.ts" in short and "src/parse.test.ts" not in short
    # a line maps to every test of each file that runs it
    parse_tests = {t for t in ms.baseline.results if t.startswith("src/parse.test.ts > ")
                   and ms.baseline.results[t].outcome.ok}
    line = ms.line_of("src/index.ts", "const n = parseFloat(value);")
    assert set(ms.cov.files["src/index.ts"][line]) >= parse_tests


@pytest.mark.docker
@pytest.mark.slow
def test_vitest_maps_typescript_lines_to_the_spec_files_that_run_them(path_to_regexp):
    m = path_to_regexp
    _common_facts(m)
    assert "src/cases.spec.ts" not in m.cov.files  # test data a spec imports is no source
    compile_body = "const fn = tokensToFunction(data.tokens, delimiter, encode);"
    assert m.files_covering("src/index.ts", compile_body) == {"src/index.spec.ts"}
    assert m.files_covering("src/index.ts", "let combinations = 0;") == {
        "src/index.spec.ts", "src/redos.spec.ts"}  # pathToRegexp(): both call it


@pytest.mark.docker
@pytest.mark.slow
def test_mocha_under_c8_maps_lines_to_the_test_file(mime_types):
    m = mime_types
    _common_facts(m)
    assert m.files_covering("index.js", "var extension = extname('x.' + path)") == {
        "test/test.js"}
    lookup = m.cov.files["index.js"][m.line_of("index.js", "var extension = extname(")]
    assert len(lookup) == len(m.baseline.passing())
