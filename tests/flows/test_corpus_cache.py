"""Prefect caching of the corpus stages whose inputs are plain values (repogym.corpus.cache):
resolve, clone and mine. Real git repositories, the session's Prefect backend, no Docker.

Where it matters, a stage runs inside a small flow and what ran and what was served from the
cache is read back from Prefect itself (task run state names); elsewhere the stage's task
runs on its own (a flow run costs about a second) and reports its state name.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from uuid import UUID

import pytest
from prefect import flow

from repogym.config import Settings
from repogym.corpus.cache import (
    checkout_intact,
    clone_key,
    code_version,
    resolve_key,
    resolved_commit,
    results_dir,
)
from repogym.corpus.config import SampleSpec
from repogym.corpus.state import RepoState
from repogym.datasets import DatasetStore
from repogym.errors import SourceError
from repogym.flows.corpus_flow import (
    IncrementalMiner,
    RepoJob,
    corpus_stage,
    resolve_source,
    selection_key,
)
from repogym.pipeline import prepare
from repogym.schemas.records import RepoSpec
from tests.conftest import TINY_PROJECT, commit_files, git
from tests.histories import build_realistic_history


def task_states(flow_run_id: UUID) -> dict[str, list[str]]:
    """Task run name -> state names, for one flow run, as Prefect recorded them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            return await client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))

    out: dict[str, list[str]] = {}
    for run in asyncio.run(read()):  # task runs are named "<task>-<suffix>"
        out.setdefault(run.name.rsplit("-", 1)[0], []).append(run.state_name or "")
    return out


@flow(name="test-clone-stage", persist_result=False)
def clone_stage(spec: RepoSpec, settings: Settings) -> tuple:
    cached: list[str] = []
    calls: list[int] = []

    def body():
        calls.append(1)
        return prepare(spec, settings)

    prepared = corpus_stage(spec, False, settings, cached)("clone", body)
    return prepared, tuple(cached), len(calls)


def run_clone(spec: RepoSpec, settings: Settings):
    state = clone_stage(spec, settings, return_state=True)
    prepared, cached, calls = state.result()
    return prepared, cached, calls, task_states(state.state_details.flow_run_id)["clone"]


@pytest.fixture
def source(tmp_path: Path) -> Path:
    commit_files(tmp_path / "calc", TINY_PROJECT)
    return tmp_path / "calc"


def edit_a_file(checkout: Path) -> None:
    (checkout / "tinycalc" / "ops.py").write_text("broken = True\n")


def commit_on_top(checkout: Path) -> None:
    commit_files(checkout, {"EXTRA": "x\n"}, message="local commit")


@pytest.mark.filterwarnings("ignore:Logger 'prefect.task_runs' attempted to send logs")
def test_clone_is_cached_and_redone_when_its_checkout_changed_or_vanished(source, tmp_path):
    settings = Settings(out=tmp_path / "out")
    spec = RepoSpec(source=str(source))
    first, cached, calls, states = run_clone(spec, settings)
    assert (cached, calls, states) == ((), 1, ["Completed"])
    again, cached, calls, states = run_clone(spec, settings)
    assert (cached, calls, states) == (("clone",), 0, ["Cached"])
    assert again.checkout == first.checkout and again.env_spec == first.env_spec
    assert again.toolchain.name == first.toolchain.name
    assert (results_dir(settings) / clone_key(spec, settings)).is_file()

    # the same key each time (the source did not move): only the check sends it back to work
    for spoil in (edit_a_file, commit_on_top, shutil.rmtree):
        spoil(first.checkout.path)
        assert not checkout_intact(first.checkout), spoil
        redo, cached, calls = clone_stage.fn(spec, settings)
        assert (cached, calls) == ((), 1), spoil
        assert redo.checkout == first.checkout and checkout_intact(redo.checkout)
        assert clone_stage.fn(spec, settings)[1:] == (("clone",), 0)


@pytest.mark.filterwarnings("ignore:Logger 'prefect.task_runs' attempted to send logs")
def test_a_new_commit_at_the_source_is_a_new_key(source, tmp_path):
    settings = Settings(out=tmp_path / "out")
    spec = RepoSpec(source=str(source))
    first, _, _ = clone_stage.fn(spec, settings)
    new = commit_files(source, {"NOTES": "x\n"}, message="second")
    moved, cached, calls = clone_stage.fn(spec, settings)
    assert (cached, calls) == ((), 1)
    assert moved.checkout.commit == new != first.checkout.commit
    other_image = settings.model_copy(update={"base_image": "another/base:1"})
    assert clone_key(spec, other_image) != clone_key(spec, settings)
    assert clone_key(spec, settings).startswith("clone-") and len(code_version()) == 16


def test_resolved_commit_of_local_and_url_sources(tmp_path, source):
    main = git(source, "rev-parse", "HEAD")
    git(source, "tag", "v1")
    git(source, "checkout", "-q", "-b", "dev")
    dev = commit_files(source, {"NOTES": "dev\n"}, message="dev work")
    git(source, "checkout", "-q", "main")
    for src in (str(source), source.as_uri()):  # a path (rev-parse), a URL (ls-remote)
        def at(commit):
            return resolved_commit(RepoSpec(source=src, commit=commit))
        assert at(None) == at("origin/main") == at("v1") == main, src
        assert at("origin/dev") == dev and at(dev.upper()) == dev
        assert at("origin/nope") is None and at("no-such-tag") is None
    assert resolved_commit(RepoSpec(source=str(tmp_path / "missing"))) is None
    assert resolved_commit(RepoSpec(source="file:///nonexistent/repo.git")) is None
    unresolvable = RepoSpec(source=str(source), commit="no-such-tag")
    assert clone_key(unresolvable, Settings(out=tmp_path / "o")) is None


@flow(name="test-resolve-stage", persist_result=False)
def resolve_stage(job: RepoJob) -> tuple:
    cached: list[str] = []
    spec = resolve_source(job, cached)
    return spec, tuple(cached)


def test_sample_resolution_is_cached_and_a_failed_download_is_not(tmp_path):
    settings = Settings(out=tmp_path / "out")
    unpacked = settings.cache_dir / "samples" / "iniconfig-2.0.0"  # what sample_repo reuses
    commit_files(unpacked, {"README": "iniconfig\n"}, message="iniconfig sdist")
    job = RepoJob(name="iniconfig", settings=settings,
                  spec=SampleSpec(requirement="iniconfig==2.0.0", name="iniconfig"))
    state = resolve_stage(job, return_state=True)
    spec, cached = state.result()
    assert spec == RepoSpec(source=str(unpacked), name="iniconfig") and cached == ()
    state = resolve_stage(job, return_state=True)
    assert state.result() == (spec, ("resolve",))
    assert task_states(state.state_details.flow_run_id)["resolve"] == ["Cached"]

    ghost = SampleSpec(requirement="repogym-no-such-project-zz9", name="ghost")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PIP_RETRIES", "0")  # fail fast when no index answers at all
        mp.setenv("PIP_DEFAULT_TIMEOUT", "15")
        with pytest.raises(SourceError, match="repogym-no-such-project-zz9: cannot download"):
            resolve_stage(RepoJob(name="ghost", settings=settings, spec=ghost))
    key = resolve_key(ghost.requirement, None, "ghost", settings.cache_dir / "samples")
    assert not (results_dir(settings) / key).exists()  # a failure is never cached
    assert sorted(p.name for p in results_dir(settings).iterdir()) == [
        resolve_key("iniconfig==2.0.0", None, "iniconfig", settings.cache_dir / "samples")]


def mine_stage(before: RepoState, spec: RepoSpec, settings: Settings) -> tuple:
    miner = IncrementalMiner(before, results_dir(settings))
    candidates = miner(prepare(spec, settings), settings, DatasetStore(settings.out))
    return candidates, tuple(miner.cached), miner.walk


@pytest.mark.filterwarnings("ignore:Logger 'prefect.task_runs' attempted to send logs")
def test_mining_is_cached_by_its_inputs(tmp_path):
    history = build_realistic_history(tmp_path / "shopcart")
    settings = Settings(out=tmp_path / "out", generators=("mined",), max_mined=3)
    spec = RepoSpec(source=str(history.root), name="shopcart")
    fresh = RepoState(repo="shopcart")
    first, cached, walk = mine_stage(fresh, spec, settings)
    assert cached == () and len(first) == 3 and walk.scanned == 6 and not walk.complete
    again, cached, walk_again = mine_stage(fresh, spec, settings)
    assert cached == ("mine",)
    assert [c.instance_id for c in again] == [c.instance_id for c in first]
    assert again == first and walk_again.scanned == walk.scanned

    marked = fresh.model_copy(update={"last_mined_commit": history.fix_commits[-2],
                                      "last_mined_selection": selection_key(settings)})
    since, cached, walk = mine_stage(marked, spec, settings)
    assert cached == () and walk.since == history.fix_commits[-2]
    assert [c.provenance["commit"] for c in since] == [history.fix_commits[-1]]
    budget = settings.model_copy(update={"max_mined": 6})
    _, cached, walk = mine_stage(fresh, spec, budget)
    assert cached == () and walk.complete and len(walk.candidates) == 5 and walk.scanned == 13
