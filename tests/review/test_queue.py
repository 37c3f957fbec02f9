"""The review queue on real SQLite, real PostgreSQL (each test on both: ``db_url``) and real
Parquet: import, decisions, races, crash repair."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.dialects import postgresql
from sqlalchemy.schema import CreateTable

from repogym.datasets.review import (
    REVIEW_ITEMS,
    ReviewConflict,
    ReviewQueue,
    ReviewState,
    UnknownReviewItem,
    age_text,
    default_url,
)
from repogym.datasets.store import DatasetStore
from repogym.errors import ConfigError, DatasetError, InputError
from repogym.schemas.records import Status
from tests.review.conftest import judged, sqlite_only, write_flagged

# spawn, not fork: the suite may run threads (a Prefect server, uvicorn) a fork would copy
SPAWN = multiprocessing.get_context("spawn")


# -- import ---------------------------------------------------------------------------

def test_sync_imports_only_review_rows_once(queue: ReviewQueue, flagged_ids: list[str]) -> None:
    assert queue.sync().imported == 3
    assert queue.sync().imported == 0
    items = queue.list("all")
    assert [i.instance_id for i in items] == flagged_ids
    assert all(i.state is ReviewState.pending and i.reviewer == "" for i in items)


def test_item_keeps_the_whole_flagged_row(queue: ReviewQueue, dataset: Path) -> None:
    stored = {r.instance_id: r for r in DatasetStore(dataset).rows("rejected")}
    for item in queue.list():
        assert item.task == stored[item.instance_id]
        assert item.reason == "statement_leak" and item.detail == item.task.detail
        assert item.flagged_at == item.task.created_at


def test_newly_flagged_rows_appear_on_next_list(queue: ReviewQueue, dataset: Path) -> None:
    assert len(queue.list()) == 3
    new = write_flagged(dataset, 2, start=10, reason="probe:conftest_force_pass")
    pending = queue.list()
    assert [i.instance_id for i in pending][-2:] == new
    assert {i.reason for i in pending if i.instance_id in new} == {"probe:conftest_force_pass"}


def test_sync_survives_files_replaced_mid_scan(queue: ReviewQueue, flagged_ids: list[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction between listing and reading: the rows move to new files and the listed
    ones vanish. The scan starts again and imports every row once."""
    real, moved = queue.store.part_files, list[Path]()

    def list_then_compact(table: str = "tasks", repo: str | None = None) -> list[Path]:
        listed = real(table, repo)  # type: ignore[arg-type]
        if table == "rejected" and not moved:
            for n, path in enumerate(listed):
                shutil.copyfile(path, path.with_name(f"part-29991231T000000000000Z-m{n}.parquet"))
                path.unlink()
                moved.append(path)
        return listed

    monkeypatch.setattr(queue.store, "part_files", list_then_compact)
    assert queue.sync().imported == 3 and moved
    assert [i.instance_id for i in queue.list()] == flagged_ids


def test_concurrent_syncs_import_each_row_once(tmp_path: Path, db_url: str | None) -> None:
    root = tmp_path / "data"
    ids = write_flagged(root, 40)
    ReviewQueue(DatasetStore(root), db_url).close()  # create the table before the race
    barrier, results = SPAWN.Barrier(4), SPAWN.Queue()
    procs = [SPAWN.Process(target=_sync_worker, args=(str(root), db_url, barrier, results))
             for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    outcomes = [results.get(timeout=5) for _ in procs]
    assert all(isinstance(n, int) for n in outcomes), outcomes
    assert sum(outcomes) == 40  # each row inserted by exactly one process
    with ReviewQueue(DatasetStore(root), db_url) as queue:
        assert sorted(i.instance_id for i in queue.list("all")) == sorted(ids)


def _sync_worker(root: str, url: str | None, barrier: Any, results: Any) -> None:
    try:
        with ReviewQueue(DatasetStore(Path(root)), url) as queue:
            barrier.wait(30)
            results.put(queue.sync().imported)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        results.put(repr(exc))


# -- reading ----------------------------------------------------------------------------

def test_list_puts_pending_first_and_filters(queue: ReviewQueue,
                                             flagged_ids: list[str]) -> None:
    queue.reject(flagged_ids[0], "bob", "duplicate of another task")
    queue.approve(flagged_ids[1], "alice")
    assert [i.instance_id for i in queue.list("all")] == [flagged_ids[2], flagged_ids[1],
                                                          flagged_ids[0]]
    assert [i.instance_id for i in queue.list("pending")] == [flagged_ids[2]]
    assert [i.instance_id for i in queue.list("approved")] == [flagged_ids[1]]
    assert [i.instance_id for i in queue.list("rejected")] == [flagged_ids[0]]


def test_unknown_status_and_id_are_clear_errors(queue: ReviewQueue) -> None:
    with pytest.raises(InputError, match="valid: pending, approved, rejected, all"):
        queue.list("done")
    with pytest.raises(UnknownReviewItem, match="nope: not in the review queue"):
        queue.get("nope")
    accepted = judged(51).candidate.instance_id  # in the dataset, but never flagged
    with pytest.raises(UnknownReviewItem):
        queue.approve(accepted, "alice")


def test_get_imports_a_row_flagged_after_the_last_sync(queue: ReviewQueue,
                                                       dataset: Path) -> None:
    queue.sync()
    [new] = write_flagged(dataset, 1, start=20)
    assert queue.get(new).state is ReviewState.pending


def test_age_text() -> None:
    from datetime import datetime, timedelta, timezone
    now = datetime(2024, 1, 2, tzinfo=timezone.utc)
    assert [age_text(now - timedelta(seconds=s), now) for s in (5, 300, 7200, 3 * 86400)] == \
        ["5s", "5m", "2h", "3d"]


# -- decisions --------------------------------------------------------------------------

def test_approve_moves_the_task_into_the_dataset(queue: ReviewQueue, dataset: Path,
                                                 flagged_ids: list[str]) -> None:
    store = DatasetStore(dataset)
    before = {r.instance_id: r for r in store.rows("rejected")}[flagged_ids[0]]
    item = queue.approve(flagged_ids[0], "alice", "the leak is only the function name")
    assert item.state is ReviewState.approved and item.published and item.reviewer == "alice"
    [row] = [r for r in store.rows("tasks") if r.instance_id == flagged_ids[0]]
    assert row.status is Status.accept and row.reason == ""
    assert row.detail == "approved by alice in manual review (flagged statement_leak)"
    assert row.evidence["review_reviewer"] == "alice"
    assert row.evidence["review_note"] == "the leak is only the function name"
    assert row.evidence["review_reason"] == "statement_leak"
    assert row.evidence["review_detail"] == before.detail
    assert row.evidence["oracle_runs"] == "3"  # the judge's evidence is kept
    for column in ("bug_patch", "patch", "test_patch", "problem_statement", "FAIL_TO_PASS",
                   "PASS_TO_PASS", "image", "base_commit", "files", "lines", "provenance"):
        assert getattr(row, column) == getattr(before, column), column
    assert store.manifest().tables["tasks"].statuses == {"accept": 2}  # type: ignore[union-attr]


def test_reject_records_who_and_why_and_writes_nothing(queue: ReviewQueue, dataset: Path,
                                                       flagged_ids: list[str],
                                                       db_url: str | None) -> None:
    tasks_before = DatasetStore(dataset).instance_ids("tasks")
    item = queue.reject(flagged_ids[1], "bob", "statement gives the fix away")
    assert (item.state, item.reviewer, item.note) == (ReviewState.rejected, "bob",
                                                      "statement gives the fix away")
    assert item.decided_at is not None and not item.published
    assert DatasetStore(dataset).instance_ids("tasks") == tasks_before
    with ReviewQueue(DatasetStore(dataset), db_url) as other:  # durable: a new connection sees it
        assert other.get(flagged_ids[1]).note == "statement gives the fix away"


def test_second_decision_is_a_conflict_naming_the_first(queue: ReviewQueue,
                                                        flagged_ids: list[str]) -> None:
    queue.reject(flagged_ids[0], "bob", "no")
    with pytest.raises(ReviewConflict, match="already rejected by bob") as info:
        queue.approve(flagged_ids[0], "alice")
    assert isinstance(info.value, InputError)
    assert (info.value.reviewer, info.value.state) == ("bob", ReviewState.rejected)
    assert queue.get(flagged_ids[0]).reviewer == "bob"


@pytest.mark.parametrize("reviewer, note, message", [
    ("", "x", "reviewer name is required"),
    ("   ", "x", "reviewer name is required"),
    ("a\nb", "x", "one line"),
    ("x" * 256, "x", "one line of at most 255"),
    ("bob", "", "note saying why is required"),
])
def test_bad_reviewer_or_note_is_refused(queue: ReviewQueue, flagged_ids: list[str],
                                         reviewer: str, note: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        queue.reject(flagged_ids[0], reviewer, note)
    assert queue.get(flagged_ids[0]).state is ReviewState.pending


# -- races ------------------------------------------------------------------------------

ROUNDS = 25
CONTENDERS = 4  # processes; even ones approve, odd ones reject


def test_racing_processes_record_exactly_one_decision(tmp_path: Path,
                                                      db_url: str | None) -> None:
    root = tmp_path / "data"
    ids = write_flagged(root, ROUNDS)
    with ReviewQueue(DatasetStore(root), db_url) as queue:
        queue.sync()
    barrier, results = SPAWN.Barrier(CONTENDERS), SPAWN.Queue()
    procs = [SPAWN.Process(target=_race_worker,
                           args=(str(root), db_url, ids, n, barrier, results))
             for n in range(CONTENDERS)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in range(ROUNDS * CONTENDERS)]
    for p in procs:
        p.join(30)
    _check_race(root, db_url, ids, outcomes)


def _race_worker(root: str, url: str | None, ids: list[str], n: int, barrier: Any,
                 results: Any) -> None:
    with ReviewQueue(DatasetStore(Path(root)), url) as queue:
        for iid in ids:
            barrier.wait(60)
            results.put(_contend(queue, iid, n))


def _contend(queue: ReviewQueue, iid: str, n: int) -> tuple[str, str, str, str]:
    """One contender's attempt: (id, who, won|lost|error, winner named by the conflict)."""
    who = f"reviewer{n}"
    try:
        if n % 2 == 0:
            queue.approve(iid, who, f"ok from {who}")
        else:
            queue.reject(iid, who, f"no from {who}")
        return iid, who, "won", who
    except ReviewConflict as exc:
        return iid, who, "lost", exc.reviewer
    except Exception as exc:  # noqa: BLE001 - any other failure fails the test
        return iid, who, "error", repr(exc)


def _check_race(root: Path, url: str | None, ids: list[str],
                outcomes: list[tuple[str, str, str, str]]) -> None:
    assert not [o for o in outcomes if o[2] == "error"], outcomes
    winners = {iid: [o[1] for o in outcomes if o[0] == iid and o[2] == "won"] for iid in ids}
    assert all(len(w) == 1 for w in winners.values()), winners
    for iid, who, result, named in outcomes:
        assert named == winners[iid][0], (iid, who, result, named)  # the loser learns who won
    approved = {iid for iid, [who] in winners.items() if int(who[-1]) % 2 == 0}
    with ReviewQueue(DatasetStore(root), url) as queue:
        for item in queue.list("all"):
            assert item.reviewer == winners[item.instance_id][0]
            assert (item.state is ReviewState.approved) == (item.instance_id in approved)
            assert item.published == (item.instance_id in approved)
    rows = DatasetStore(root).rows("tasks")
    assert Counter(r.instance_id for r in rows) == Counter(approved)  # each approval once


def test_racing_threads_on_one_shared_queue(tmp_path: Path, db_url: str | None) -> None:
    """The web server's case: one ReviewQueue, many request threads."""
    root = tmp_path / "data"
    ids = write_flagged(root, 15)
    outcomes: list[tuple[str, str, str, str]] = []
    barrier = threading.Barrier(6)
    with ReviewQueue(DatasetStore(root), db_url) as queue:
        queue.sync()

        def worker(n: int) -> None:
            for iid in ids:
                barrier.wait(60)
                outcomes.append(_contend(queue, iid, n))

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert len(outcomes) == 15 * 6
    _check_race(root, db_url, ids, outcomes)


# -- crash repair -----------------------------------------------------------------------

def _approve_then_die(root: str, url: str | None, iid: str) -> None:
    queue = ReviewQueue(DatasetStore(Path(root)), url)
    queue.store.write = lambda *a, **k: os._exit(17)  # type: ignore[method-assign]
    queue.approve(iid, "carol", "crashes before the store write")


def test_crash_between_decision_and_store_write_is_repaired_by_sync(
        queue: ReviewQueue, dataset: Path, flagged_ids: list[str], db_url: str | None) -> None:
    queue.sync()
    child = SPAWN.Process(target=_approve_then_die,
                          args=(str(dataset), db_url, flagged_ids[2]))
    child.start()
    child.join(30)
    assert child.exitcode == 17  # the process really died mid-approval
    store = DatasetStore(dataset)
    assert flagged_ids[2] not in store.instance_ids("tasks")
    item = queue.get(flagged_ids[2])
    assert (item.state, item.reviewer, item.published) == (ReviewState.approved, "carol", False)
    with pytest.raises(ReviewConflict, match="already approved by carol"):
        queue.reject(flagged_ids[2], "dave", "too late")
    result = queue.sync()
    assert result.published == 1
    [row] = [r for r in store.rows("tasks") if r.instance_id == flagged_ids[2]]
    assert row.evidence["review_reviewer"] == "carol" and queue.get(flagged_ids[2]).published
    assert queue.sync().published == 0


def test_failed_store_write_keeps_the_decision_and_says_so(
        queue: ReviewQueue, dataset: Path, flagged_ids: list[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(*_a: object, **_k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(queue.store, "write", disk_full)
    with pytest.raises(DatasetError, match="approved by alice, but writing it.*next sync"):
        queue.approve(flagged_ids[0], "alice")
    monkeypatch.undo()
    assert [i.instance_id for i in queue.list("approved")] == [flagged_ids[0]]  # list syncs
    assert flagged_ids[0] in DatasetStore(dataset).instance_ids("tasks")


# -- configuration ----------------------------------------------------------------------

@sqlite_only
def test_default_database_is_sqlite_in_the_dataset(queue: ReviewQueue, dataset: Path) -> None:
    assert queue.url == default_url(dataset) and queue.url.startswith("sqlite:///")
    assert (dataset / "review.sqlite").is_file()


def test_explicit_url_and_bad_urls(dataset: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'elsewhere.sqlite'}"
    with ReviewQueue(DatasetStore(dataset), url) as queue:
        assert len(queue.list()) == 3
    assert (tmp_path / "elsewhere.sqlite").is_file()
    with pytest.raises(ConfigError, match="not usable"):
        ReviewQueue(DatasetStore(dataset), "nosuchdb://x/y")
    with pytest.raises(DatasetError, match="review database"):
        ReviewQueue(DatasetStore(dataset), f"sqlite:///{tmp_path}/missing/dir/q.sqlite")
    with pytest.raises(InputError, match="no dataset here"):
        ReviewQueue(DatasetStore(tmp_path / "absent"))


def test_schema_and_decision_compile_for_postgres() -> None:
    """Portable by construction: the DDL and the conditional UPDATE render for Postgres."""
    from sqlalchemy import update

    ddl = str(CreateTable(REVIEW_ITEMS, if_not_exists=True).compile(dialect=postgresql.dialect()))
    assert "CREATE TABLE IF NOT EXISTS review_items" in ddl
    assert "TIMESTAMP WITH TIME ZONE" in ddl and "BOOLEAN" in ddl
    change = update(REVIEW_ITEMS).where(REVIEW_ITEMS.c.state == "pending").values(state="x")
    sql = str(change.compile(dialect=postgresql.dialect()))
    assert sql.startswith("UPDATE review_items SET state=") and "WHERE review_items.state" in sql
