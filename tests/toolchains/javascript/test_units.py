"""The JavaScript toolchain's pure parts: projects, file rules, reports, runner command lines,
failure messages and canaries -- on the real repositories' package.json and test files."""

from __future__ import annotations

import hashlib
import hmac
import json
import shlex
import subprocess
from pathlib import Path

import pytest

from repogym.errors import NoTestsError
from repogym.schemas.records import Outcome, TestResult, TestRun, TimeLimits
from repogym.toolchains import detect_toolchain
from repogym.toolchains.javascript import JavaScriptToolchain, install_steps
from repogym.toolchains.javascript.canary import plant
from repogym.toolchains.javascript.failures import read_failure
from repogym.toolchains.javascript.files import is_runner_file, is_test_file
from repogym.toolchains.javascript.project import Project
from repogym.toolchains.javascript.report import parse_report, split_id
from repogym.toolchains.javascript.report import test_id as make_id
from repogym.toolchains.javascript.runners import (
    Invocation,
    js_escape,
    name_pattern,
    runner_for,
    tap_major,
)

REPOS = Path(__file__).resolve().parents[4] / "shared" / "repos"
JS_REPOS = {"vercel+ms": ("jest", "pnpm"), "pillarjs+path-to-regexp": ("vitest", "npm"),
            "lukeed+dequal": ("uvu", "npm"), "lukeed+kleur": ("uvu", "npm"),
            "sindresorhus+camelcase": ("ava", "npm"), "jshttp+mime-types": ("mocha", "npm"),
            "isaacs+minimatch": ("tap", "npm")}


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("js-clones")
    out = {}
    for name in JS_REPOS:
        dest = root / name
        subprocess.run(["git", "clone", "-q", str(REPOS / f"{name}.bundle"), str(dest)],
                       check=True)
        out[name] = dest
    return out


# -- projects ------------------------------------------------------------------------------

def test_runner_and_package_manager_of_every_real_repository(clones: dict[str, Path]) -> None:
    for name, (runner, manager) in JS_REPOS.items():
        project = Project.read(clones[name])
        assert project is not None
        assert (project.runner(), project.package_manager().name) == (runner, manager), name


def test_what_the_test_script_gives_the_runner(clones: dict[str, Path]) -> None:
    ms = Project.read(clones["vercel+ms"])
    mime = Project.read(clones["jshttp+mime-types"])
    kleur = Project.read(clones["lukeed+kleur"])
    assert ms and mime and kleur
    assert ms.runner_args("jest") == ["--env", "node"]  # the first of its two jest runs
    assert mime.runner_args("mocha") == ["--reporter", "spec", "test/test.js"]
    assert kleur.runner_args("uvu") == ["-r", "esm", "-i", "utils", "-i", "xyz"]
    assert ms.package_manager().version == "10.14.0-0"


def test_a_pretest_build_is_run_only_when_it_builds(clones: dict[str, Path]) -> None:
    minimatch = Project.read(clones["isaacs+minimatch"])
    mime = Project.read(clones["jshttp+mime-types"])
    assert minimatch and mime
    assert minimatch.build_script() == "pretest"  # tshy builds dist/, which the tests import
    assert mime.build_script() is None
    lint_only = Project(Path("."), {"scripts": {"pretest": "eslint .", "test": "mocha"}})
    assert lint_only.build_script() is None


def test_install_recipes_follow_the_package_manager(clones: dict[str, Path]) -> None:
    ms = install_steps(Project.read(clones["vercel+ms"]))  # type: ignore[arg-type]
    minimatch = install_steps(Project.read(clones["isaacs+minimatch"]))  # type: ignore[arg-type]
    mime = install_steps(Project.read(clones["jshttp+mime-types"]))  # type: ignore[arg-type]
    assert ms[0] == "npm install -g --prefix \"$VIRTUAL_ENV\" pnpm@10.14.0-0"
    assert ms[1].startswith("pnpm install --frozen-lockfile")
    assert minimatch[0] == "npm ci || npm install"  # a package-lock.json
    assert mime[0] == "npm install"  # no lock file
    assert all(steps[-1].startswith("rm -rf ~/.npm") for steps in (ms, minimatch, mime))


def test_node_tap_before_18_is_refused_before_the_install(
        clones: dict[str, Path], tmp_path: Path) -> None:
    """node-tap 18 and newer run (isaacs/minimatch: tap 21); older ones (no runner that
    loads a reporter module) are refused by env_spec (prepare), not after a 2-minute
    install when the baseline first runs."""
    from repogym.schemas.records import Checkout, RepoSpec

    path = clones["isaacs+minimatch"]
    checkout = Checkout(spec=RepoSpec(source=str(path)), name="minimatch", path=path,
                        commit="0" * 40)
    assert JavaScriptToolchain().env_spec(checkout, "base").toolchain == "javascript"
    old = tmp_path / "old"
    old.mkdir()
    (old / "package.json").write_text(json.dumps({
        "name": "x", "scripts": {"test": "tap test/*.js"}, "devDependencies": {"tap": "^16.3.0"}}))
    (old / "test").mkdir()
    (old / "test" / "a.js").write_text("require('tap').pass('ok')\n")
    checkout = Checkout(spec=RepoSpec(source=str(old)), name="old", path=old, commit="0" * 40)
    with pytest.raises(NoTestsError, match="node-tap 16 runs here from version 18"):
        JavaScriptToolchain().env_spec(checkout, "base")
    assert tap_major("^21.7.5") == 21 and tap_major(">=18") == 18 and tap_major("*") is None


def test_node_tap_command_line() -> None:
    tap = runner_for("tap")
    assert tap.whole_files and not tap.tap and "rg-tap.mjs" in tap.files
    inv = Invocation(scratch="/s", project_args=("--reporter", "base", "-t", "5", "--bail"),
                     select=["test/a.js > one > deeper", "test/b.ts > two (x)"],
                     limits=TimeLimits(default=2.0, tests={"test/a.js > one": 45.0}, run=99.0),
                     exitfirst=True)
    argv = shlex.split(tap.command(inv))
    assert argv[0] == "node_modules/.bin/tap" and "base" not in argv and "5" not in argv
    assert "--reporter=/s/rg-tap.mjs" in argv and "--disable-coverage" in argv
    assert "--timeout=75" in argv  # the largest per-test limit and a margin, per file
    assert "--grep=^(?:one|two \\(x\\))$" in argv and argv.count("--bail") == 1
    assert argv[-2:] == ["test/a.js", "test/b.ts"]
    # a file's own assertions (a test named by its file alone) cannot be grepped for
    whole = shlex.split(tap.command(Invocation(scratch="/s", select=["test/a.js", "test/b.ts > x"])))
    assert not [a for a in whole if a.startswith("--grep")]
    assert "--timeout=90" in whole


def test_node_tap_canary_uses_the_files_module_style() -> None:
    esm = plant({"test/a.js": "import t from 'tap'\nimport { f } from '../dist/esm/index.js'\n"},
                "tap")
    cjs = plant({"test/b.js": "const t = require('tap')\nconst f = require('../')\n"}, "tap")
    (esm_file, esm_body), = esm.files.items()
    (cjs_file, cjs_body), = cjs.files.items()
    assert "import { t as __rgTap } from 'tap';" in esm_body and "import '../dist/esm/index.js';" in esm_body
    assert "const { t: __rgTap } = require('tap');" in cjs_body and "require('../')" in cjs_body
    assert len(esm.tests) == 5 and all(t.startswith(esm_file + " > ") for t in esm.tests)
    assert "t.equal(1, 2);" in esm_body and cjs_file.startswith("test/")
    assert not plant({"test/c.js": "import test from 'ava'\n"}, "tap").files


def test_a_project_without_a_known_runner_is_no_tests() -> None:
    tape = Project(Path("."), {"scripts": {"test": "tape test/*.js | tap-spec"}})
    with pytest.raises(NoTestsError, match="tape test"):
        tape.runner()


def test_detection_prefers_the_language_with_more_tests(tmp_path: Path) -> None:
    def repo(files: dict[str, str]) -> Path:
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        return root

    package = json.dumps({"scripts": {"test": "mocha"}, "devDependencies": {"mocha": "*"}})
    python_with_docs_site = repo({"package.json": package, "docs/site.test.js": "",
                                  "pyproject.toml": "", "tests/test_a.py": "",
                                  "tests/test_b.py": ""})
    node_with_a_script = repo({"package.json": package, "test/a.test.js": "",
                               "test/b.test.js": "", "scripts/tool.py": ""})
    assert detect_toolchain(python_with_docs_site).language == "python"
    assert detect_toolchain(node_with_a_script).language == "javascript"


# -- files ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["src/index.test.ts", "src/cases.spec.ts", "test.js",
                                  "test/index.js", "src/__tests__/a.jsx", "index.test-d.ts",
                                  "tap-snapshots/test/basic.js.test.cjs"])
def test_test_files(path: str) -> None:
    assert is_test_file(path)


@pytest.mark.parametrize("path", ["index.js", "src/index.ts", "lib/testing.js",
                                  "src/attest.js", "mimeScore.js"])
def test_runtime_files(path: str) -> None:
    assert not is_test_file(path) and not is_runner_file(path)


@pytest.mark.parametrize("path", ["package.json", "packages/a/package.json", "jest.config.ts",
                                  "vitest.config.mts", ".mocharc.json", "tsconfig.build.json",
                                  "babel.config.js", "src/setupTests.ts", ".npmrc",
                                  "node_modules/jest/index.js", "pnpm-lock.yaml"])
def test_runner_files_are_protected(path: str) -> None:
    tc = JavaScriptToolchain()
    assert is_runner_file(path) and tc.is_protected(path) and tc.is_protected(path, added=True)


def test_runtime_sources_leave_out_declarations_builds_and_config() -> None:
    tc = JavaScriptToolchain()
    assert tc.is_runtime_source("src/index.ts") and tc.is_runtime_source("index.mjs")
    for path in ("index.d.ts", "dist/index.js", "src/index.test.ts", "jest.config.js",
                 "bench/index.js", "README.md", "rollup.config.js"):
        assert not tc.is_runtime_source(path), path


# -- reports -------------------------------------------------------------------------------

NONCE = "n" * 32


def signed(*events: dict, nonce: str = NONCE, finish: dict | None = None) -> str:
    """A report as rg-common.cjs writes it: lines, then a finish line signing them."""
    body = "".join(json.dumps(e) + "\n" for e in events)
    mac = hmac.new(nonce.encode(), hashlib.sha256(body.encode()).hexdigest().encode(),
                   hashlib.sha256).hexdigest()
    return body + json.dumps({"event": "finish", **(finish or {}), "mac": mac}) + "\n"


def event(file: str, *titles: str, outcome: str = "passed", **kw: object) -> dict:
    return {"event": "test", "file": file, "titles": list(titles), "outcome": outcome, **kw}


def test_a_signed_report_is_read_and_trusted() -> None:
    raw = signed(event("test/a.js", "suite", "works", duration=0.5),
                 event("test/a.js", "suite", "breaks", outcome="failed", message="boom"),
                 event("test/a.js", "later", outcome="todo"),
                 finish={"passed": 1, "failed": 1})
    run = parse_report(raw, nonce=NONCE, exit_code=1, duration=2.0)
    assert run.trusted and run.finished
    assert run.outcome("test/a.js > suite > works") is Outcome.passed
    assert run.outcome("test/a.js > suite > breaks") is Outcome.failed
    assert run.outcome("test/a.js > later") is Outcome.skipped
    assert run.results["test/a.js > suite > breaks"].message == "boom"
    assert run.results["test/a.js > suite > works"].duration == 0.5


def test_a_report_with_a_wrong_mac_or_lines_after_its_finish_is_not_believed() -> None:
    good = signed(event("t.js", "x"), finish={"passed": 1})
    assert parse_report(good, nonce=NONCE, exit_code=0, duration=1).trusted
    other_key = parse_report(good, nonce="m" * 32, exit_code=0, duration=1)
    assert not other_key.finished and not other_key.trusted and other_key.problems
    forged_before = json.dumps(event("t.js", "y")) + "\n" + good
    assert not parse_report(forged_before, nonce=NONCE, exit_code=0, duration=1).trusted
    forged_after = good + json.dumps(event("t.js", "y")) + "\n"
    late = parse_report(forged_after, nonce=NONCE, exit_code=0, duration=1)
    assert not late.trusted and "report lines after its finish line" in late.problems


def test_exit_code_and_counts_must_agree_with_the_report() -> None:
    failing = signed(event("t.js", "x", outcome="failed"), finish={"failed": 1})
    assert not parse_report(failing, nonce=NONCE, exit_code=0, duration=1).trusted
    passing = signed(event("t.js", "x"), finish={"passed": 1})
    assert not parse_report(passing, nonce=NONCE, exit_code=1, duration=1).trusted
    miscounted = signed(event("t.js", "x"), finish={"passed": 2})
    assert not parse_report(miscounted, nonce=NONCE, exit_code=0, duration=1).trusted
    # uvu 0.3 exits 0 after a failing hook: its recorder says the exit code proves nothing
    lenient = signed(event("t.js", "x", outcome="failed"),
                     finish={"failed": 1, "exit_code_checked": False})
    assert parse_report(lenient, nonce=NONCE, exit_code=0, duration=1).trusted


def test_a_run_that_died_names_the_test_it_was_in() -> None:
    raw = (json.dumps(event("t.js", "first")) + "\n"
           + json.dumps({"event": "begin", "id": "t.js > second"}) + "\n")
    run = parse_report(raw, nonce=NONCE, exit_code=-9, duration=5)
    assert not run.finished and run.died_in == "t.js > second"
    assert run.outcome("t.js > second") is Outcome.error  # resume blames it by its result


def test_repeated_names_get_a_counter_and_ids_split_back() -> None:
    raw = signed(event("t.js", "a > b", "same"), event("t.js", "a > b", "same"),
                 finish={"passed": 2})
    run = parse_report(raw, nonce=NONCE, exit_code=0, duration=1)
    assert sorted(run.results) == ["t.js > a > b > same", "t.js > a > b > same [2]"]
    assert split_id("t.js > suite > same [2]") == ("t.js", ["suite", "same"])
    assert make_id("t.js", ["a", "multi\nline"]) == "t.js > a > multi line"


# -- runner command lines ------------------------------------------------------------------

def test_name_patterns_match_exactly_the_selected_full_names() -> None:
    import re

    pattern = name_pattern(["t.js > s > a (b)", "t.js > s > c.d"], ["t.js > s > e"])
    assert pattern is not None
    compiled = re.compile(pattern)
    assert compiled.search("s a (b)") and compiled.search("s c.d")
    assert not compiled.search("s e") and not compiled.search("s a (b) and more")
    assert not compiled.search("s cxd")  # the dot is literal
    assert name_pattern(None, []) is None
    assert js_escape("a/b-c") == "a\\/b\\-c"


def test_jest_mocha_vitest_and_uvu_command_lines() -> None:
    limits = TimeLimits(tests={"a.test.ts > x": 3.0}, default=2.0, run=30.0)
    inv = Invocation(scratch="/s", project_args=("--env", "node", "--coverage"),
                     select=["src/a.test.ts > x"], limits=limits, exitfirst=True)
    jest = shlex.split(runner_for("jest").command(inv))
    assert jest[0] == "node_modules/.bin/jest" and "--coverage" not in jest
    assert ["--env", "node"] == jest[1:3] and "--reporters=/s/rg-jest.cjs" in jest
    assert "--testTimeout=3000" in jest and "--bail=1" in jest
    assert jest[-2:] == ["--runTestsByPath", "src/a.test.ts"]
    mocha = shlex.split(runner_for("mocha").command(
        Invocation(scratch="/s", project_args=("--reporter", "spec", "test/test.js"))))
    assert mocha[:3] == ["node_modules/.bin/mocha", "--reporter", "/s/rg-mocha.cjs"]
    assert "spec" not in mocha and mocha[-1] == "test/test.js"
    vitest = shlex.split(runner_for("vitest").command(inv))
    assert vitest[1] == "run" and "--reporter=/s/rg-vitest.mjs" in vitest
    uvu = runner_for("uvu")
    assert uvu.env(Invocation(scratch="/s")) == {"NODE_OPTIONS": "--require /s/rg-uvu.cjs"}
    assert "rg-uvu-esm.mjs" in uvu.files
    with pytest.raises(NoTestsError, match="not supported yet"):
        runner_for("karma")


# -- failure messages ----------------------------------------------------------------------

JEST = """expect(received).toBe(expected) // Object.is equality

Expected: 60000
Received: 61000

      14 |
      15 |   it('should convert from m to ms', () => {
    > 16 |     expect(ms('1m')).toBe(60000);
         |                      ^
"""
NODE = """AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:
+ actual - expected

+ 'application/mp4'
- 'video/mp4'
    at Context.<anonymous> (test/test.js:3:14)"""
NODE_INLINE = "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n1 !== 2\n"
UVU = """Assertion: Expected values to be strictly equal:  (is)
    ++true     (Expected)
    --false    (Actual)
"""


def test_failure_messages_say_what_was_got_and_what_was_expected() -> None:
    sources = {"src/index.test.ts": "\n" * 15 + "    expect(ms('1m')).toBe(60000);\n",
               "test/test.js": "x\ny\n  assert.strictEqual(mimeTypes.lookup('.mp4'), 'video/mp4')\n"}
    jest = read_failure(JEST, "src/index.test.ts", sources)
    assert jest and (jest.call, jest.actual, jest.expected) == ("ms('1m')", "61000", "60000")
    node = read_failure(NODE, "test/test.js", sources)
    assert node and (node.call, node.actual, node.expected) == (
        "mimeTypes.lookup('.mp4')", "'application/mp4'", "'video/mp4'")
    inline = read_failure(NODE_INLINE, "x.js", {})
    assert inline and (inline.actual, inline.expected) == ("1", "2")
    uvu = read_failure(UVU.replace("++true     (Expected)\n    --false    (Actual)",
                                   "++false    (Actual)\n    --true     (Expected)"), "x.js", {})
    assert uvu and (uvu.actual, uvu.expected) == ("false", "true")
    hang = read_failure("Error: Exceeded timeout of 5000 ms for a test.", "x.js", {})
    assert hang and hang.hangs
    raised = read_failure("TypeError: charset.toLowerCase is not a function\n    at x", "x.js",
                          {})
    assert raised and raised.raises == "TypeError: charset.toLowerCase is not a function"
    assert read_failure("", "x.js", {}) is None


TAP = ('"xay" should match pattern "*a*"\n--- expected\n+++ actual\n@@ -1,1 +1,1 @@\n'
       '-true\n+false\nTest.<anonymous> (test/escaping.js:28:9)\ntest/escaping.js:16:5')


def test_node_tap_failures_as_repogyms_reporter_writes_them() -> None:
    sources = {"test/escaping.js": "\n" * 27 + "      t.equal(minimatch(str, pattern), true, msg)\n"}
    tap = read_failure(TAP, "test/escaping.js", sources)
    assert tap and (tap.call, tap.actual, tap.expected) == (
        "minimatch(str, pattern)", "false", "true")
    found = read_failure("should be equal\nfound: \"a\"\nwanted: \"b\"\ncompare: ===", "x.js", {})
    assert found and (found.actual, found.expected) == ('"a"', '"b"')
    assert (hang := read_failure("timeout!\nexpired: TAP", "x.js", {})) and hang.hangs
    objects = read_failure("should be equivalent\n--- expected\n+++ actual\n@@ -1,5 +1,5 @@\n"
                           " Object {\n-    2,\n+    1,\n   ],\n }", "x.js", {})
    assert objects is None or objects.actual is None  # a line of an object is no value


# -- canaries ------------------------------------------------------------------------------

def test_canaries_load_what_the_test_file_loads_and_check_in_its_styles(
        clones: dict[str, Path]) -> None:
    mime = (clones["jshttp+mime-types"] / "test" / "test.js").read_text()
    canary = plant({"test/test.js": mime}, "mocha")
    [(path, body)] = canary.files.items()
    assert path.startswith("test/rg") and path.endswith(".js")
    assert "var mimeTypes = require('..')" in body and "assert.strictEqual(1, 2);" in body
    assert len(canary.tests) == 4 and all(t.startswith(path + " > ") for t in canary.tests)
    ms = (clones["vercel+ms"] / "src" / "index.test.ts").read_text()
    [(path, body)] = plant({"src/index.test.ts": ms}, "jest").files.items()
    assert path.endswith(".test.ts") and "from '@jest/globals'" in body
    assert "expect(1).toBe(2);" in body
    dequal = (clones["lukeed+dequal"] / "test" / "index.js").read_text()
    [(path, body)] = plant({"test/index.js": dequal}, "uvu").files.items()
    assert "assert.is(1, 2);" in body and body.rstrip().endswith("__rgTest.run();")
    [(path, body)] = plant({"test.js": "import test from 'ava'\n"}, "ava").files.items()
    assert path.startswith("rg") and path.endswith(".test.js")  # ava's globs must take it
    assert body.startswith("import test from 'ava'") and "t.is(1, 2);" in body
    assert plant({"test.js": "import test from 'ava'"}, "tap").files == {}


def test_a_canary_that_passes_makes_the_run_untrusted() -> None:
    canary = plant({"t.test.js": "const assert = require('assert')\nit('x', () => {})\n"},
                   "mocha")
    real = TestResult(nodeid="t.test.js > x", outcome=Outcome.passed)

    def run(outcome: Outcome) -> TestRun:
        results = {t: TestResult(nodeid=t, outcome=outcome) for t in canary.tests}
        return TestRun(results={**results, real.nodeid: real}, exit_code=1, duration=1,
                       finished=True, collected=len(results) + 1)

    failed = canary.check(run(Outcome.failed))
    assert failed.trusted and list(failed.results) == [real.nodeid]
    neutralised = canary.check(run(Outcome.passed))
    assert not neutralised.trusted and "neutralised the assertions" in neutralised.problems[0]


# -- ava's TAP -----------------------------------------------------------------------------

AVA_TAP = """TAP version 13
ok 1 - api › camelCase
not ok 2 - api › pascal case
  ---
    name: AssertionError
    assertion: t.is()
    values:
      'Difference (- actual, + expected):': |-
        - 'fooBar'
        + 'FooBar'
  ...
ok 3 - cli › prints # SKIP
ok 4 - cli › later # TODO

1..4
# tests 4
# pass 1
# skip 1
# todo 1
# fail 1
"""
AVA_CRASH = """TAP version 13
not ok 1 - Error [ERR_UNSUPPORTED_DIR_IMPORT]: Directory import '/repo/' is not supported
  ---
    name: Error
  ...
not ok 2 - test.js exited with a non-zero exit code: 1

1..0
# tests 0
# pass 0
# fail 2
"""


def test_ava_tap_is_read_back_to_each_files_tests() -> None:
    from repogym.toolchains.javascript.tap import parse_tap

    run = parse_tap(AVA_TAP, ["test/api.js", "test/cli.test.js"], exit_code=1, duration=1)
    assert run.trusted, run.problems
    assert run.outcome("test/api.js > camelCase") is Outcome.passed
    failed = run.results["test/api.js > pascal case"]
    assert failed.outcome is Outcome.failed and "Difference (- actual" in failed.message
    assert run.outcome("test/cli.test.js > prints") is Outcome.skipped
    crash = parse_tap(AVA_CRASH, ["test.js"], exit_code=1, duration=1)
    assert crash.trusted and not crash.results and len(crash.collection_errors) == 2


def test_forged_or_inconsistent_tap_is_not_believed() -> None:
    from repogym.toolchains.javascript.tap import parse_tap

    files = ["test/api.js", "test/cli.test.js"]
    forged = AVA_TAP.replace("ok 3 - cli", "ok 7 - api › pascal case\nok 3 - cli")
    assert not parse_tap(forged, files, exit_code=1, duration=1).trusted
    assert not parse_tap(AVA_TAP, files, exit_code=0, duration=1).trusted  # exit says pass
    truncated = AVA_TAP.split("\n1..4")[0]
    assert not parse_tap(truncated, files, exit_code=1, duration=1).finished


def test_throw_checks_name_the_call_not_its_wrapper_or_the_tests_own_names() -> None:
    source = "\n" * 113 + "      expect(() => parse(`/foo/${char}`)).toThrow(err)\n"
    other = read_failure("AssertionError: expected a thrown error to be TypeError: Unexpected !"
                         "\n    at /repo/s.ts:114:45", "s.ts", {"s.ts": source})
    assert other and other.call == "parse(…)" and other.actual is None
    assert other.note and "not the one expected (`TypeError: Unexpected !`)" in other.note
    source = "\n" * 81 + "      expect(() => parse('/foo')).toThrow()\n"
    silent = read_failure("AssertionError: expected function to throw an error, but it didn't"
                          "\n    at /repo/s.ts:82:37", "s.ts", {"s.ts": source})
    assert silent and (silent.call, silent.should_raise) == ("parse('/foo')", "an error")


def test_uvu_diffs_aliases_and_loop_variables_as_kleurs_tests_have_them() -> None:
    from repogym.toolchains.javascript.failures import INVISIBLE

    source = ("import kleur from '../index';\nconst CODES = {red: 1};\n"
              "test('x', () => {\n\tlet r = kleur.red;\n"
              "\tassert.is(r('foo'), 'foo');\n"
              "\tfor (k in CODES) {\n\t\tassert.is(kleur[k](), undefined);\n\t}\n"
              "\tlet val = '~x~';\n\tassert.is(kleur.red().bold(val), 1);\n"  # line 10
              "\tassert.is(val, 1);\n\tlet foo = kleur.red().bold;\n"
              "\tassert.is(foo('foo'), 1);\n"  # line 13
              "\tassert.is(kleur.red(false), 1);\n});\n")
    sources = {"test/index.js": source}
    spaced = ("Assertion: Expected values to be strictly equal: (is)\n"
              "++foo·bar·baz (Expected)\n--foo·barNaN·baz (Actual)\nat /repo/test/index.js:5:9")
    got = read_failure(spaced, "test/index.js", sources)
    assert got and (got.call, got.actual, got.expected) == (
        "kleur.red('foo')", "foo barNaN baz", "foo bar baz")
    colours = ("Assertion: ~> returns immediately (is)\n++~foobar~ (Expected)\n"
               "--~foobar~ (Actual)\nat /repo/test/index.js:7:10")
    looped = read_failure(colours, "test/index.js", sources)
    assert looped and looped.call is None and looped.note == INVISIBLE
    assert looped.actual is None and looped.expected is None
    at = "Assertion: x (is)\n++1 (Expected)\n--2 (Actual)\nat /repo/test/index.js:{}:9"
    called = {n: read_failure(at.format(n), "test/index.js", sources).call for n in (10, 11, 13, 14)}
    assert called == {10: "kleur.red().bold(…)", 11: None, 13: "kleur.red().bold('foo')",
                      14: "kleur.red(false)"}
    escaped = read_failure(colours + '\nrg-values: {"actual": "\\u001b[31mfoobar\\u001b[39m", '
                           '"expected": "\\u001b[31mfoobar\\u001b[0m"}', "test/index.js", sources)
    assert escaped and escaped.note is None and (escaped.actual, escaped.expected) == (
        '"\\u001b[31mfoobar\\u001b[39m"', '"\\u001b[31mfoobar\\u001b[0m"')
    padded = read_failure("Assertion: x (is)\n++false            [string] (Expected)\n"
                          "--false  [boolean] (Actual)", "x.js", {})
    assert padded and (padded.actual, padded.expected) == ("false [boolean]", "false [string]")
