"""Runner versions the real repositories of ../shared/repos do not pin, met on projects from
the wild: vitest 4 (its reporter API lost onFinished) and uvu 0.5 with ``-r esm`` (esm loads
uvu through its own loader), mocha 3 (its commander refuses ``--no-color``; jonschlinkert/
is-number pins it). Small projects installed from the npm registry, run through the
local provider on this machine's Node.js."""

from __future__ import annotations

import json

import pytest

from repogym.config import Settings
from repogym.repos import clone
from repogym.sandboxes import get_provider
from repogym.schemas.records import Outcome, RepoSpec
from repogym.toolchains import JavaScriptToolchain
from tests.conftest import commit_files

pytestmark = pytest.mark.slow
UVU_05 = {
    "package.json": json.dumps({"name": "adder", "version": "1.0.0",
                                "scripts": {"test": "uvu -r esm test"},
                                "devDependencies": {"uvu": "0.5.6", "esm": "3.2.25"}}),
    "src/index.js": "export function add(a, b) { return a + b }\n",
    "test/index.js": ("import { test, suite } from 'uvu';\n"
                      "import * as assert from 'uvu/assert';\n"
                      "import { add } from '../src';\n\n"
                      "test('adds', () => { assert.is(add(1, 2), 3); });\n"
                      "test.run();\n\n"
                      "const neg = suite('negatives');\n"
                      "neg('adds them', () => { assert.is(add(-1, -2), -3); });\n"
                      "neg.run();\n"),
}
VITEST_4 = {
    "package.json": json.dumps({"name": "adder", "version": "1.0.0", "type": "module",
                                "scripts": {"test": "vitest run --typecheck"},
                                "devDependencies": {"vitest": "4.0.16"}}),
    "src/index.js": "export function add(a, b) { return a + b }\n",
    "test/add.test.js": ("import { describe, expect, it } from 'vitest';\n"
                         "import { add } from '../src/index.js';\n\n"
                         "describe('add', () => {\n"
                         "  it('adds', () => { expect(add(1, 2)).toBe(3); });\n"
                         "  it.skip('later', () => {});\n"
                         "});\n"),
}

MOCHA_3 = {
    "package.json": json.dumps({"name": "adder", "version": "1.0.0",
                                "scripts": {"test": "mocha"},
                                "devDependencies": {"mocha": "3.5.3"}}),
    "index.js": "module.exports = function add(a, b) { return a + b }\n",
    "test/test.js": ("var assert = require('assert');\n"
                     "var add = require('..');\n"
                     "describe('add', function () {\n"
                     "  it('adds', function () { assert.strictEqual(add(1, 2), 3); });\n"
                     "  it('adds negatives', function () { assert.equal(add(-1, -2), -3); });\n"
                     "});\n"),
}


def sandbox_of(tmp_path, files):
    commit_files(tmp_path / "project", files)
    settings = Settings(out=tmp_path / "data", provider="local")
    checkout = clone(RepoSpec(source=str(tmp_path / "project")), settings.cache_dir)
    tc = JavaScriptToolchain()
    provider = get_provider("local", settings)
    env = provider.build_env(tc.env_spec(checkout, settings.base_image), checkout.path,
                             tmp_path / "logs")
    return tc, provider.open(env)


def test_uvu_05_with_esm(tmp_path) -> None:
    tc, sandbox = sandbox_of(tmp_path, UVU_05)
    with sandbox:
        run = tc.run_tests(sandbox, timeout=120, check_runner=False)
        assert run.trusted, (run.problems, run.log_tail)
        assert {t: r.outcome for t, r in run.results.items()} == {
            "test/index.js > adds": Outcome.passed,
            "test/index.js > negatives > adds them": Outcome.passed}
        sandbox.write_file("src/index.js", "export function add(a, b) { return a - b }\n")
        broken = tc.run_tests(sandbox, timeout=120, select=["test/index.js > adds"])
        assert broken.trusted and broken.outcome("test/index.js > adds") is Outcome.failed


def test_vitest_4(tmp_path) -> None:
    tc, sandbox = sandbox_of(tmp_path, VITEST_4)
    with sandbox:
        run = tc.run_tests(sandbox, timeout=180, check_runner=False)
        assert run.trusted, (run.problems, run.log_tail)
        assert {t: r.outcome for t, r in run.results.items()} == {
            "test/add.test.js > add > adds": Outcome.passed,
            "test/add.test.js > add > later": Outcome.skipped}
        sandbox.write_file("src/index.js", "export function add(a, b) { return a - b }\n")
        broken = tc.run_tests(sandbox, timeout=180, select=["test/add.test.js > add > adds"])
        assert broken.trusted and broken.outcome("test/add.test.js > add > adds") is Outcome.failed


def test_mocha_3(tmp_path) -> None:
    tc, sandbox = sandbox_of(tmp_path, MOCHA_3)
    with sandbox:
        run = tc.run_tests(sandbox, timeout=120, check_runner=False)
        assert run.trusted, (run.problems, run.log_tail)
        assert {t: r.outcome for t, r in run.results.items()} == {
            "test/test.js > add > adds": Outcome.passed,
            "test/test.js > add > adds negatives": Outcome.passed}
        sandbox.write_file("index.js", "module.exports = function add(a, b) { return a - b }\n")
        broken = tc.run_tests(sandbox, timeout=120, select=["test/test.js > add > adds"])
        assert broken.trusted and broken.outcome("test/test.js > add > adds") is Outcome.failed
        assert "test/test.js > add > adds negatives" not in broken.results


def test_uvu_values_that_differ_only_in_colour_codes_keep_their_codes(tmp_path) -> None:
    """kleur's case: uvu's diff strips the ANSI codes, so both sides print the same; the
    reporter adds both values JSON-escaped and the statement reader shows the codes.
    (CommonJS, no ``esm``: its compile cache lives in the vendored ``node_modules`` that
    :data:`UVU_05`'s environment would share.)"""
    from repogym.toolchains.javascript.failures import read_failure

    test = ("const { test } = require('uvu');\nconst assert = require('uvu/assert');\n"
            "const { red } = require('../src');\n\n"
            "test('red', () => {\n  assert.is(red('foo'), '\\x1b[31mfoo\\x1b[39m');\n});\n"
            "test('throws a string', () => { throw 'plain'; });\n"  # not an object: still read
            "test.run();\n")
    files = {"package.json": json.dumps({"name": "colours", "version": "1.0.0",
                                         "scripts": {"test": "uvu test"},
                                         "devDependencies": {"uvu": "0.5.6"}}),
             "src/index.js": "exports.red = (s) => '\\x1b[31m' + s + '\\x1b[39m';\n",
             "test/index.js": test}
    tc, sandbox = sandbox_of(tmp_path, files)
    with sandbox:
        sandbox.write_file("src/index.js", "exports.red = (s) => '\\x1b[31m' + s + '\\x1b[0m';\n")
        run = tc.run_tests(sandbox, timeout=120, check_runner=False)
        assert "test/index.js > red" in run.results, (run.results, run.problems, run.log_tail)
        result = run.results["test/index.js > red"]
        assert result.outcome is Outcome.failed, (run.problems, run.log_tail)
        assert run.outcome("test/index.js > throws a string") is Outcome.failed
        got = read_failure(result.message, "test/index.js", {"test/index.js": test})
        assert got and (got.call, got.actual, got.expected) == (
            "red('foo')", '"\\u001b[31mfoo\\u001b[0m"', '"\\u001b[31mfoo\\u001b[39m"'), result.message
