"""The launcher: the report plugin first, configuration pinned to the committed tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

from repogym.toolchains.pytest_report import parse_report
from tests.conftest import commit_files

PLUGINS = resources.files("repogym.toolchains.plugins")
SUITE = "def test_one():\n    assert True\n\n\ndef test_two():\n    assert True\n"


def launch(repo: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    report, config = tmp_path / "r.jsonl", tmp_path / "cfg.json"
    config.write_text(json.dumps({"report": str(report), "nonce": "N"}))
    env = {**os.environ, "PYTHONPATH": str(PLUGINS), "REPOGYM_PLUGIN_CONFIG": str(config),
           "PYTEST_ADDOPTS": ""}
    proc = subprocess.run([sys.executable, str(PLUGINS / "repogym_launch.py"), "repogym_report",
                           "-q", "-p", "no:cacheprovider"], cwd=repo, env=env,
                          capture_output=True, text=True)
    return proc, report


def ran(proc: subprocess.CompletedProcess, report: Path) -> set[str]:
    run = parse_report(report.read_text() if report.exists() else "", nonce="N",
                       exit_code=proc.returncode, duration=1.0)
    assert run.trusted, (run.problems, proc.stdout[-2000:], proc.stderr[-2000:])
    return set(run.passing())


def test_a_suite_that_turns_warnings_into_errors_still_runs(tmp_path):
    """The plugin is imported before pytest starts; pytest must not warn that it cannot
    rewrite it (``filterwarnings = error`` would stop the run)."""
    repo = tmp_path / "repo"
    commit_files(repo, {"pytest.ini": "[pytest]\nfilterwarnings = error\n",
                        "test_a.py": SUITE})
    proc, report = launch(repo, tmp_path)
    assert ran(proc, report) == {"test_a.py::test_one", "test_a.py::test_two"}


def test_a_config_file_nobody_committed_is_never_read(tmp_path):
    repo = tmp_path / "repo"
    commit_files(repo, {"setup.cfg": "[tool:pytest]\nmarkers = slow\n", "test_a.py": SUITE})
    (repo / "pytest.toml").write_text('[pytest]\naddopts = ["-k", "one"]\n')  # not committed
    (repo / "pytest.ini").write_text("[pytest]\naddopts = -k one\n")
    proc, report = launch(repo, tmp_path)
    assert ran(proc, report) == {"test_a.py::test_one", "test_a.py::test_two"}


def test_the_committed_config_is_the_one_pytest_reads(tmp_path):
    repo = tmp_path / "repo"
    commit_files(repo, {"pyproject.toml": '[tool.pytest.ini_options]\npython_files = ["check_*.py"]\n',
                        "check_a.py": SUITE, "test_b.py": SUITE})
    proc, report = launch(repo, tmp_path)
    assert ran(proc, report) == {"check_a.py::test_one", "check_a.py::test_two"}


def test_without_git_the_run_stops_rather_than_guess(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text(SUITE)
    proc, report = launch(repo, tmp_path)
    assert proc.returncode != 0 and "cannot read the committed tree" in proc.stderr
    assert not report.exists() or '"finish"' not in report.read_text()
