"""``repogym corpus status``: each repository's standing, from the state and the dataset."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from repogym.cli import app
from repogym.corpus import CorpusConfig
from repogym.corpus.state import RepoState, RunRecord, StateStore
from repogym.corpus.status import corpus_standing
from repogym.datasets import DatasetStore
from repogym.schemas.records import Status
from tests.corpus.test_config import make_repo
from tests.datasets.test_schema import make_judged


def seed(out: Path) -> None:
    """alpha ran twice (the second run failed), beta never ran, gamma left the corpus."""
    states = StateStore(out)
    alpha = RepoState(repo="alpha").with_run(
        RunRecord(commit="a" * 40, image="img", judged=3, accepted=1), judged=["x", "y", "z"],
        mined_up_to="a" * 40, mined_selection="all")
    alpha = alpha.with_run(RunRecord(commit="b" * 40, error="alpha: install step failed"))
    states.save(alpha)
    states.save(RepoState(repo="gamma").with_run(RunRecord(commit="c" * 40), judged=["w"]))
    DatasetStore(out).write([make_judged(1, repo="alpha"), make_judged(2, repo="alpha"),
                             make_judged(3, repo="alpha", status=Status.reject),
                             make_judged(4, repo="alpha", status=Status.infra_error),
                             make_judged(5, repo="gamma", status=Status.review)])


def test_standing_reads_state_and_dataset(tmp_path: Path) -> None:
    seed(tmp_path)
    alpha, beta, gamma = corpus_standing(["alpha", "beta"], tmp_path)
    assert (alpha.repo, alpha.in_corpus, alpha.runs, alpha.judged) == ("alpha", True, 2, 3)
    assert alpha.last_error == "alpha: install step failed"
    assert alpha.last_commit == alpha.last_mined_commit == "a" * 40  # from the good run
    assert (alpha.tasks, alpha.rejected, alpha.infra) == (2, 1, 1)
    assert (beta.in_corpus, beta.runs, beta.last_run, beta.tasks) == (True, 0, None, 0)
    assert (gamma.in_corpus, gamma.last_error, gamma.rejected) == (False, None, 1)


def test_status_command(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "data"
    seed(out)
    monkeypatch.chdir(tmp_path)
    make_repo(tmp_path / "alpha", ())
    file = tmp_path / "corpus.toml"
    CorpusConfig.from_data({"repo": [{"source": "alpha"}]}).save(file)
    run = CliRunner().invoke(app, ["corpus", "status", "--file", str(file), "--out", str(out)],
                             env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert run.exit_code == 0, run.output
    assert "alpha: last error: alpha: install step failed" in run.stdout
    assert "gamma (removed)" in run.stdout
    run = CliRunner().invoke(app, ["corpus", "status", "--file", str(file), "--out", str(out),
                                   "--json"])
    rows = {r["repo"]: r for r in json.loads(run.stdout)}
    assert set(rows) == {"alpha", "gamma"} and rows["alpha"]["tasks"] == 2
    missing = CliRunner().invoke(app, ["corpus", "status", "--file", str(tmp_path / "nope.toml")])
    assert missing.exit_code != 0 and "nope.toml" in missing.output
