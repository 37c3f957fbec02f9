"""Incremental mining in the corpus flow: what each run walks, and what the repository's state
then records as mined, over a real repository whose history grows and is rewritten.

A "run" here is the corpus sub-flow's mining path without the sandbox: load the state,
clone (:func:`repogym.pipeline.prepare`), the :class:`IncrementalMiner` hook, verdicts
written to the real dataset for the unseen candidates (``reject``, or ``infra_error`` where
a test says so: the judge's two outcomes that matter here), then :func:`state_after`.
The Docker corpus test (test_corpus_flow.py) checks the same walk counts end to end.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.corpus.cache import results_dir
from repogym.corpus.state import StateStore
from repogym.datasets import DatasetStore
from repogym.flows.corpus_flow import (
    IncrementalMiner,
    MiningReport,
    RepoResult,
    RepoStatus,
    state_after,
)
from repogym.pipeline import RunSummary, prepare, unseen
from repogym.schemas.records import Judged, RepoSpec, Status, Verdict
from tests.conftest import git
from tests.generators.test_mined_incremental import add_fix
from tests.histories import History, build_realistic_history

NAME = "shopcart"
# the mine task runs on its own here (a flow run per "run" would cost a second each)
pytestmark = pytest.mark.filterwarnings("ignore:Logger 'prefect.task_runs' attempted to send")


def mining_run(source: Path, settings: Settings, verdict: Status = Status.reject) -> MiningReport:
    states, store = StateStore(settings.out), DatasetStore(settings.out)
    before = states.load(NAME)
    miner = IncrementalMiner(before, results_dir(settings))
    prepared = prepare(RepoSpec(source=str(source), name=NAME), settings)
    mined = unseen(miner(prepared, settings, store), store)
    store.write([Judged(candidate=c, statement=c.statement, image="img",
                        verdict=Verdict(instance_id=c.instance_id, status=verdict,
                                        reason="test")) for c in mined])
    report = miner.report(store)
    assert report is not None
    summary = RunSummary(repo=NAME, commit=prepared.checkout.commit)
    states.save(state_after(before, RepoResult(name=NAME, status=RepoStatus.ok, summary=summary,
                                               mining=report)))
    return report


@pytest.fixture
def history(tmp_path: Path) -> History:
    return build_realistic_history(tmp_path / NAME)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(out=tmp_path / "out", generators=("mined",), max_mined=20)


def state(settings: Settings):
    return StateStore(settings.out).load(NAME)


def test_three_runs_then_a_rewritten_history(history: History, settings: Settings) -> None:
    first = mining_run(history.root, settings)
    assert (first.scanned, first.since, first.candidates) == (13, None, 5)
    assert first.up_to == history.head and state(settings).last_mined_commit == history.head
    assert state(settings).runs[-1].mined_scanned == 13

    second = mining_run(history.root, settings)
    assert (second.scanned, second.since, second.candidates) == (0, history.head, 0)
    assert state(settings).last_mined_commit == history.head

    fix = add_fix(history.root)
    third = mining_run(history.root, settings)
    assert (third.scanned, third.since, third.candidates) == (1, history.head, 1)
    assert state(settings).last_mined_commit == fix
    rows = DatasetStore(settings.out).rows("rejected", repo=NAME)
    assert sorted(r.provenance["commit"] for r in rows) == sorted([*history.fix_commits, fix])

    git(history.root, "reset", "-q", "--hard", "HEAD~1")  # force-pushed: the fix reworded
    rewritten = add_fix(history.root, "Cart.count, reworded")
    fourth = mining_run(history.root, settings)
    assert fourth.since is None and fourth.scanned == 14
    assert "not an ancestor" in (fourth.full_walk_reason or "")
    assert fourth.candidates == 1  # the five old fixes are judged already: skipped as seen
    assert state(settings).last_mined_commit == rewritten


def test_budget_cut_and_infra_errors_keep_the_marker_and_lose_nothing(
        history: History, settings: Settings) -> None:
    cut = settings.model_copy(update={"max_mined": 2})
    first = mining_run(history.root, cut)
    assert first.candidates == 2 and first.up_to is None
    assert state(settings).last_mined_commit is None  # older fixes not looked at yet
    second = mining_run(history.root, cut)  # the two judged ones are seen: the next two
    third = mining_run(history.root, cut)
    assert (second.candidates, third.candidates) == (2, 1) and third.up_to == history.head
    assert state(settings).last_mined_commit == history.head
    judged = {r.provenance["commit"] for r in DatasetStore(settings.out).rows("rejected")}
    assert judged == set(history.fix_commits)

    fix = add_fix(history.root)
    broken = mining_run(history.root, settings, verdict=Status.infra_error)
    assert (broken.scanned, broken.candidates, broken.up_to) == (1, 1, None)
    assert state(settings).last_mined_commit == history.head  # no verdict yet: kept
    retry = mining_run(history.root, settings, verdict=Status.accept)
    assert (retry.scanned, retry.since, retry.candidates) == (1, history.head, 1)
    assert state(settings).last_mined_commit == fix


def test_a_changed_selection_walks_the_whole_selection_again(
        history: History, settings: Settings) -> None:
    narrow = settings.model_copy(update={"mine_last": 3})
    first = mining_run(history.root, narrow)
    assert (first.scanned, first.candidates, first.up_to) == (3, 1, history.head)
    wide = mining_run(history.root, settings)  # mine_last 200: the older fixes are new to it
    assert wide.since is None and wide.scanned == 13 and wide.candidates == 4
    assert "selection changed" in (wide.full_walk_reason or "")
    again = mining_run(history.root, settings)
    assert (again.scanned, again.since) == (0, history.head)
