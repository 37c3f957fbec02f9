"""One bad entry of a corpus file fails only itself, and a rerun's plain-valued stages are
served from Prefect's cache. On Docker, through the corpus file as ``repogym corpus run``
reads it (``CorpusConfig.load`` -> ``jobs_from_config`` -> ``corpus_flow``).

The corpus: ``corpa`` (a working local repository; the same commit as test_corpus_flow's,
so the same env image), ``ghost`` (a PyPI sample that does not exist: pip really fails to
download it) and ``gone`` (a local path deleted after it was added).
"""

from __future__ import annotations

import asyncio
import shutil
import time

import pytest

from repogym.config import Settings
from repogym.corpus.config import CorpusConfig, SampleSpec
from repogym.flows.corpus_flow import RepoStatus, corpus_flow, jobs_from_config
from tests.conftest import TINY_PROJECT, commit_files

pytestmark = [pytest.mark.docker, pytest.mark.slow]

GHOST = "repogym-no-such-project-zz9"


def task_states(flow_run_id: str) -> dict[str, list[str]]:
    """Task run name -> state names of one flow run, read from Prefect."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            return await client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))

    out: dict[str, list[str]] = {}
    for run in asyncio.run(read()):
        out.setdefault(run.name.rsplit("-", 1)[0], []).append(run.state_name or "")
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory, base_image):
    root = tmp_path_factory.mktemp("isolation")
    mp = pytest.MonkeyPatch()
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        mp.setenv(var, "2024-01-01T00:00:00Z")
    commit_files(root / "corpa", TINY_PROJECT)
    commit_files(root / "gone", TINY_PROJECT)
    mp.setenv("PIP_RETRIES", "0")  # no index at all must fail fast too
    mp.setenv("PIP_DEFAULT_TIMEOUT", "15")
    corpus = root / "corpus.toml"
    CorpusConfig.from_data({"repo": [{"source": "corpa"}, {"sample": GHOST, "name": "ghost"},
                                     {"source": "gone"}]}, base_dir=root).save(corpus)
    shutil.rmtree(root / "gone")
    settings = Settings(out=root / "out", base_image=base_image, generators=("mined",),
                        baseline_runs=1, max_combined=0, test_timeout=60)
    out = []
    try:
        for _ in range(2):
            start = time.monotonic()
            jobs = jobs_from_config(CorpusConfig.load(corpus, check_paths=False), settings)
            planned = time.monotonic() - start
            out.append((jobs, planned, corpus_flow(jobs, settings)))
    finally:
        mp.undo()
    return out


def test_jobs_are_planned_without_fetching_anything(runs):
    jobs, planned, _ = runs[0]
    assert [j.name for j in jobs] == ["corpa", "ghost", "gone"]
    assert jobs[1].spec == SampleSpec(requirement=GHOST, name="ghost")
    assert planned < 1.0  # no download was attempted (pip alone takes longer)


def test_a_bad_entry_fails_only_itself_with_a_clear_error(runs):
    for _, _, result in runs:
        by = result.by_name()
        assert result.failed == ["ghost", "gone"]
        assert by["corpa"].status is RepoStatus.ok, by["corpa"].error
        assert by["corpa"].summary.baseline_tests == 6
        assert by["ghost"].error.startswith(f"ghost: sample {GHOST}: cannot download its sdist")
        assert by["gone"].error.endswith("/gone: no such path"), by["gone"].error
        assert by["ghost"].flow_run_id and task_states(by["ghost"].flow_run_id) == {
            "resolve": ["Failed"]}  # no clone, no build: the download failed, nothing else


def test_the_rerun_serves_clone_from_the_cache_with_the_same_results(runs):
    first, second = (r[2].by_name()["corpa"] for r in runs)
    assert first.cached_stages == () and second.cached_stages == ("clone",)
    assert task_states(first.flow_run_id)["clone"] == ["Completed"]
    assert task_states(second.flow_run_id)["clone"] == ["Cached"]
    assert second.summary.commit == first.summary.commit
    assert second.summary.image == first.summary.image and second.image_reused
    assert second.baseline_cached
    assert (first.mining.scanned, first.mining.since) == (1, None)  # the root commit
    assert (second.mining.scanned, second.mining.since) == (0, first.summary.commit)
