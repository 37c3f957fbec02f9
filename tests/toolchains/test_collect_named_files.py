"""Test files the runner's configuration does not name are collected when a run asks for
them (a test patch's files) or for their tests: python-slugify kept its tests in ``test.py``
before its configuration named it, so pytest collected nothing at those commits and every
fix there was judged on an empty run. A real pytest process with the report plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from repogym.toolchains.python import parse_report

UNNAMED = '''
import unittest

def test_function():
    assert True

class TestCase(unittest.TestCase):
    def test_method(self):
        self.assertEqual(1, 1)
'''

NAMED = "def test_named():\n    assert True\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "test.py").write_text(UNNAMED)  # default python_files: test_*.py, *_test.py
    (tmp_path / "test_named.py").write_text(NAMED)
    (tmp_path / "helpers.py").write_text("def test_not_a_test_file():\n    pass\n")
    return tmp_path


def run(root: Path, **config) -> dict[str, str]:
    report, path = root / "r.jsonl", root / "cfg.json"
    report.unlink(missing_ok=True)
    path.write_text(json.dumps({"report": str(report), "nonce": "N", "select": None, **config}))
    env = {**os.environ, "REPOGYM_PLUGIN_CONFIG": str(path),
           "PYTHONPATH": str(resources.files("repogym.toolchains.plugins"))}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "repogym_report", "-q",
                           "-p", "no:cacheprovider"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120)
    result = parse_report(report.read_text(), nonce="N", exit_code=proc.returncode, duration=1)
    assert result.trusted, (result.problems, proc.stdout[-2000:])
    return {nodeid: res.outcome.value for nodeid, res in result.results.items()}


def test_the_configuration_alone_collects_only_named_files(project):
    assert run(project) == {"test_named.py::test_named": "passed"}


def test_files_asked_for_are_collected_once_with_the_rest(project):
    assert run(project, collect=["test.py", "test_named.py"]) == {
        "test.py::test_function": "passed", "test.py::TestCase::test_method": "passed",
        "test_named.py::test_named": "passed"}


def test_the_files_of_tests_asked_for_are_collected(project):
    assert run(project, select=["test.py::TestCase::test_method"]) == {
        "test.py::TestCase::test_method": "passed"}


def test_only_the_files_asked_for(project):
    """``helpers.py`` is not asked for, and a name that is no Python file is ignored."""
    assert run(project, collect=["test.py", "README.md"]) == {
        "test.py::test_function": "passed", "test.py::TestCase::test_method": "passed",
        "test_named.py::test_named": "passed"}
