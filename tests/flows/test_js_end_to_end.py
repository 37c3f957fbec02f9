"""The whole pipeline on real JavaScript/TypeScript histories (uvu, jest; mocha runs in the
conformance suite), then every accepted row re-checked WITHOUT repogym's grader
(:mod:`tests.js_recheck`): a fresh container of the row's image, the runner's own reporting,
FAIL_TO_PASS failing at the broken state and passing with the row's patch. The reward hacks
have tests of their own (tests/judges/test_probes_js.py, the conformance suite)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.datasets import DatasetStore
from repogym.generators.statements import leaks
from repogym.pipeline import RunSummary, run_repo
from repogym.schemas.records import RepoSpec
from tests.js_recheck import recheck

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPOS = Path(__file__).resolve().parents[3] / "shared" / "repos"
# bundle -> (generators, candidates): mined where the recent history has fixes with tests
SUBJECTS = {"lukeed+dequal": (("procedural", "mined"), 3),
            "vercel+ms": (("procedural",), 2)}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory,
           base_image: str) -> tuple[Settings, dict[str, RunSummary]]:
    root = tmp_path_factory.mktemp("js-e2e")
    out = root / "out"
    summaries = {}
    for bundle, (generators, candidates) in SUBJECTS.items():
        source = root / bundle
        subprocess.run(["git", "clone", "-q", str(REPOS / f"{bundle}.bundle"), str(source)],
                       check=True)
        settings = Settings(out=out, base_image=base_image, generators=generators,
                            max_candidates=candidates, mine_last=60, max_mined=6,
                            baseline_runs=2, oracle_runs=2, seed=1, max_combined=1,
                            probes=0)
        summaries[bundle] = run_repo(RepoSpec(source=str(source)), settings)
    return settings, summaries


def test_each_repository_yields_accepted_tasks_of_each_generator(corpus) -> None:
    settings, summaries = corpus
    rows = DatasetStore(settings.out).rows("tasks")
    assert {r.language for r in rows} == {"javascript"}
    for bundle, (generators, _) in SUBJECTS.items():
        name = bundle.replace("+", "_")
        kinds = {r.kind.value for r in rows if r.repo == name}
        assert "synthetic" in kinds, summaries[bundle]
        if "mined" in generators:
            assert "mined" in kinds, summaries[bundle]


def test_every_accepted_row_rechecked_with_the_runners_own_reporting(corpus,
                                                                     docker_client) -> None:
    settings, _ = corpus
    for row in DatasetStore(settings.out).rows("tasks"):
        recheck(docker_client, row)


def test_statements_name_the_call_and_never_quote_the_patch(corpus) -> None:
    settings, _ = corpus
    rows = DatasetStore(settings.out).rows("tasks")
    for row in rows:
        assert row.problem_statement.strip()
        assert not leaks(row.problem_statement, row.patch), row.instance_id
    synthetic = [r for r in rows if r.kind.value == "synthetic"]
    assert any("returns" in r.problem_statement or "gives" in r.problem_statement
               for r in synthetic)
