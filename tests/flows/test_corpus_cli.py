"""`repogym corpus run` and `repogym serve` through the CLI (real flow, real Docker)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from tests.conftest import TINY_PROJECT, commit_files

runner = CliRunner()


@pytest.fixture
def corpus_file(tmp_path, monkeypatch):
    with monkeypatch.context() as mp:  # the same commit as test_corpus_flow's corpa: one image
        for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
            mp.setenv(var, "2024-01-01T00:00:00Z")
        commit_files(tmp_path / "corpa", TINY_PROJECT)
    path = tmp_path / "corpus.toml"
    res = runner.invoke(app, ["corpus", "add", str(tmp_path / "corpa"), "--generators",
                              "procedural", "--max-candidates", "2", "--file", str(path)])
    assert res.exit_code == 0, res.output
    return path


@pytest.mark.docker
@pytest.mark.slow
def test_corpus_run_twice_then_nothing_is_judged_again(corpus_file, tmp_path, base_image):
    """The real console script, in its own process (its own ephemeral Prefect)."""
    env = {**os.environ, "REPOGYM_BASE_IMAGE": base_image, "REPOGYM_BASELINE_RUNS": "1",
           "REPOGYM_ORACLE_RUNS": "1", "REPOGYM_PROBES": "0", "REPOGYM_MAX_COMBINED": "0",
           "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_URL": ""}
    out = tmp_path / "out"
    cmd = [str(Path(sys.executable).parent / "repogym"), "corpus", "run", "--file",
           str(corpus_file), "--out", str(out)]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "corpa" in first.stdout and "ok" in first.stdout
    from repogym.corpus.state import StateStore
    from repogym.datasets import DatasetStore

    accepted = DatasetStore(out).instance_ids("tasks")
    judged = StateStore(out).load("corpa").judged_ids
    assert accepted and judged
    second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout + second.stderr
    assert DatasetStore(out).instance_ids("tasks") == accepted
    assert StateStore(out).load("corpa").judged_ids == judged
    row = next(line for line in second.stdout.splitlines() if "corpa" in line)
    assert [c.strip() for c in row.split("│")[3:5]] == ["2", "0"]  # candidates, judged


def test_serve_registers_a_cron_deployment(corpus_file, tmp_path):
    res = runner.invoke(app, ["serve", "--file", str(corpus_file), "--out", str(tmp_path / "o"),
                              "--cron", "30 2 * * *", "--name", "nightly", "--register-only"])
    assert res.exit_code == 0, res.output
    assert "registered deployment nightly" in res.output

    async def read():
        from prefect.client.orchestration import get_client

        async with get_client() as client:
            return await client.read_deployment_by_name("repogym-scheduled-corpus/nightly")

    deployment = asyncio.run(read())
    assert deployment.parameters["corpus_file"] == str(corpus_file.resolve())
    crons = [s.schedule.cron for s in deployment.schedules]
    assert crons == ["30 2 * * *"]


def test_serve_refuses_a_bad_cron_and_a_bad_corpus(corpus_file, tmp_path):
    res = runner.invoke(app, ["serve", "--file", str(corpus_file), "--cron", "every day",
                              "--register-only"])
    assert res.exit_code == 2 and "--cron" in res.output
    res = runner.invoke(app, ["serve", "--file", str(tmp_path / "nope.toml"), "--register-only"])
    assert res.exit_code == 2 and "error:" in res.output
