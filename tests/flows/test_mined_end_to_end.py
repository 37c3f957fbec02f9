"""Mined tasks from a test-built repository with a realistic history, through the pipeline on
Docker, then every accepted row re-checked independently (docker SDK + git + JUnit XML)."""

from __future__ import annotations

import pytest

from repogym.config import Settings
from repogym.datasets import DatasetStore
from repogym.pipeline import run_repo
from repogym.schemas.records import CandidateKind, RepoSpec
from tests.flows.test_end_to_end import recheck
from tests.histories import build_realistic_history

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def mined_run(tmp_path_factory, base_image):
    root = tmp_path_factory.mktemp("mined")
    history = build_realistic_history(root / "shopcart")
    settings = Settings(out=root / "out", generators=("mined",), baseline_runs=1, oracle_runs=2,
                        max_combined=0, probes=1)
    summary = run_repo(RepoSpec(source=str(history.root)), settings)
    return history, settings, summary


def test_exactly_the_fix_commits_become_tasks(mined_run):
    history, settings, summary = mined_run
    rows = DatasetStore(settings.out).rows("tasks")
    assert all(r.kind is CandidateKind.mined for r in rows)
    assert {r.provenance["commit"] for r in rows} == set(history.fix_commits), summary
    for row in rows:
        assert row.base_commit != history.head and row.test_patch and row.patch
        assert row.FAIL_TO_PASS and row.problem_statement


def test_fixes_before_the_dependency_change_are_judged_in_the_env_that_holds_theirs(mined_run):
    """The fixes before iniconfig was added have other install files, but the HEAD env holds
    everything their recipe asks for (pip says so, offline): they are judged there, and no
    env is built for them (repogym.shared_envs; an old commit that needs what the HEAD env
    lacks gets its own: tests/test_shared_envs.py, tests/test_build_failures.py)."""
    history, settings, _ = mined_run
    rows = DatasetStore(settings.out).rows("tasks")
    images = {r.provenance["commit"]: r.image for r in rows}
    before = [c for c in history.fix_commits if history.dates[c] < history.dates[history.dep_change_commit]]
    after = [c for c in history.fix_commits if c not in before]
    assert before and after and set(images) == set(history.fix_commits)
    assert len(set(images.values())) == 1
    [name] = [d for d in settings.logs_dir.iterdir() if d.is_dir()]
    assert len([d for d in name.iterdir() if d.is_dir()]) == 1  # one env spec: HEAD's


def test_rerun_skips_commits_already_judged(mined_run):
    history, settings, _ = mined_run
    again = run_repo(RepoSpec(source=str(history.root)), settings)
    assert again.candidates == 0 and again.accepted == 0


def test_every_mined_row_rechecked_independently(mined_run, docker_client):
    _, settings, _ = mined_run
    rows = DatasetStore(settings.out).rows("tasks")
    assert rows
    for row in rows:
        recheck(docker_client, row)
