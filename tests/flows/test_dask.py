"""Scale-out: the corpus flow judging on a real Dask cluster gives the local run's verdicts.

A ``distributed.LocalCluster`` of 2 worker processes (1 thread each) judges one small
repository's candidates as ``judge-candidate`` Prefect tasks, each in its own sandbox; the
same repository judged locally (in this process) must give the same accepted set and the
same verdict for every candidate. That the Dask run really judged elsewhere is checked
with a counter on ``Judge.judge`` in this process: it sees the local run's calls, and none
of the Dask run's.
"""

from __future__ import annotations

import pytest

from repogym.config import Settings
from repogym.datasets import DatasetStore
from repogym.flows.corpus_flow import RepoJob, RepoStatus, corpus_flow
from repogym.judges.judge import Judge
from repogym.schemas.records import RepoSpec
from tests.conftest import TINY_PROJECT, commit_files

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as c:
        yield c


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask")
    mp = pytest.MonkeyPatch()
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        mp.setenv(var, "2024-01-01T00:00:00Z")  # same sha, same image in every session
    commit_files(root / "daskcalc", TINY_PROJECT)
    mp.undo()
    return root


def settings_for(root, base_image, name: str) -> Settings:
    return Settings(out=root / name, base_image=base_image, generators=("procedural",),
                    max_candidates=4, max_combined=0, baseline_runs=1, oracle_runs=1,
                    probes=0, test_timeout=60)


def verdicts(settings: Settings) -> dict[str, tuple]:
    store = DatasetStore(settings.out)
    return {r.instance_id: (r.status.value, r.reason, r.FAIL_TO_PASS, r.PASS_TO_PASS)
            for r in store.judged_rows()}


def test_dask_run_gives_the_local_accepted_set(repo, cluster, base_image, monkeypatch):
    calls: list[str] = []
    judge = Judge.judge

    def counted(self, cand):
        calls.append(cand.instance_id)
        return judge(self, cand)

    monkeypatch.setattr(Judge, "judge", counted)
    spec = RepoSpec(source=str(repo / "daskcalc"))
    local = settings_for(repo, base_image, "local")
    run = corpus_flow([RepoJob.of(spec, local)], local)
    assert run.repos[0].status is RepoStatus.ok, run.repos[0].error
    local_calls, calls[:] = len(calls), []
    assert local_calls == run.repos[0].summary.judged >= 4

    on_dask = settings_for(repo, base_image, "dask")
    drun = corpus_flow([RepoJob.of(spec, on_dask)], on_dask, dask_address=cluster.scheduler_address)
    result = drun.repos[0]
    assert result.status is RepoStatus.ok, result.error
    assert drun.dask_address == cluster.scheduler_address
    assert calls == []  # judged on the workers, not here
    assert result.summary.judged == local_calls

    here, there = verdicts(local), verdicts(on_dask)
    accepted = {i for i, v in here.items() if v[0] == "accept"}
    assert accepted and accepted == {i for i, v in there.items() if v[0] == "accept"}
    assert here == there
