"""`repogym run` on bad input: one line naming the cause, non-zero exit, nothing half-written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker


def run_cli(*args: str) -> tuple[int, str]:
    """The real command in its own process, talking to the session's Prefect server."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value() or "",
           "REPOGYM_PROBES": "0"}  # the probe set: tests/judges
    proc = subprocess.run([sys.executable, "-m", "repogym", "run", *args], env=env,
                          capture_output=True, text=True, timeout=900)
    return proc.returncode, proc.stdout + proc.stderr


def error_lines(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.startswith("error:")]


def no_dataset_written(out: Path) -> bool:
    return not (out / "tasks").exists() and not (out / "rejected").exists()


def test_path_that_is_not_a_git_repo(tmp_path, base_image):
    (tmp_path / "plain").mkdir()
    code, out = run_cli(str(tmp_path / "plain"), "--out", str(tmp_path / "o"))
    assert code == 1 and len(error_lines(out)) == 1 and "not a git repository" in out
    assert "Traceback" not in out and no_dataset_written(tmp_path / "o")


def test_url_that_cannot_be_cloned(tmp_path, base_image):
    code, out = run_cli("file:///nowhere/repo.git", "--out", str(tmp_path / "o"))
    assert code == 1 and "cannot clone" in out and "Traceback" not in out
    assert no_dataset_written(tmp_path / "o")


def test_repo_with_no_tests(tmp_path, make_git_repo, base_image):
    src = make_git_repo({"setup.py": "from setuptools import setup\nsetup(name='x')\n",
                         "x/__init__.py": "def f():\n    return 1\n"}, name="notests")
    code, out = run_cli(str(src), "--out", str(tmp_path / "o"))
    assert code == 1 and "no test files" in out and "Traceback" not in out
    assert no_dataset_written(tmp_path / "o")


def test_repo_that_fails_to_install_names_the_step_and_keeps_the_log(tmp_path, make_git_repo,
                                                                     base_image):
    src = make_git_repo({"setup.py": "raise SystemExit('this package cannot be built')\n",
                         "tests/test_x.py": "def test_x():\n    assert True\n"}, name="badinstall")
    code, out = run_cli(str(src), "--out", str(tmp_path / "o"))
    assert code == 1 and "Traceback" not in out
    [line] = error_lines(out)
    assert "badinstall" in line and "install step failed" in line and "pip install" in line
    logs = list((tmp_path / "o" / "logs").rglob("*.log"))
    assert any("cannot be built" in p.read_text() for p in logs)
    assert no_dataset_written(tmp_path / "o")


def test_one_bad_repo_does_not_stop_the_others(tmp_path, tiny_repo, base_image):
    (tmp_path / "plain").mkdir()
    code, out = run_cli(str(tmp_path / "plain"), str(tiny_repo), "--out", str(tmp_path / "o"),
                        "--max-candidates", "3", "--runs", "1")
    assert code == 1 and len(error_lines(out)) == 1
    assert "tinycalc" in out and "accepted" in out
    assert (tmp_path / "o" / "runs" / "tinycalc.json").exists()
