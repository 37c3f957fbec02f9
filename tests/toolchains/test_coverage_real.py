"""Per-test coverage from a real pytest-cov run, inside a real sandbox (local provider)."""

from __future__ import annotations

import pytest

from repogym.toolchains.python import parse_coverage_db
from tests.conftest import TINY_PROJECT, build_tiny_env, commit_files


def coverage_db(tmp_path, rows: dict[str, dict[str, list[int]]]) -> bytes:
    """A coverage.py data file (its tables that hold lines): context -> file -> lines."""
    import sqlite3

    path = tmp_path / ".coverage"
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE file (id INTEGER PRIMARY KEY, path TEXT);"
                      "CREATE TABLE context (id INTEGER PRIMARY KEY, context TEXT);"
                      "CREATE TABLE line_bits (file_id INTEGER, context_id INTEGER, "
                      "numbits BLOB)")
    files: dict[str, int] = {}
    for c_id, (context, by_file) in enumerate(rows.items(), start=1):
        con.execute("INSERT INTO context VALUES (?, ?)", (c_id, context))
        for path_, lines in by_file.items():
            f_id = files.setdefault(path_, len(files) + 1)
            con.execute("INSERT OR IGNORE INTO file VALUES (?, ?)", (f_id, path_))
            bits = bytearray(max(lines) // 8 + 1)
            for line in lines:
                bits[line // 8] |= 1 << (line % 8)
            con.execute("INSERT INTO line_bits VALUES (?, ?, ?)", (f_id, c_id, bytes(bits)))
    con.commit()
    con.close()
    return path.read_bytes()


def test_parse_coverage_drops_empty_contexts_and_phase_suffix(tmp_path):
    cov = parse_coverage_db(coverage_db(tmp_path, {
        "": {"pkg/a.py": [3, 4]}, "t.py::test_a|run": {"pkg/a.py": [3]},
        "t.py::test_a|setup": {"pkg/a.py": [3]}, "t.py::test_b|run": {"pkg/a.py": [9]}}))
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
