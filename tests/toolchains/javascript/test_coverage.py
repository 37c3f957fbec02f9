"""Per-test-file coverage of JavaScript/TypeScript projects: the istanbul reading, the
command lines, the install steps; and real maps of real repositories (jest with ts-jest,
vitest, mocha with c8) in Docker sandboxes."""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import CoverageMap, TestRun
from repogym.toolchains.javascript import JavaScriptToolchain
from repogym.toolchains.javascript.coverage import (
    FileCoverage,
    coverage_command,
    coverage_tools_steps,
    executed_lines,
    group_by_file,
    istanbul_statements,
    measure_together,
    merge,
    per_file_statements,
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
    assert statement_lines([(1, 1, 1), (2, 2, 0), (3, 3, 7)]) == {1, 3}


def test_statement_lines_drop_a_branch_not_taken_inside_a_statement_that_ran():
    # if (x) {          <- 1..3 ran
    #   return y;       <- 2 did not
    # }
    # throw new Error(  <- 4..6 ran: every line of it counts
    #   'message',
    # );
    assert statement_lines([(1, 3, 1), (2, 2, 0), (4, 6, 1)]) == {1, 3, 4, 5, 6}


def test_statement_lines_keep_a_line_where_a_statement_that_ran_starts():
    # `if (x) return y;` on one line, the return not taken: the line still ran
    assert statement_lines([(5, 5, 2), (5, 5, 0)]) == {5}


def test_istanbul_statements_read_counts_and_skip_malformed_entries():
    report = {"/repo/a.ts": {"path": "/repo/a.ts",
                             "statementMap": {"0": _stmt(1), "1": {"start": {}}, "2": "x",
                                              "3": _stmt(4, 6), "4": _stmt(8)},
                             "s": {"0": 1, "1": 1, "2": 1, "3": True}},
              "/repo/b.ts": "not an entry"}
    assert istanbul_statements(report) == {"/repo/a.ts": [(1, 1, 1), (4, 6, 0), (8, 8, 0)]}
    with pytest.raises(ValueError):
        istanbul_statements(["not", "a", "map"])


def test_executed_lines_keep_the_projects_own_files_relative_to_the_repo():
    ran = [(2, 2, 1), (3, 3, 0)]
    statements = {p: ran for p in (
        "/repo/src/index.ts", "/repo/lib/util.js", "file:///repo/lib/url.mjs",
        "/repo/src/index.test.ts", "/repo/test/helpers.js", "/repo/node_modules/dep/index.js",
        "/opt/deps/node_modules/dep/index.js", "/repo/jest.setup.ts", "/repo/types.d.ts",
        "/elsewhere/x.js", "/repo/../etc/x.js")}
    statements["/repo/never.js"] = [(1, 1, 0)]
    assert executed_lines(statements, "/repo") == {
        "src/index.ts": {2}, "lib/util.js": {2}, "lib/url.mjs": {2}}


def test_per_file_statements_read_the_jest_reporters_lines():
    text = "\n".join([
        json.dumps({"file": "/repo/src/a.test.ts",
                    "statements": {"/repo/src/a.ts": [[1, 1, 1], [2, 3, 0]]}}),
        json.dumps({"file": "/elsewhere/b.test.ts", "statements": {}}),
        json.dumps({"file": "/repo/src/c.test.ts", "statements": {"/repo/c.ts": [["x"]]}}),
        '{"file": "/repo/src/d.test.ts", "statem',  # cut short when the run was killed
    ])
    assert list(per_file_statements(text, "/repo")) == [
        ("src/a.test.ts", {"/repo/src/a.ts": [(1, 1, 1), (2, 3, 0)]})]


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


def _command(runner: str, project_args: tuple[str, ...] = (), *,
             together: bool = False) -> list[str]:
    inv = Invocation(scratch="/tmp/s", project_args=project_args,
                     select=["src/a.test.ts > suite > one"])
    r = runner_for(runner)
    return shlex.split(coverage_command(r, r.command(inv), "/tmp/s", together=together))


def test_jest_command_turns_v8_coverage_on_and_keeps_the_judged_command():
    argv = _command("jest", ("--env", "node"))
    assert argv[0] == "node_modules/.bin/jest" and "--coverage=false" not in argv
    assert {"--coverage=true", "--coverageProvider=v8", "--coverageReporters=json",
            "--coverageDirectory=/tmp/s/coverage", "--env", "node",
            "--reporters=/tmp/s/rg-jest.cjs"} <= set(argv)
    assert argv[-2:] == ["--runTestsByPath", "src/a.test.ts"]
    assert "--reporters=/tmp/s/rg-jest-coverage.cjs" not in argv
    together = _command("jest", together=True)
    assert together.index("--reporters=/tmp/s/rg-jest-coverage.cjs") < together.index(
        "--runTestsByPath")
    assert "--reporters=/tmp/s/rg-jest.cjs" in together


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


def test_a_preloaded_reporter_goes_to_the_runner_not_to_c8():
    inv = Invocation(scratch="/tmp/s", select=["test/a.js > one"])
    uvu = runner_for("uvu")
    argv = shlex.split(coverage_command(uvu, uvu.command(inv), "/tmp/s",
                                        runner_env=uvu.env(inv)))
    at = argv.index("env")
    assert argv[0] == "c8" and "--report-dir=/tmp/s/coverage" in argv[:at]
    assert argv[at + 1] == "NODE_OPTIONS=--require /tmp/s/rg-uvu.cjs"
    assert argv[at + 2] == "node_modules/.bin/uvu"


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
    assert step.startswith('npm install -g --prefix "$VIRTUAL_ENV" c8@10.') and "||" in step
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
    """A real repository's sandbox (open for the module), its baseline, its map."""

    repo: Path
    toolchain: JavaScriptToolchain
    sandbox: Sandbox
    baseline: TestRun
    cov: CoverageMap

    @property
    def passing(self) -> list[str]:
        return sorted(t for t, r in self.baseline.results.items() if r.outcome.ok)

    def line_of(self, path: str, text: str) -> int:
        lines = (self.repo / path).read_text().splitlines()
        return next(i for i, line in enumerate(lines, 1) if text in line)

    def files_covering(self, path: str, text: str) -> set[str]:
        tests = self.cov.files.get(path, {}).get(self.line_of(path, text), ())
        return {self.toolchain.test_file(t) for t in tests}

    def common_facts(self) -> None:
        assert self.cov.files
        assert not [p for p in self.cov.files if self.toolchain.is_test_file(p)]
        in_map = {t for lines in self.cov.files.values() for tests in lines.values()
                  for t in tests}
        assert in_map and in_map <= set(self.baseline.results)


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
        yield Measured(prepared.checkout.path, toolchain, sandbox, baseline, cov)


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
    ms.common_facts()
    assert set(ms.cov.files) == {"src/index.ts"}
    # inside parse(): the parse tests run it; the format tests never call parse
    in_parse = ms.files_covering("src/index.ts", "const n = parseFloat(value);")
    assert "src/parse.test.ts" in in_parse and "src/format.test.ts" not in in_parse
    # inside format(): the other way round
    in_format = ms.files_covering("src/index.ts", "return options?.long ? fmtLong(ms)")
    assert "src/format.test.ts" in in_format and "src/parse.test.ts" not in in_format
    # a line maps to every test of each file that runs it
    parse_tests = {t for t in ms.passing if t.startswith("src/parse.test.ts > ")}
    line = ms.line_of("src/index.ts", "const n = parseFloat(value);")
    assert set(ms.cov.files["src/index.ts"][line]) >= parse_tests


@pytest.mark.docker
@pytest.mark.slow
def test_jest_one_run_gives_every_files_coverage_apart(ms):
    project = Project.read(ms.repo)
    assert project is not None
    by_file = group_by_file(ms.passing)
    together = measure_together(ms.sandbox, project, runner_for("jest"), by_file, timeout=120)
    assert set(together) == set(by_file) and len(by_file) == 4
    assert merge(together.values()) == ms.cov


@pytest.mark.docker
@pytest.mark.slow
def test_jest_files_the_one_run_did_not_give_are_run_alone_to_the_same_map(ms, caplog,
                                                                           monkeypatch):
    """The per-file reporter gives nothing (jest's internals not as it expects) and one
    selected file does not exist: each real file is run alone, which measures what the one
    run measured; the missing file is logged and left out."""
    import repogym.toolchains.javascript.placed as js

    real = js.reporter_source
    monkeypatch.setattr(js, "reporter_source", lambda name: (
        "module.exports = class { onTestResult() {} };\n" if name == "rg-jest-coverage.cjs"
        else real(name)))
    missing = "src/missing.test.ts > nothing"
    # two of the four files (each run alone costs a jest start): what the one run gave them
    chosen = [t for t in ms.passing if t.startswith(("src/parse.test.ts", "src/format.test.ts"))]
    with caplog.at_level(logging.WARNING):
        cov = ms.toolchain.coverage(ms.sandbox, timeout=300, select=[*chosen, missing])
    assert cov == restricted(ms.cov, set(chosen))
    assert "one jest run measured 0 of 3 test file(s)" in caplog.text
    assert "coverage of src/missing.test.ts: none of its tests ran" in caplog.text


def restricted(cov: CoverageMap, tests: set[str]) -> CoverageMap:
    """The map as a run of ``tests`` alone would give it (each line's tests among them)."""
    files = {path: {line: tuple(t for t in ran if t in tests) for line, ran in lines.items()
                    if any(t in tests for t in ran)} for path, lines in cov.files.items()}
    return CoverageMap(files={path: lines for path, lines in files.items() if lines})


@pytest.mark.docker
@pytest.mark.slow
def test_vitest_maps_typescript_lines_to_the_spec_files_that_run_them(path_to_regexp):
    m = path_to_regexp
    m.common_facts()
    assert "src/cases.spec.ts" not in m.cov.files  # test data a spec imports is no source
    compile_body = "const fn = tokensToFunction(data.tokens, delimiter, encode);"
    assert m.files_covering("src/index.ts", compile_body) == {"src/index.spec.ts"}
    assert m.files_covering("src/index.ts", "let combinations = 0;") == {
        "src/index.spec.ts", "src/redos.spec.ts"}  # pathToRegexp(): both call it


@pytest.mark.docker
@pytest.mark.slow
def test_mocha_under_c8_maps_lines_to_the_test_file(mime_types):
    m = mime_types
    m.common_facts()
    assert m.files_covering("index.js", "var extension = extname('x.' + path)") == {
        "test/test.js"}
    lookup = m.cov.files["index.js"][m.line_of("index.js", "var extension = extname(")]
    assert set(lookup) == set(m.passing)


@pytest.mark.docker
@pytest.mark.slow
def test_a_file_that_cannot_run_contributes_nothing_and_the_rest_stands(mime_types, caplog):
    m = mime_types
    missing = "test/missing.js > nothing > here"
    with caplog.at_level(logging.WARNING):
        cov = m.toolchain.coverage(m.sandbox, timeout=300, select=[*m.passing, missing])
    assert cov == m.cov
    assert "coverage of test/missing.js" in caplog.text
    assert m.toolchain.coverage(m.sandbox, timeout=300, select=[missing]) is None


@pytest.mark.docker
@pytest.mark.slow
def test_a_map_of_every_test_when_nothing_is_selected(mime_types):
    m = mime_types
    assert m.toolchain.coverage(m.sandbox, timeout=300) == m.cov
