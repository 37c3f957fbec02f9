"""Per-test coverage from a real pytest-cov run, inside a real sandbox (local provider)."""

from __future__ import annotations

import pytest

from repogym.toolchains.python import parse_coverage
from tests.conftest import TINY_PROJECT, build_tiny_env, commit_files


def test_parse_coverage_drops_empty_contexts_and_phase_suffix():
    raw = b'{"files": {"pkg/a.py": {"contexts": {"3": ["", "t.py::test_a|run", "t.py::test_a|setup"], "4": [""], "9": ["t.py::test_b|run"]}}}}'
    cov = parse_coverage(raw)
    assert cov.files == {"pkg/a.py": {3: ("t.py::test_a",), 9: ("t.py::test_b",)}}
    assert cov.lines_covered_by({"t.py::test_b"}) == {"pkg/a.py": {9}}
    assert cov.import_lines == {"pkg/a.py": (3, 4)}
    assert cov.tests_for({"pkg/a.py": [9]}) == {"t.py::test_b"}
    assert cov.tests_for({"pkg/a.py": [4]}) is None  # import time: every test
    assert cov.tests_for({"pkg/a.py": [50]}) == set()  # never runs


@pytest.fixture(scope="module")
def tiny_sandbox(tmp_path_factory):
    root = tmp_path_factory.mktemp("cov")
    commit_files(root / "tinycalc", TINY_PROJECT)
    tiny = build_tiny_env("local", root / "tinycalc", root)
    with tiny.provider.open(tiny.env) as sb:
        yield tiny.toolchain, sb


def test_coverage_maps_lines_to_the_tests_that_run_them(tiny_sandbox):
    tc, sb = tiny_sandbox
    cov = tc.coverage(sb, timeout=120)
    ops = cov.files["tinycalc/ops.py"]
    assert ops[2] == ("tests/test_ops.py::test_add",)  # return a + b
    assert set(ops[6]) == {"tests/test_ops.py::test_clamp_low", "tests/test_ops.py::test_clamp_high",
                           "tests/test_ops.py::test_clamp_mid"}  # if x < lo
    assert ops[7] == ("tests/test_ops.py::test_clamp_low",)  # return lo
    assert 1 not in ops  # `def add` runs at import, in no test
    assert 1 in cov.import_lines["tinycalc/ops.py"]
