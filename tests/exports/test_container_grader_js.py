"""The in-container grader's JavaScript rules agree with repogym's JavaScript toolchain, rule
by rule (no Docker; the real containers are in test_javascript.py):

* protection (``JavaScriptToolchain.is_protected`` and ``verify``'s exact paths);
* ids, name patterns and the runner's command line for any selection, for jest, vitest,
  mocha and uvu (``runners``), from the plan ``repogym.toolchains.javascript.export`` writes;
* canaries (``canary.plant``, names drawn the same way);
* reports (``report.parse_report``: HMAC, exit code and count checks), the selection filter
  and the canary check of ``run_tests``, and the grade;
* a whole run: repogym's own ``run_tests`` on a fake sandbox and the grader's ``JsRunner``
  on a real directory, both against one simulated runner, give the same command line,
  variables, settings, canary files and report.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import pwd
import re
import shlex
from pathlib import Path
from typing import Any, Callable

import pytest

from repogym.datasets.exports import container_grader as grader
from repogym.datasets.exports import export_rows
from repogym.datasets.exports.grading import (
    PYTHON_FIELDS,
    SPEC_FILE,
    ContainerSpec,
    JsPlan,
    grading_files,
)
from repogym.datasets.verify import spec_of
from repogym.errors import InputError
from repogym.grading import GradingSpec, _graded
from repogym.grading import protected_paths as verify_protected
from repogym.sandboxes.base import ExecResult, Sandbox
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Candidate, CandidateKind, Judged, TimeLimits, Verdict
from repogym.toolchains import resume
from repogym.toolchains.javascript import JavaScriptToolchain, canary, report, runners, tap
from repogym.toolchains.javascript import export as js_export
from repogym.toolchains.javascript.canary import Canary, plant
from repogym.toolchains.javascript.placed import RUN_ENV
from repogym.toolchains.javascript.runners import Invocation, runner_for

TC = JavaScriptToolchain()

PATHS = [
    "test/test.js", "test/fixtures/a.json", "src/index.js", "src/index.test.ts", "a.spec.tsx",
    "lib/__tests__/x.js", "lib/__mocks__/fs.js", "e2e/run.js", "src/e2e.js", "test.js",
    "test.mjs", "tests.js", "src/testing.js", "src/contest.js", "x.snap", "__snapshots__/a.js",
    "package.json", "sub/package.json", "package-lock.json", "yarn.lock", ".npmrc", "a/.npmrc",
    "jest.config.js", "jest.config.ts", "sub/vitest.config.mts", ".mocharc.json", ".mocharc.yml",
    ".babelrc", "babel.config.cjs", "tsconfig.json", "tsconfig.build.json", "jsconfig.json",
    "setupTests.ts", "src/setupTests.js", "jest.setup.js", "vitest.setup.mts", "SetupTests.js",
    "global-setup.js", "globalTeardown.js", "test-setup.js", "node_modules/mocha/index.js",
    "lib/node_modules/x.js", "node_modules", "types/test.d.ts", "types/index.d.ts",
    "index.d.ts", "src/utils.d.mts", "README.md", "index.js", "mimeScore.js", "hack.js",
    "rg-any.setup.js", "src/setup.js", "spec/helper.js", "specs.js", "my-test.js",
    "my_spec.cjs", "a.test-d.ts", "x.tests.js", "nyc.config.js", ".nycrc", "karma.conf.js",
    "turbo.json", "pnpm-workspace.yaml", ".yarnrc.yml", "deno.json", "x/tsconfig.base.json",
    "a\nb.js", "package.json\n",
]


def _js_row(i: int = 0, *, kind: CandidateKind = CandidateKind.synthetic,
            limits: TimeLimits | None = None) -> TaskRow:
    """A judged JavaScript task shaped like the pipeline's (ids ``file > suite > test``)."""
    src = "module.exports = (a, b) => a + b\n"
    from repogym.patches import new_file_diff, unified_diff

    bug = unified_diff("index.js", src, src.replace("+", "-")) \
        if kind is CandidateKind.synthetic else ""
    gold = unified_diff("index.js", src.replace("+", "-"), src)
    tests = new_file_diff("test/new.test.js", "it('x', () => {})\n") \
        if kind is CandidateKind.mined else ""
    cand = Candidate(kind=kind, repo="acme__adder", language="javascript",
                     base_commit=f"{i:040x}", bug_patch=bug, gold_patch=gold,
                     test_patch=tests, generator="procedural", mutator="js_swap",
                     files=("index.js",))
    verdict = Verdict(instance_id=cand.instance_id, status="accept",
                      fail_to_pass=("test/test.js > add > adds",),
                      pass_to_pass=("test/other.test.js > x",), time_limits=limits,
                      evidence={}, seconds=1.0)
    return TaskRow.from_judged(Judged(candidate=cand, verdict=verdict,
                                      statement="add() subtracts", image="repogym-env/x:1"))


# -- protection -------------------------------------------------------------------------------

@pytest.mark.parametrize("added", [False, True], ids=["modified", "added"])
@pytest.mark.parametrize("path", PATHS)
def test_is_protected_matches_the_toolchain_and_verify(path, added):
    rules = js_export.protection_rules()
    assert grader.js_is_protected(path, rules) == TC.is_protected(path, added=added)
    row = _js_row(kind=CandidateKind.mined)
    spec = {**ContainerSpec.of(row, plan=_plan()).model_dump(), "javascript": _plan_dict()}
    expected = path in verify_protected(spec_of(row)) or TC.is_protected(path, added=added)
    assert grader.is_protected(path, spec, added) == expected


def test_protection_covers_what_a_hack_plants():
    rules = js_export.protection_rules()
    for path in ("test/test.js", ".mocharc.json", "package.json", "jest.config.js",
                 "vitest.config.mjs", "rg-any.setup.js", "node_modules/.bin/mocha",
                 "test/node_modules/assert/index.js", ".npmrc", "tsconfig.json"):
        assert grader.js_is_protected(path, rules), path
    for path in ("index.js", "mimeScore.js", "hack.js", "src/lib/util.ts"):
        assert not grader.js_is_protected(path, rules), path


# -- ids, patterns, command lines -------------------------------------------------------------

def test_constants_match_the_toolchain():
    assert grader.JS_SEPARATOR == report.SEPARATOR
    assert grader.JS_MESSAGE_CHARS == report.MESSAGE_CHARS
    assert grader.JS_OUTCOMES == {k: v.value for k, v in report._OUTCOMES.items()}
    assert grader.JS_REGEX_SPECIAL.pattern == runners.JS_REGEX_SPECIAL.pattern
    assert (grader.JS_SCRATCH, grader.JS_FILES, grader.JS_PATTERN) == (
        js_export.SCRATCH, js_export.FILES, js_export.PATTERN)
    assert (grader.JS_EACH_SELECT, grader.JS_EACH_EXCLUDE, grader.JS_TITLE) == (
        js_export.EACH_SELECT, js_export.EACH_EXCLUDE, js_export.TITLE)
    assert grader.TAP_SEP == tap.SEP
    for ours, theirs in ((grader.TAP_POINT, tap._POINT), (grader.TAP_EXITED, tap._EXITED),
                         (grader.TAP_COUNT, tap._COUNT), (grader.TAP_CRASH, tap._CRASH)):
        assert (ours.pattern, ours.flags) == (theirs.pattern, theirs.flags)
    assert set(grader.JS_DROPPED_ENV).isdisjoint(set(RUN_ENV) - {"NODE_OPTIONS"})


IDS = ["test/a.test.js > suite > adds 1 + 2", "test/a.test.js > suite > adds 1 + 2 [2]",
       "test/b.js > (weird) [chars] ^$ | * ? / \\ -", "src/x.spec.ts > top",
       "test/a.test.js > nested > deeper > one", "t.js > x [y]", "t.js > x [3]"]


@pytest.mark.parametrize("test", IDS)
def test_ids_split_as_the_toolchain_splits_them(test):
    assert grader.js_split_id(test) == report.split_id(test)
    file, titles = report.split_id(test)
    assert grader.js_test_id(file, titles) == report.test_id(file, titles)
    assert grader.js_test_id("f.js", ["a\n b", " c\td "]) == report.test_id(
        "f.js", ["a\n b", " c\td "])


SELECTIONS = [(IDS[:1], []), (IDS, []), (IDS[2:4], IDS[:2]), (None, IDS[:3]),
              (["f.js > only"], ["f.js > only"])]


@pytest.mark.parametrize("select, exclude", SELECTIONS)
def test_name_patterns_match_the_toolchain(select, exclude):
    assert grader.js_name_pattern(select, exclude) == runners.name_pattern(select, exclude)
    if select is not None:
        assert grader.js_files_of(select) == runners.files_of(select)


PROJECT_ARGS = {"jest": [["--env", "node"], ["--runInBand", "--coverage", "src"], []],
                "vitest": [["run"], ["run", "--coverage", "--reporter", "dot", "test/"], []],
                "mocha": [["--reporter", "spec", "test/test.js"], ["-r", "esm", "--bail"], []],
                "uvu": [["-r", "esm", "test"], ["test", "-i", "fixtures"], []],
                "ava": [["--verbose", "test/**/*.js"], ["--match", "x*", "-T", "5s"], []],
                "node-test": [["--test", "--experimental-strip-types"], ["test/"], []],
                "tap": [[], ["--reporter", "base", "-t", "5"], ["test/*.js"]]}
LIMITS = [None, TimeLimits(tests={IDS[0]: 2.5, IDS[3]: 7.0}, default=30.0, run=90.0)]


@pytest.mark.parametrize("limits", LIMITS, ids=["no-limits", "limits"])
@pytest.mark.parametrize("exitfirst", [False, True], ids=["all", "exitfirst"])
@pytest.mark.parametrize("name", sorted(PROJECT_ARGS))
def test_command_lines_match_the_runner(name, exitfirst, limits):
    runner = runner_for(name)
    for args in PROJECT_ARGS[name]:
        plan = {"command": js_export.command_template(runner, args, limits, False),
                "command_exitfirst": js_export.command_template(runner, args, limits, True)}
        for select, exclude in SELECTIONS:
            if select is None:
                continue
            inv = Invocation(scratch="/var/tmp/rg-0123", project_args=tuple(args),
                             select=select, exclude=exclude, limits=limits,
                             exitfirst=exitfirst)
            ours = grader.js_command(plan, "/var/tmp/rg-0123", select, exclude, exitfirst)
            theirs = shlex.split(runner.command(inv))
            if runner.whole_files:  # node-tap: the grader runs the files whole, no --grep
                theirs = [w for w in theirs if not w.startswith("--grep=")]
            assert ours == theirs, (args, select, exclude)


# -- canaries ---------------------------------------------------------------------------------

TEST_FILES = {
    "test/test.js": "var assert = require('assert')\nvar lib = require('..')\n\n"
                    "describe('x', function () {\n  it('y', function () {\n"
                    "    assert.strictEqual(lib(1), 2)\n  })\n})\n",
    "src/__tests__/a.test.ts": "import { add } from '../add';\nimport { expect, it } from "
                               "'vitest';\n\nit('adds', () => { expect(add(1, 2)).toBe(3); });\n",
    "test/chai.spec.js": "const { expect } = require('chai');\nconst m = require('../m');\n"
                         "it('m', () => { expect(m()).to.equal(1); });\n",
    "test/strict.test.mjs": "import assert from 'node:assert/strict';\nimport m from '../m.js';"
                            "\ntest('m', () => { assert.equal(m(), 1); });\n",
    "test/index.js": "import { test } from 'uvu';\nimport * as assert from 'uvu/assert';\n"
                     "import dequal from '../src';\n\ntest('x', () => { assert.is(1, 1); });\n"
                     "test.run();\n",
    "test/named.js": "const { test } = require('uvu');\nconst { is, equal } = require('uvu/"
                     "assert');\ntest('x', () => { is(1, 1); });\ntest.run();\n",
    "test/none.test.js": "it('nothing to check', () => {});\n",
    "root.test.js": "const assert = require('assert');\nit('x', () => assert.ok(true));\n",
    "test/ava.test.js": "const test = require('ava');\nconst m = require('../m');\n"
                        "test('m', (t) => { t.is(m(), 1); });\n",
    "test.js": "import test from 'ava';\nimport m from './m.js';\n"
               "test('m', (t) => { t.is(m(), 1); });\n",
    "test/tap.js": "import t from 'tap'\nimport { minimatch } from '../dist/esm/index.js'\n"
                   "t.test('m', t => { t.equal(minimatch('a', 'a'), true); t.end() })\n",
    "test/tap-cjs.js": "const t = require('tap')\nconst m = require('../')\n"
                       "t.equal(m(), 1)\n",
    "test/nt.test.mjs": "import test from 'node:test';\nimport assert from 'node:assert';\n"
                        "test('m', () => { assert.equal(1, 1); });\n",
}


_TOKENS = re.compile(r"rg[0-9a-f]{8}|(?<![0-9a-f])[0-9a-f]{6}(?![0-9a-f])")


_WORDS = re.compile(r"\b(?:%s)\b" % "|".join(canary._WORDS))


def norm(text: str) -> str:
    """``text`` with what the canaries draw at random (file stems, title suffixes, title
    words) blanked."""
    return _WORDS.sub("<word>", _TOKENS.sub("<token>", text))


@pytest.mark.parametrize("runner", ["jest", "vitest", "mocha", "uvu", "ava", "node-test", "tap"])
@pytest.mark.parametrize("path", sorted(TEST_FILES))
def test_canaries_are_what_plant_plants(path, runner):
    theirs = plant({path: TEST_FILES[path]}, runner)
    template = js_export.canary_template(path, TEST_FILES[path], runner)
    if not theirs.tests:
        assert template is None
        return
    assert template is not None
    spec_template = JsPlan.model_validate(_plan_dict(canaries={path: template})).model_dump(
        mode="json")["canaries"][path]
    where, text, ids = grader.js_canary(spec_template)
    [(their_where, their_text)] = theirs.files.items()
    assert (norm(where), norm(text), [norm(t) for t in ids]) == (
        norm(their_where), norm(their_text), [norm(t) for t in theirs.tests])
    assert "@RG_" not in where + text + "".join(ids)
    assert all(f"'{report.split_id(t)[1][-1]}'" in text for t in ids)  # ids name its tests
    again = grader.js_canary(spec_template)  # fresh names every run
    assert again[0] != where and not set(again[2]) & set(ids)
    ours = js_export.canary_of(template)
    assert (norm(ours[0]), norm(ours[1])) == (norm(where), norm(text))


def test_a_canary_token_the_test_file_holds_is_drawn_again(monkeypatch):
    """A token that also occurs in the test file's own text (its imports are copied into
    the canary) could not be told from it: the template draws again."""
    first = iter(["facade"])  # the first suite's token is a word of the file
    counter = itertools.count(1)

    def token_hex(nbytes: int = 32) -> str:
        return next(first, None) if nbytes == 3 and first else \
            f"{next(counter):0{2 * nbytes}x}"

    monkeypatch.setattr(canary.secrets, "token_hex", lambda n=32: token_hex(n) or
                        f"{next(counter):0{2 * n}x}")
    text = "const assert = require('assert');\nconst m = require('./facade');\n"
    template = js_export.canary_template("test/x.test.js", text, "mocha")
    assert template is not None and "facade" not in template["tokens"]
    assert template["path"] == "test/rg@RG_TOKEN_0@.test.js"
    assert "require('./facade')" in template["text"]


# -- reports ----------------------------------------------------------------------------------

N = "ab" * 16


def signed(events: list[dict], finish: dict | None = None, nonce: str = N,
           after: str = "") -> str:
    """A report as rg-common.cjs writes it: JSON lines, then the finish line with its
    HMAC (``finish=None``: no finish line)."""
    body = "".join(json.dumps(e) + "\n" for e in events)
    if finish is None:
        return body + after
    mac = hmac.new(nonce.encode(), hashlib.sha256(body.encode()).hexdigest().encode(),
                   hashlib.sha256).hexdigest()
    return body + json.dumps({"event": "finish", **finish, "mac": mac}) + "\n" + after


def ran(test: str, outcome: str = "passed", **kw: Any) -> list[dict]:
    file, titles = report.split_id(test)
    return [{"event": "begin", "file": file, "id": test},
            {"event": "test", "file": file, "titles": titles, "outcome": outcome,
             "duration": 0.01, **kw}]


A, B, C = "t/a.test.js > s > a", "t/a.test.js > s > b", "t/b.test.js > c"
K1, K2 = "t/rg00000001.test.js > k > case 1", "t/rg00000001.test.js > k > case 2"
OK = {"passed": 2, "failed": 0, "skipped": 0, "errors": 0}
# name -> (raw report, exit code, timed out, selection, canary ids)
REPORTS: dict[str, tuple[str, int, bool, list[str], list[str]]] = {
    "all_pass": (signed([{"event": "start"}, *ran(A), *ran(B)], OK), 0, False, [A, B], []),
    "one_fails": (signed([*ran(A), *ran(B, "failed", message="boom")],
                         {**OK, "passed": 1, "failed": 1}), 1, False, [A, B], []),
    "forged_mac": (signed([*ran(A)], OK, nonce="cd" * 16), 0, False, [A], []),
    "no_mac": (signed([*ran(A)]) + json.dumps({"event": "finish", "passed": 1}) + "\n", 0,
               False, [A], []),
    "lines_after_finish": (signed([*ran(A)], {"passed": 1}, after=json.dumps(
        ran(B)[1]) + "\n"), 0, False, [A, B], []),
    "rewritten_line": (signed([*ran(A, "failed")], {"passed": 0, "failed": 1}).replace(
        '"failed", "duration"', '"passed", "duration"'), 1, False, [A], []),
    "exit_0_with_failure": (signed([*ran(A, "failed")], {"passed": 0}), 0, False, [A], []),
    "exit_1_no_failure": (signed([*ran(A)], {"passed": 1}), 1, False, [A], []),
    "count_mismatch": (signed([*ran(A)], {"passed": 5}), 0, False, [A], []),
    "file_error": (signed([*ran(A), {"event": "file_error", "file": "t/b.test.js",
                                     "message": "SyntaxError"}], {"passed": 1}), 1, False,
                   [A, C], []),
    "duplicates_and_outcomes": (signed([*ran(A), *ran(A, "failed"), *ran(B, "pending"),
                                        *ran(C, "weird")], {"passed": 1}), 1, False,
                                [A, f"{A} [2]", B, C], []),
    "timed_out_test": (signed([*ran(A, "failed", timed_out=True, message="Timeout of 2000ms "
                                "exceeded"), *ran(B)], {"passed": 1}), 1, False, [A, B], []),
    "not_selected": (signed([*ran(A), *ran(B, "skipped"), *ran(C, "failed")], {"passed": 1}),
                     1, False, [A], []),
    "canary_failed": (signed([*ran(A), *ran(K1, "failed"), *ran(K2, "failed")],
                             {"passed": 1, "failed": 2}), 1, False, [A, K1, K2], [K1, K2]),
    "canary_passed": (signed([*ran(A), *ran(K1), *ran(K2)], {"passed": 3}), 0, False,
                      [A, K1, K2], [K1, K2]),
    "canary_missing": (signed([*ran(A)], {"passed": 1}), 0, False, [A, K1, K2], [K1, K2]),
    "exit_code_unchecked": (signed([*ran(A, "failed")], {"passed": 0,
                                                         "exit_code_checked": False}),
                            0, False, [A], []),
    "died_after_a_result": (signed([*ran(A)]), -9, False, [A, B], []),
    "run_timed_out_after_a_result": (signed([*ran(A)]), -9, True, [A, B], []),
    "garbage": ("PASS t/a.test.js\n[1, 2]\n{not json\n" + signed([*ran(A)], {"passed": 1}),
                0, False, [A], []),
    "empty": ("", 0, False, [A], []),
}
DIES_IN_A_TEST = {  # the run ends inside B: repogym's run_to_end cannot grade these
    "died_in_a_test": (signed([*ran(A), {"event": "begin", "id": B}]), -9, False, [A, B]),
    "run_timed_out_in_a_test": (signed([*ran(A), {"event": "begin", "id": B}]), -9, True,
                                [A, B]),
}


def _theirs(name: str):
    raw, code, timed_out, select, canaries = REPORTS[name]
    run = report.parse_report(raw, nonce=N, exit_code=code, duration=1.0, timed_out=timed_out)
    wanted = set(select)  # run_tests' filter of what a name filter left out
    run = run.model_copy(update={"results": {t: r for t, r in run.results.items()
                                             if t in wanted or r.outcome.value != "skipped"}})
    return Canary(tests=list(canaries)).check(run)


def _ours(name: str) -> dict:
    raw, code, timed_out, select, canaries = REPORTS[name]
    ours = grader.js_parse_report(raw.encode(), N, code, timed_out, 1.0)
    ours = grader.js_check_canary(grader.js_selected(ours, select), canaries)
    return grader.js_blame_death(ours, canaries, code)


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_reports_read_as_the_toolchain_reads_them(name):
    ours, theirs = _ours(name), _theirs(name)
    assert ours["tests"] == {k: {"outcome": v.outcome.value, "timed_out": v.timed_out,
                                 "message": v.message} for k, v in theirs.results.items()}
    assert (ours["finished"], ours["problems"], ours["died_in"]) == (
        theirs.finished, list(theirs.problems), theirs.died_in)
    trusted = ours["finished"] and not ours["timed_out"] and not ours["problems"]
    assert trusted == theirs.trusted


@pytest.mark.parametrize("partial", [False, True], ids=["binary", "partial"])
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_grades_match_verify(name, partial):
    _, _, _, select, canaries = REPORTS[name]
    wanted = {t for t in select if t not in canaries}
    spec = GradingSpec(instance_id="x", image="i", base_commit="c", bug_patch="",
                       test_patch="", FAIL_TO_PASS=tuple(sorted(wanted)), PASS_TO_PASS=(),
                       language="javascript")
    run = resume.merged([resume._blame_loss(resume._blame_overrun(_theirs(name)))])
    expected = _graded(spec, run, wanted, [], partial=partial)
    got = grader.grade(grader.merged([grader.blame_overrun(_ours(name))]), wanted, partial)
    assert (got["reward"], got["resolved"], got["problems"], got["trusted"]) == (
        expected.reward, expected.resolved, list(expected.problems), run.trusted)
    assert got["outcomes"] == {k: (v.value if v else None)
                               for k, v in expected.outcomes.items()}


def test_the_report_rules_are_exercised():
    """The fixtures reach every rule (a guard against a vacuous parity test)."""
    problems = {name: _ours(name)["problems"] for name in REPORTS}
    assert problems["all_pass"] == [] and problems["canary_failed"] == []
    for name, words in {"forged_mac": "does not sign", "no_mac": "does not sign",
                        "lines_after_finish": "after its finish",
                        "rewritten_line": "does not sign", "exit_0_with_failure": "exited 0",
                        "exit_1_no_failure": "exited 1", "count_mismatch": "counted 5",
                        "canary_passed": "neutralised", "canary_missing": "did not run"}.items():
        assert any(words in p for p in problems[name]), (name, problems[name])
    assert problems["exit_code_unchecked"] == []
    dup = _ours("duplicates_and_outcomes")["tests"]
    assert [dup[t]["outcome"] for t in (A, f"{A} [2]", B, C)] == [
        "passed", "failed", "skipped", "error"]
    assert _ours("timed_out_test")["tests"][A] == {"outcome": "failed", "timed_out": True,
                                                   "message": "Timeout of 2000ms exceeded"}
    assert set(_ours("not_selected")["tests"]) == {A, C}
    assert set(_ours("canary_failed")["tests"]) == {A}


@pytest.mark.parametrize("name", sorted(DIES_IN_A_TEST))
def test_a_run_that_dies_in_a_test_blames_it(name):
    """The test a run died in (its begin line, no result) is an error -- or, when the run's
    own limit stopped it, a timed-out failure -- and binary grading stops at 0. (repogym's
    own ``run_to_end`` raises KeyError on such a JavaScript run: see the report.)"""
    raw, code, timed_out, select = DIES_IN_A_TEST[name]
    theirs = report.parse_report(raw, nonce=N, exit_code=code, duration=1.0,
                                 timed_out=timed_out)
    ours = grader.js_blame_death(grader.js_parse_report(raw, N, code, timed_out, 1.0), [],
                                 code)
    assert ours["died_in"] == theirs.died_in == B and not ours["finished"]
    graded = grader.grade(grader.merged([grader.blame_overrun(ours)]), set(select))
    assert graded["reward"] == 0 and graded["outcomes"][A] == "passed"
    assert graded["outcomes"][B] == ("failed" if timed_out else "error")
    assert any(p.startswith(f"{B}: ") for p in graded["problems"])


# -- ava's TAP ------------------------------------------------------------------------------

def tap_point(n: int, title: str, ok: bool = True, directive: str = "",
              message: str = "") -> str:
    line = f"{'ok' if ok else 'not ok'} {n} - {title}" + (f" # {directive}" if directive else "")
    if message:
        line += "\n  ---\n" + "".join(f"    {m}\n" for m in message.splitlines()) + "  ..."
    return line


def tap_run(points: list[str], plan: int | None, passed: int | None = None,
            failed: int | None = None) -> str:
    lines = ["TAP version 13", *points]
    if plan is not None:
        lines.append(f"1..{plan}")
    if passed is not None:
        lines += [f"# tests {plan}", f"# pass {passed}", "# skip 0"]
    if failed is not None:
        lines.append(f"# fail {failed}")
    return "\n".join(lines) + "\n"


ONE, TWO = ["test/a.test.js"], ["test/a.test.js", "test/sub/__tests__/test-b.spec.ts"]
S = tap.SEP
# name -> (TAP, files, exit code, timed out)
TAPS: dict[str, tuple[str, list[str], int, bool]] = {
    "all_pass": (tap_run([tap_point(1, "adds"), tap_point(2, "subtracts")], 2, 2, 0), ONE, 0,
                 False),
    "a_failure": (tap_run([tap_point(1, "adds"), tap_point(2, "subtracts", False, message=(
        "name: AssertionError\nmessage: Difference\nat: test/a.test.js:3"))], 2, 1, 1), ONE, 1,
                  False),
    "skip_and_todo": (tap_run([tap_point(1, "a", directive="SKIP"),
                               tap_point(2, "b", directive="TODO later"), tap_point(3, "c")],
                              3, 1, 0), ONE, 0, False),
    "two_files": (tap_run([tap_point(1, f"a{S}adds"), tap_point(2, f"sub{S}b{S}x", False)],
                          2, 1, 1), TWO, 1, False),
    "crash": (tap_run([tap_point(1, "adds"), tap_point(2, "SyntaxError: Unexpected token",
                                                        False, message="at x.js:1"),
                       tap_point(3, "test/a.test.js exited with a non-zero exit code: 1",
                                 False)], 1, 1, 2), ONE, 1, False),
    "unprefixed_crash": (tap_run([tap_point(1, "boom", False)], 0, 0, 1), TWO, 1, False),
    "out_of_sequence": (tap_run([tap_point(1, "a"), tap_point(3, "b")], 2, 2, 0), ONE, 0,
                        False),
    "twice": (tap_run([tap_point(1, "a"), tap_point(2, "a")], 2, 2, 0), ONE, 0, False),
    "plan_mismatch": (tap_run([tap_point(1, "a")], 3, 1, 0), ONE, 0, False),
    "counts_disagree": (tap_run([tap_point(1, "a"), tap_point(2, "b", False)], 2, 2, 0), ONE,
                        1, False),
    "exit_0_with_failure": (tap_run([tap_point(1, "a", False)], 1, 0, 1), ONE, 0, False),
    "no_plan": (tap_run([tap_point(1, "a")], None), ONE, 0, False),
    "timed_out": (tap_run([tap_point(1, "a", False, message="Timed out while running")], 1,
                          0, 1), ONE, -9, True),
    "timeout_message": (tap_run([tap_point(1, "a", False, message="test timed out")], 1, 0,
                                1), ONE, 1, False),
    "empty": ("", ONE, 0, False),
}


@pytest.mark.parametrize("name", sorted(TAPS))
def test_tap_reads_as_the_toolchain_reads_it(name):
    text, files, code, timed_out = TAPS[name]
    theirs = tap.parse_tap(text, files, exit_code=code, duration=1.0, timed_out=timed_out)
    ours = grader.js_parse_tap(text, files, code, timed_out, 1.0)
    assert ours["tests"] == {k: {"outcome": v.outcome.value, "timed_out": v.timed_out,
                                 "message": v.message} for k, v in theirs.results.items()}
    assert (ours["finished"], ours["problems"], ours["died_in"]) == (
        theirs.finished, list(theirs.problems), theirs.died_in)
    assert grader.ava_title_prefixes(files) == tap.ava_title_prefixes(files)


def test_the_tap_rules_are_exercised():
    problems = {n: grader.js_parse_tap(*TAPS[n][:2], *TAPS[n][2:])["problems"] for n in TAPS}
    assert problems["all_pass"] == problems["two_files"] == problems["crash"] == []
    for name, words in {"out_of_sequence": "out of sequence", "twice": "twice",
                        "plan_mismatch": "plan 1..3", "counts_disagree": "counted 0",
                        "exit_0_with_failure": "exited 0"}.items():
        assert any(words in p for p in problems[name]), (name, problems[name])
    two = grader.js_parse_tap(*TAPS["two_files"][:2], 1, False)["tests"]
    assert set(two) == {"test/a.test.js > adds", "test/sub/__tests__/test-b.spec.ts > x"}


# -- whole runs: repogym's run_tests and the grader's JsRunner on one simulated runner -------

PROJECTS = {
    "mocha": ({"scripts": {"test": "mocha --reporter spec test/test.js"},
               "devDependencies": {"mocha": "10"}}, "test/test.js"),
    "jest": ({"scripts": {"test": "jest --env node", "pretest": "tsc -p ."},
              "devDependencies": {"jest": "29"}}, "src/__tests__/a.test.ts"),
    "vitest": ({"scripts": {"test": "vitest run --coverage"}}, "src/__tests__/a.test.ts"),
    "uvu": ({"scripts": {"test": "uvu -r esm test"}}, "test/index.js"),
    "node-test": ({"scripts": {"test": "node --test --experimental-strip-types"}},
                  "test/nt.test.mjs"),
    "ava": ({"scripts": {"test": "ava --verbose"}}, "test/ava.test.js"),
}


class Simulator:
    """A runner that runs nothing: it reads the run's settings file (as rg-common.cjs does)
    and writes the signed report a runner would, every selected test with the outcome
    ``outcomes`` gives it (canary checks: ``canary``), plus a skipped test it was not
    asked for. It records what it was started with."""

    def __init__(self, outcomes: dict[str, str], canary: str = "failed") -> None:
        self.outcomes, self.canary = outcomes, canary
        self.calls: list[dict[str, Any]] = []
        self.stdout = ""  # what a TAP runner printed

    def run(self, cmd: str, env: dict[str, str], read: Callable[[str], str | None],
            write: Callable[[str, str], None]) -> int:
        config = json.loads(read(env["REPOGYM_JS_CONFIG"]) or "{}")
        canaries = {t: read(report.split_id(t)[0]) for t in config["select"]
                    if t not in self.outcomes}
        self.calls.append({"cmd": cmd, "env": env, "config": config, "canaries": canaries})
        events: list[dict] = []
        outcomes = {t: self.outcomes.get(t, self.canary) for t in config["select"]}
        failed = sum(o == "failed" for o in outcomes.values())
        passed = sum(o == "passed" for o in outcomes.values())
        if "--tap" in shlex.split(cmd.rsplit(" && ", 1)[-1]):  # ava: TAP on stdout
            files = runners.files_of(list(outcomes))
            prefix = {f: p for p, f in tap.ava_title_prefixes(files).items()}
            points = [tap_point(n, S.join([*([prefix[f]] if f in prefix else []), t[-1]]),
                                outcome == "passed", message="" if outcome == "passed"
                                else "name: AssertionError\nmessage: no")
                      for n, (f, t, outcome) in enumerate(
                          ((*report.split_id(k), o) for k, o in outcomes.items()), 1)]
            self.stdout = tap_run(points, len(points), passed, failed)
            return 1 if failed else 0
        for test, outcome in outcomes.items():
            events += ran(test, outcome)
        events += ran("test/other.test.js > not asked for", "skipped")
        write(config["report"], signed(events, {"passed": passed, "failed": failed},
                                       nonce=config["nonce"]))
        return 1 if failed else 0


class FakeSandbox(Sandbox):
    """Files in a dict; commands go to the simulator (``rm`` removes files)."""

    provider = "fake"

    def __init__(self, files: dict[str, str], sim: Simulator) -> None:
        self.files = {self._abs(k): v.encode() for k, v in files.items()}
        self.sim = sim

    @property
    def repo_dir(self) -> str:
        return "/repo"

    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else f"/repo/{path}"

    def exec(self, cmd, *, timeout, env=None, workdir=None, user=None) -> ExecResult:
        if not isinstance(cmd, str):
            assert cmd[0] == "rm", cmd
            for path in map(self._abs, cmd[2:]):
                self.files = {k: v for k, v in self.files.items()
                              if k != path and not k.startswith(path + "/")}
            return ExecResult(exit_code=0, stdout="", stderr="", duration=0.0)

        def read(path: str) -> str | None:
            data = self.files.get(self._abs(path))
            return None if data is None else data.decode()

        def write(path: str, text: str) -> None:
            self.files[self._abs(path)] = text.encode()

        code = self.sim.run(cmd, dict(env or {}), read, write)
        return ExecResult(exit_code=code, stdout=self.sim.stdout, stderr="", duration=0.5)

    def write_file(self, path, content, *, mode=0o644) -> None:
        self.files[self._abs(path)] = content.encode() if isinstance(content, str) else content

    def read_file(self, path: str) -> bytes:
        try:
            return self.files[self._abs(path)]
        except KeyError:
            raise FileNotFoundError(path) from None

    def reset(self, commit: str | None = None) -> None:
        pass

    def close(self) -> None:
        pass


def _plan_dict(**update: Any) -> dict:
    plan = {"runner": "mocha", "build": None, "prefix": ["mkdir -p /tmp/x"],
            "fresh": ["/tmp/x"], "command": ["node_modules/.bin/mocha",
            "--grep", js_export.PATTERN, js_export.FILES], "command_exitfirst": [
            "node_modules/.bin/mocha", "--grep", js_export.PATTERN, "--bail", js_export.FILES],
            "env": dict(RUN_ENV), "reporters": {"rg-common.cjs": "// x\n"},
            "test_timeout_ms": 60000, "canaries": {},
            "protection": js_export.protection_rules()}
    plan.update(update)
    return plan


def _plan() -> JsPlan:
    return JsPlan.model_validate(_plan_dict())


def _whole_runs(name: str, outcomes: dict[str, str], canary_outcome: str,
                tmp_path: Path, monkeypatch, todo: list[str], seen: list[str]):
    """(repogym's run, the grader's report, repogym's call, the grader's call) of one run
    of ``todo`` after earlier parts reported ``seen``."""
    package, test_file = PROJECTS[name]
    files = {"package.json": json.dumps(package), test_file: TEST_FILES[test_file],
             "index.js": "module.exports = 1\n"}
    limits = TimeLimits(tests={t: 3.0 for t in outcomes}, default=20.0, run=60.0)
    sim = Simulator(outcomes, canary_outcome)
    sandbox = FakeSandbox(files, sim)
    plan = js_export.grading_plan(sandbox, list(outcomes), limits)
    theirs = TC.run_tests(sandbox, timeout=60.0, select=todo, limits=limits,
                          exclude=sorted(seen), check_runner=True, exitfirst=True)
    assert not [p for p in sandbox.files if "/rg0" in p], "canaries left behind"

    repo = tmp_path / "repo"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    spec = {"repo_dir": str(repo), "javascript": JsPlan.model_validate(plan).model_dump()}
    ours_sim = Simulator(outcomes, canary_outcome)

    def execute(cmd, env, cwd, user, timeout, stdout=None):
        assert cmd[:2] == ["bash", "-c"] and cwd == str(repo)

        def read(path: str) -> str | None:
            full = path if path.startswith("/") else os.path.join(cwd, path)
            return Path(full).read_text() if os.path.isfile(full) else None

        def write(path: str, text: str) -> None:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(text)

        code = ours_sim.run(cmd[2], env, read, write)
        if stdout:
            Path(stdout).write_text(ours_sim.stdout)
        return code, 0.5, False

    monkeypatch.setattr(grader, "execute", execute)
    runner = grader.JsRunner(spec, pwd.getpwuid(os.getuid()), exitfirst=True)
    runner.seen.update(seen)
    ours = runner.part(todo, 60.0)
    assert not list((repo / test_file).parent.glob("rg*")), "canaries left behind"
    return theirs, ours, sim.calls[-1], ours_sim.calls[-1]


def _scratch_free(text: str, call: dict) -> str:
    """``text`` without the run's own names: its scratch folder, its canaries' tokens."""
    scratch = os.path.dirname(call["env"]["REPOGYM_JS_CONFIG"])
    return norm(text.replace(scratch, "SCRATCH"))


@pytest.mark.parametrize("case", ["pass", "fail", "neutralised", "second_part"])
@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_a_whole_run_matches_run_tests(name, case, tmp_path, monkeypatch):
    test_file = PROJECTS[name][1]
    t1, t2, t3 = (report.test_id(test_file, ["suite", f"test {i} (x+y)"]) for i in range(3))
    outcomes = {t1: "passed", t2: "failed" if case == "fail" else "passed", t3: "passed"}
    todo, seen = ([t2, t3], [t1]) if case == "second_part" else ([t1, t2, t3], [])
    canary_outcome = "passed" if case == "neutralised" else "failed"
    theirs, ours, their_call, our_call = _whole_runs(name, outcomes, canary_outcome,
                                                     tmp_path, monkeypatch, todo, seen)
    # the same run was asked for: command line, variables, settings, canary files
    assert _scratch_free(our_call["cmd"], our_call) == _scratch_free(their_call["cmd"],
                                                                     their_call)
    keys = set(RUN_ENV) | {"NODE_OPTIONS"}
    assert {k: _scratch_free(our_call["env"].get(k, ""), our_call) for k in keys} == {
        k: _scratch_free(their_call["env"].get(k, ""), their_call) for k in keys}
    for call in (our_call, their_call):  # a settings file of a random name in the scratch
        assert re.fullmatch(r"SCRATCH/c-[0-9a-f]{16}\.json", _scratch_free(
            call["env"]["REPOGYM_JS_CONFIG"], call))
    for call in (our_call, their_call):
        call["config"] = norm(json.dumps({k: v for k, v in call["config"].items()
                                          if k not in ("report", "nonce", "root")}))
        call["canaries"] = norm(json.dumps(call["canaries"], sort_keys=True))
    assert our_call["config"] == their_call["config"]
    assert our_call["canaries"] == their_call["canaries"]
    if name in canary.CANARY_RUNNERS:  # the comparison is not of two empty sets
        assert any(check in our_call["canaries"] for check in ("assert", "expect", "t.is("))
    assert our_call["env"]["HOME"].startswith(os.path.dirname(our_call["env"][
        "REPOGYM_JS_CONFIG"]))
    # and read the same
    assert ours["tests"] == {k: {"outcome": v.outcome.value, "timed_out": v.timed_out,
                                 "message": v.message} for k, v in theirs.results.items()}
    assert (ours["finished"], ours["problems"]) == (theirs.finished, list(theirs.problems))
    if case == "neutralised" and name in canary.CANARY_RUNNERS:
        assert any("neutralised" in p for p in ours["problems"])
    else:
        assert ours["problems"] == [] and ours["finished"]


# -- the spec and the grader's command line ---------------------------------------------------

def test_a_javascript_spec_needs_its_plan_and_leaves_python_out():
    row = _js_row()
    with pytest.raises(InputError, match="grading plan"):
        ContainerSpec.of(row)
    files = grading_files(row, plan=_plan())
    assert sorted(files) == ["grader.py", SPEC_FILE]
    spec = json.loads(files[SPEC_FILE])
    assert spec["language"] == "javascript" and not PYTHON_FIELDS & set(spec)
    assert ContainerSpec.model_validate(spec).javascript == _plan()


def test_load_spec_checks_the_plan(tmp_path):
    spec = json.loads(grading_files(_js_row(), plan=_plan())[SPEC_FILE])
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    assert grader.load_spec(str(path))["javascript"]["runner"] == "mocha"
    for broken, words in (({**spec, "javascript": None}, "no JavaScript grading plan"),
                          ({**spec, "javascript": {"runner": "x"}}, "javascript.command"),
                          ({**spec, "language": "cobol"}, "language")):
        path.write_text(json.dumps(broken))
        with pytest.raises(ValueError, match=words):
            grader.load_spec(str(path))


def test_javascript_needs_no_plugin_and_python_does(tmp_path, capsys):
    js = tmp_path / "js.json"
    js.write_text(json.dumps({**json.loads(grading_files(_js_row(), plan=_plan())[SPEC_FILE]),
                              "anchor": str(tmp_path / "no-anchor")}))
    out = tmp_path / "out"
    code = grader.main(["--spec", str(js), "--out", str(out)])
    assert code == grader.EXIT_INFRA  # past the argument checks: no anchor here
    assert (out / "reward.txt").read_text() == "0\n"
    from tests.exports.conftest import make_judged

    py = tmp_path / "py.json"
    py.write_text(ContainerSpec.of(TaskRow.from_judged(make_judged(0))).to_json())
    assert grader.main(["--spec", str(py)]) == grader.EXIT_USAGE
    assert "needs --plugin" in capsys.readouterr().out


def test_lines_for_swebench_keep_javascript_ids_whole(capsys):
    result = {"instance_id": "x", "reward": 0.0, "trusted": True, "discarded": [],
              "problems": [], "resolved": False,
              "outcomes": {A: "passed", B: "failed", C: "skipped", K1: None}}
    grader.emit(result, None, "javascript")
    out = capsys.readouterr().out
    assert f"[PASSED] {A}\n[FAILED] {B}\n[FAILED] {C}\n[FAILED] {K1}\n" in out


# -- exports of JavaScript rows without Docker (the plan given) ------------------------------

def test_every_format_exports_javascript_rows(tmp_path, monkeypatch):
    import datasets
    import pandas as pd

    from repogym.datasets.exports import harbor, swebench

    rows = [_js_row(0), _js_row(1, kind=CandidateKind.mined)]
    plans = {r.instance_id: _plan() for r in rows}
    for module in (harbor, swebench):
        monkeypatch.setattr(module, "grading_plans", lambda rows, timeout: plans)
    export_rows("harbor", rows, tmp_path / "h")
    task = tmp_path / "h" / rows[0].instance_id
    assert "--plugin" not in (task / "tests/test.sh").read_text()
    assert not (task / "tests/repogym_report.py").exists()
    assert json.loads((task / "tests/spec.json").read_text())["language"] == "javascript"
    export_rows("swebench", rows, tmp_path / "s")
    insts = [json.loads(x) for x in (tmp_path / "s/instances.jsonl").read_text().splitlines()]
    assert {(i["language"], i["log_parser"]) for i in insts} == {
        ("javascript", "parse_log_jest_json")}
    assert all("--plugin" not in i["eval_script"] for i in insts)
    export_rows("verl", rows, tmp_path / "v")
    frame = pd.read_parquet(tmp_path / "v/train.parquet")
    assert {i["language"] for i in frame["extra_info"]} == {"javascript"}
    assert all("JavaScript" in p[0]["content"] for p in frame["prompt"])
    export_rows("hf", rows, tmp_path / "d")
    assert set(datasets.load_from_disk(str(tmp_path / "d"))["language"]) == {"javascript"}


def test_a_language_without_a_grader_is_refused(tmp_path):
    row = _js_row().model_copy(update={"language": "cobol"})
    for fmt in ("harbor", "swebench"):
        with pytest.raises(InputError, match="in-container grader grades"):
            export_rows(fmt, [row], tmp_path / fmt)
