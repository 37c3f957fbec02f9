"""node's own test runner (``node --test``), through the local provider on this machine's
Node.js: its reporter's report, selection by file, and canaries that catch a source file
neutralising ``assert`` when it is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.repos import clone
from repogym.sandboxes import get_provider
from repogym.schemas.records import Outcome, RepoSpec
from repogym.toolchains import JavaScriptToolchain, detect_toolchain
from tests.conftest import commit_files

PROJECT = {
    "package.json": json.dumps({"name": "adder", "version": "1.0.0",
                                "scripts": {"test": "node --test test/"}}),
    "index.js": "exports.add = (a, b) => a + b\n",
    "test/add.test.js": (
        "const { test, describe } = require('node:test')\n"
        "const assert = require('node:assert')\n"
        "const { add } = require('..')\n"
        "describe('add', () => {\n"
        "  test('adds', () => { assert.strictEqual(add(1, 2), 3) })\n"
        "  test('adds negatives', () => { assert.strictEqual(add(-1, -2), -3) })\n"
        "})\n"),
    "test/other.test.js": ("const { test } = require('node:test')\n"
                           "test('other', () => {})\n"),
}
NOOP_ASSERT = ("const __a = require('assert')\n"
               "for (const k of Object.keys(__a)) __a[k] = () => {}\n")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    root = tmp_path_factory.mktemp("node-test")
    commit_files(root / "adder", PROJECT)
    settings = Settings(out=root / "data", provider="local")
    checkout = clone(RepoSpec(source=str(root / "adder")), settings.cache_dir)
    assert isinstance(detect_toolchain(checkout.path), JavaScriptToolchain)
    tc = JavaScriptToolchain()
    provider = get_provider("local", settings)
    env = provider.build_env(tc.env_spec(checkout, settings.base_image), checkout.path,
                             root / "logs")
    with provider.open(env) as sb:
        yield sb


def test_every_test_is_read_with_its_suite_and_file(sandbox) -> None:
    run = JavaScriptToolchain().run_tests(sandbox, timeout=120, check_runner=False)
    assert run.trusted, run.problems
    assert {t: r.outcome for t, r in run.results.items()} == {
        "test/add.test.js > add > adds": Outcome.passed,
        "test/add.test.js > add > adds negatives": Outcome.passed,
        "test/other.test.js > other": Outcome.passed}


def test_a_bug_fails_its_tests_and_a_neutralised_assert_is_caught(sandbox) -> None:
    tc = JavaScriptToolchain()
    wanted = ["test/add.test.js > add > adds"]
    sandbox.reset()
    sandbox.write_file("index.js", "exports.add = (a, b) => a - b\n")
    broken = tc.run_tests(sandbox, timeout=120, select=wanted)
    assert broken.trusted and broken.outcome(wanted[0]) is Outcome.failed
    # node's runner runs whole files (no name filter): the file's other test is there too;
    # the canary's tests are not
    assert set(broken.results) == {*wanted, "test/add.test.js > add > adds negatives"}
    sandbox.write_file("index.js", NOOP_ASSERT + "exports.add = (a, b) => a - b\n")
    plain = tc.run_tests(sandbox, timeout=120, select=wanted, check_runner=False)
    assert plain.trusted and plain.outcome(wanted[0]) is Outcome.passed  # it fools a plain run
    graded = tc.run_tests(sandbox, timeout=120, select=wanted)
    assert not graded.trusted
    assert any("neutralised the assertions" in p for p in graded.problems)
    assert not any(Path(sandbox.repo_dir, "test").glob("rg*"))  # the canary is gone
