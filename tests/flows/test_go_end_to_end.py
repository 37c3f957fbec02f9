"""The whole pipeline on a real Go history (google/uuid): synthetic bugs from the go_
mutators and mined fixes, every accepted row then re-checked WITHOUT repogym's runner or
image (:mod:`tests.go_recheck`: a fresh clone, the host's own ``go test -json``). The reward
hacks have tests of their own (tests/judges/test_probes_go.py, the conformance suite)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.datasets import DatasetStore
from repogym.generators.statements import leaks
from repogym.pipeline import run_repo
from repogym.schemas.records import RepoSpec
from tests.go_recheck import recheck

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPOS = Path(__file__).resolve().parents[3] / "shared" / "repos"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, base_image: str):
    root = tmp_path_factory.mktemp("go-e2e")
    source = root / "uuid"
    subprocess.run(["git", "clone", "-q", str(REPOS / "google+uuid.bundle"), str(source)],
                   check=True)
    settings = Settings(out=root / "out", base_image=base_image,
                        generators=("procedural", "mined"), max_candidates=4, mine_last=40,
                        max_mined=8, baseline_runs=2, oracle_runs=2, seed=3, max_combined=0,
                        probes=0)
    summary = run_repo(RepoSpec(source=str(source)), settings)
    return root, source, settings, summary


def test_both_generators_yield_accepted_go_tasks(corpus) -> None:
    _root, _source, settings, summary = corpus
    rows = list(DatasetStore(settings.out).rows("tasks"))
    assert summary.accepted == len(rows) >= 2
    kinds = {r.instance_id.split(".")[2] for r in rows}
    assert kinds == {"synthetic", "mined"}, kinds
    assert all(r.language == "go" for r in rows)
    assert all("::Test" in t or "::Example" in t or "::Fuzz" in t
               for r in rows for t in r.FAIL_TO_PASS)


def test_every_accepted_row_rechecked_with_go_test(corpus) -> None:
    root, source, settings, _summary = corpus
    for row in DatasetStore(settings.out).rows("tasks"):
        recheck(source, root, row)


def test_statements_never_quote_the_patch_and_name_go_functions(corpus) -> None:
    _root, _source, settings, _summary = corpus
    for row in DatasetStore(settings.out).rows("tasks"):
        assert not leaks(row.problem_statement, row.patch), row.instance_id
        assert ".go." not in row.problem_statement, row.problem_statement
