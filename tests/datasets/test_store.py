"""DatasetStore: Parquet on disk, atomic, idempotent, versioned, safe under concurrent writers."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import repogym.datasets.store as store_module
from repogym.datasets import DatasetStore, TableName, WriteResult, partition_dirname, read_part
from repogym.errors import DatasetError
from repogym.schemas import SCHEMA_VERSION, SCHEMA_VERSION_KEY, TASK_SCHEMA, Status, TaskRow
from tests.datasets.test_schema import make_judged


@pytest.fixture
def store(tmp_path: Path) -> DatasetStore:
    return DatasetStore(tmp_path / "data")


def parquet_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.parquet"))


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root (lock file aside) with its content."""
    return {str(p.relative_to(root)): p.read_bytes()
            for p in root.rglob("*") if p.is_file() and p.name != ".lock"}


# -- round trip and routing -------------------------------------------------------------

def test_round_trip_keeps_every_column(store: DatasetStore) -> None:
    batch = [make_judged(i) for i in range(3)]
    store.write(batch)
    back = {r.instance_id: r for r in store.rows()}
    for j in batch:
        expected = TaskRow.from_judged(j)
        got = back[expected.instance_id]
        for column in TASK_SCHEMA.names:
            assert getattr(got, column) == getattr(expected, column), column
        assert got == expected


def test_read_uses_the_explicit_schema(store: DatasetStore) -> None:
    store.write([make_judged(0)])
    assert store.read().schema.equals(TASK_SCHEMA, check_metadata=True)


def test_empty_store_reads_as_empty_tables(store: DatasetStore) -> None:
    for table in ("tasks", "rejected"):
        data = store.read(table)
        assert data.num_rows == 0 and data.schema.equals(TASK_SCHEMA)
        assert store.instance_ids(table) == set() and store.rows(table) == []
    assert store.manifest() is None


def test_unknown_table_name_is_refused(store: DatasetStore) -> None:
    with pytest.raises(ValueError, match="valid tables: tasks, rejected"):
        store.read("accepted")  # type: ignore[arg-type]


def test_accepted_and_rejected_are_routed_apart(store: DatasetStore) -> None:
    batch = [make_judged(i, status=s) for i, s in enumerate(Status)]
    result = store.write(batch)
    assert result == WriteResult(added=4, skipped_duplicates=0)
    by_status = {j.verdict.status: j.candidate.instance_id for j in batch}
    assert store.instance_ids("tasks") == {by_status[Status.accept]}
    assert store.instance_ids("rejected") == {by_status[Status.reject],
                                              by_status[Status.review]}
    assert store.instance_ids("infra") == {by_status[Status.infra_error]}
    assert {r.reason for r in store.rows("rejected")} == {"no_op:no_failing_test"}


def test_infra_error_never_keeps_the_later_verdict_out(store: DatasetStore) -> None:
    """An infra_error is no verdict: the candidate is judged again, and that verdict (or a
    second infra error) must land; the first infra row stays as the failure's record."""
    assert store.write([make_judged(1, status=Status.infra_error)]).added == 1
    assert store.decided_ids("rejected") == set()
    assert store.write([make_judged(1, status=Status.infra_error)]) == WriteResult(
        added=0, skipped_duplicates=1)
    assert store.write([make_judged(1, status=Status.reject)]).added == 1
    [row] = store.rows("rejected")
    assert row.status is Status.reject
    assert store.decided_ids("rejected") == {row.instance_id}
    assert [r.status for r in store.rows("infra")] == [Status.infra_error]
    assert store.write([make_judged(2, status=Status.infra_error)]).added == 1
    assert store.write([make_judged(2, status=Status.accept)]).added == 1
    assert store.instance_ids("tasks") == {make_judged(2).candidate.instance_id}


# -- idempotence ------------------------------------------------------------------------

def test_rerun_adds_nothing(store: DatasetStore) -> None:
    batch = [make_judged(i, status=Status.accept if i % 2 else Status.reject) for i in range(6)]
    assert store.write(batch) == WriteResult(added=6, skipped_duplicates=0)
    files = parquet_files(store.root)
    assert store.write(batch) == WriteResult(added=0, skipped_duplicates=6)
    assert parquet_files(store.root) == files
    assert store.read("tasks").num_rows + store.read("rejected").num_rows == 6


def test_partly_new_batch_adds_only_new_rows(store: DatasetStore) -> None:
    store.write([make_judged(i) for i in range(3)])
    result = store.write([make_judged(i) for i in range(5)])
    assert result == WriteResult(added=2, skipped_duplicates=3)
    assert len(store.instance_ids()) == 5


def test_duplicates_within_one_batch_are_skipped(store: DatasetStore) -> None:
    assert store.write([make_judged(1), make_judged(1)]) == WriteResult(added=1,
                                                                        skipped_duplicates=1)


def test_rejected_earlier_may_be_accepted_now(store: DatasetStore) -> None:
    store.write([make_judged(1, status=Status.reject)])
    assert store.write([make_judged(1, status=Status.accept)]).added == 1
    assert store.instance_ids("tasks") == store.instance_ids("rejected")


# -- layout -----------------------------------------------------------------------------

def test_partition_dirs_and_repo_column_inside_files(store: DatasetStore) -> None:
    store.write([make_judged(1, repo="acme__calc"), make_judged(2, repo="org/other"),
                 make_judged(3, repo="acme__calc", status=Status.reject)])
    tasks = store.root / "tasks"
    assert sorted(p.name for p in tasks.iterdir()) == ["acme__calc", "org%2Fother"]
    assert (store.root / "rejected" / "acme__calc").is_dir()
    for path in parquet_files(store.root):
        assert path.name.startswith("part-")
        single = pq.read_table(path)  # one file on its own, no partition discovery
        assert "repo" in single.column_names
        assert set(single.column("repo").to_pylist()) <= {"acme__calc", "org/other"}
        assert single.schema.metadata[SCHEMA_VERSION_KEY] == str(SCHEMA_VERSION).encode()


def test_read_one_repo(store: DatasetStore) -> None:
    store.write([make_judged(1, repo="a"), make_judged(2, repo="b"), make_judged(3, repo="b")])
    assert store.read(repo="b").column("repo").to_pylist() == ["b", "b"]
    assert store.read(repo="nope").num_rows == 0
    assert [r.repo for r in store.rows(repo="a")] == ["a"]


def test_loads_with_pyarrow_dataset(store: DatasetStore) -> None:
    store.write([make_judged(i, repo=r) for i, r in enumerate(["a", "b", "org/c"])])
    data = pads.dataset(store.root / "tasks", format="parquet").to_table()
    assert sorted(map(str, data.column("repo").to_pylist())) == ["a", "b", "org/c"]
    assert set(TASK_SCHEMA.names) <= set(data.column_names)
    explicit = pads.dataset(store.root / "tasks", format="parquet", schema=TASK_SCHEMA)
    assert explicit.to_table().num_rows == 3


def test_loads_with_pandas(store: DatasetStore) -> None:
    pd = pytest.importorskip("pandas")
    store.write([make_judged(i) for i in range(2)])
    frame = pd.read_parquet(store.root / "tasks")
    assert len(frame) == 2 and "FAIL_TO_PASS" in frame.columns


# -- atomicity --------------------------------------------------------------------------

def test_crash_during_rename_leaves_store_unchanged(store: DatasetStore,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store.write([make_judged(0)])
    before, table_before = snapshot(store.root), store.read()

    def crash(src: Any, dst: Any) -> None:
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        store.write([make_judged(1), make_judged(2, repo="other")])
    monkeypatch.undo()
    assert snapshot(store.root) == before  # no .parquet, no .tmp-*, same manifest
    assert store.read().equals(table_before)
    assert store.write([make_judged(1)]).added == 1  # and the store still works


def test_stale_temp_files_are_ignored_and_cleaned(store: DatasetStore) -> None:
    store.write([make_judged(0)])
    stale = store.root / "tasks" / partition_dirname("acme__calc") / ".tmp-dead-part.parquet"
    stale.write_bytes(b"half a file")
    assert store.read().num_rows == 1
    store.write([make_judged(1)])
    assert not stale.exists()


def test_temp_files_of_other_writers_under_the_root_are_left_alone(store: DatasetStore) -> None:
    # corpus state and caches live under the dataset root and write their own .tmp-* files
    # without the store's lock: a store write must never delete one in flight (CI: a
    # baseline's state file vanished between its write and its fsync)
    others = [store.root / "state" / "baselines" / ".tmp-f90b55-corpc-8bac.json",
              store.root / ".cache" / "probes" / ".tmp-abc123-set.json",
              store.root / ".tmp-abc123-corpus.toml"]
    for path in others:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    own = store.root / ".tmp-dead-manifest.json"
    own.write_text("{")
    store.write([make_judged(0)])
    assert all(path.exists() for path in others)
    assert not own.exists()


# -- versions and corruption ------------------------------------------------------------

def _plant(store: DatasetStore, table: pa.Table, name: str = "part-planted.parquet",
           table_name: str = "tasks") -> Path:
    directory = store.root / table_name / partition_dirname("acme__calc")
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, directory / name)
    return directory / name


def test_unknown_schema_version_is_refused(store: DatasetStore) -> None:
    store.write([make_judged(0)])
    good = store.read()
    path = _plant(store, good.replace_schema_metadata({SCHEMA_VERSION_KEY: b"99"}))
    for call in (store.read, store.instance_ids, store.rows, lambda: store.write([]),
                 store.counts, lambda: store.decided_ids("tasks"), store.read_parts,
                 store.refresh_manifest, store.compact):
        with pytest.raises(DatasetError) as info:
            call()
        message = str(info.value)
        assert str(path) in message and "schema version 99" in message
        assert "only schema versions 1, 2, 3" in message


def test_a_version_1_file_reads_as_python_tasks_and_merges_into_the_current_version(
        store: DatasetStore) -> None:
    """Before schema version 2 there was no ``language`` column: every task was Python."""
    store.write([make_judged(0)])
    current = store.read()
    old = current.drop_columns(["language", "confidence"]).replace_schema_metadata(
        {SCHEMA_VERSION_KEY: b"1"})
    for path in parquet_files(store.root):
        path.unlink()
    _plant(store, old)
    assert [r.language for r in store.rows()] == ["python"]
    assert store.read().column("language").to_pylist() == ["python"]
    store.write([make_judged(1)])  # a current file beside it: compaction merges the two
    store.compact()
    (path,) = parquet_files(store.root / "tasks")
    assert pq.read_table(path).schema.metadata[SCHEMA_VERSION_KEY] == str(SCHEMA_VERSION).encode()
    assert [r.language for r in store.rows()] == ["python", "python"]


def test_a_version_2_file_reads_its_confidence_from_its_evidence(store: DatasetStore) -> None:
    """Before schema version 3 there was no ``confidence`` column: an accepted row's is read
    from what its evidence says (``oracle``: ``reran x3``; ``probes_passed``), a rejected
    row's is 0."""
    accepted = make_judged(0)
    verdict = accepted.verdict.model_copy(update={"evidence": {
        "oracle": "reran x3", "probes_passed": "14 probes on acme__calc.x"}})
    rejected = make_judged(1, status=Status.reject)
    store.write([accepted.model_copy(update={"verdict": verdict}), rejected])
    for table in ("tasks", "rejected"):
        current = pa.concat_tables([pq.read_table(p) for p in parquet_files(store.root / table)])
        old = current.drop_columns(["confidence"]).replace_schema_metadata(
            {SCHEMA_VERSION_KEY: b"2"})
        for path in parquet_files(store.root / table):
            path.unlink()
        _plant(store, old, table_name=table)
    (row,) = store.rows()
    assert row.confidence == row.confidence_record.score == round(1 - 0.5 ** 4, 4)
    assert row.confidence_record.probes == 14
    assert store.read("rejected").column("confidence").to_pylist() == [0.0]


def test_file_without_version_is_refused(store: DatasetStore) -> None:
    path = _plant(store, pa.table({"instance_id": ["x"], "repo": ["acme__calc"]}))
    with pytest.raises(DatasetError, match="no schema version") as info:
        read_part(path)
    assert str(path) in str(info.value)


def test_missing_column_is_refused(store: DatasetStore) -> None:
    store.write([make_judged(0)])
    thin = store.read().drop_columns(["evidence"])
    path = _plant(store, thin.replace_schema_metadata(TASK_SCHEMA.metadata))
    with pytest.raises(DatasetError, match="missing columns") as info:
        store.read()
    assert str(path) in str(info.value)


def test_corrupt_file_is_named(store: DatasetStore) -> None:
    store.write([make_judged(0)])
    bad = store.root / "tasks" / partition_dirname("acme__calc") / "part-corrupt.parquet"
    bad.write_bytes(b"this is not parquet at all")
    with pytest.raises(DatasetError, match="not a readable") as info:
        store.read()
    assert str(bad) in str(info.value)


def test_corrupt_manifest_is_named(store: DatasetStore) -> None:
    store.write([make_judged(0)])
    (store.root / "manifest.json").write_text("{oops")
    with pytest.raises(DatasetError, match="manifest.json"):
        store.manifest()


# -- manifest ---------------------------------------------------------------------------

def test_manifest_counts(store: DatasetStore) -> None:
    store.write([make_judged(1, repo="a"), make_judged(2, repo="a"), make_judged(3, repo="b"),
                 make_judged(4, repo="a", status=Status.reject),
                 make_judged(5, repo="b", status=Status.infra_error)])
    first = store.manifest()
    assert first is not None
    store.write([make_judged(6, repo="b"), make_judged(1, repo="a")])
    m = store.manifest()
    assert m is not None and m.schema_version == SCHEMA_VERSION and m.pipeline_version
    assert m.updated_at >= first.updated_at
    tasks, rejected, infra = m.tables["tasks"], m.tables["rejected"], m.tables["infra"]
    assert (tasks.rows, tasks.files, tasks.repos) == (4, 3, {"a": 2, "b": 2})
    assert tasks.statuses == {"accept": 4}
    assert (rejected.rows, rejected.repos, rejected.statuses) == (1, {"a": 1}, {"reject": 1})
    assert (infra.rows, infra.repos, infra.statuses) == (1, {"b": 1}, {"infra_error": 1})
    assert store.refresh_manifest().tables == m.tables


def test_manifest_written_even_when_nothing_is_added(store: DatasetStore) -> None:
    store.write([])
    m = store.manifest()
    assert m is not None and m.tables["tasks"].rows == 0


# -- concurrency ------------------------------------------------------------------------

def _write_worker(root: str, numbers: list[int], barrier: Any, results: Any) -> None:
    """Runs in a child process: write ``numbers`` in small batches, report rows added."""
    store = DatasetStore(Path(root))
    barrier.wait()
    added = 0
    for start in range(0, len(numbers), 3):
        chunk = numbers[start:start + 3]
        added += store.write([make_judged(n, status=Status.accept if n % 3 else Status.reject)
                              for n in chunk]).added
    results.put(added)


def test_concurrent_writers_never_duplicate(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")  # fork + pyarrow threads can deadlock
    barrier, results = ctx.Barrier(2), ctx.Queue()
    batches = [list(range(0, 24)), list(range(12, 36))[::-1]]  # 12 ids overlap
    procs = [ctx.Process(target=_write_worker, args=(str(tmp_path), b, barrier, results))
             for b in batches]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0]
    store = DatasetStore(tmp_path)
    ids = [*store.read("tasks").column("instance_id").to_pylist(),
           *store.read("rejected").column("instance_id").to_pylist()]
    assert len(ids) == len(set(ids)) == 36
    assert results.get(timeout=5) + results.get(timeout=5) == 36
    m = store.manifest()
    assert m is not None and m.tables["tasks"].rows + m.tables["rejected"].rows == 36


def test_decided_ids_leave_out_infra_errors(tmp_path: Path) -> None:
    store = DatasetStore(tmp_path)
    store.write([make_judged(1, status=Status.reject, reason="no_op"),
                 make_judged(2, status=Status.infra_error, reason="infra:timeout")])
    decided = store.decided_ids("rejected")
    assert make_judged(1).candidate.instance_id in decided
    assert make_judged(2).candidate.instance_id not in decided


# -- compaction -------------------------------------------------------------------------

def _batches(store: DatasetStore) -> list[list[Any]]:
    """Five writes: three small batches to repo a, two to repo b, rejected rows in both."""
    batches = [[make_judged(1, repo="a"), make_judged(2, repo="a", status=Status.reject)],
               [make_judged(3, repo="a"), make_judged(4, repo="b")],
               [make_judged(5, repo="a"), make_judged(6, repo="b", status=Status.review)],
               [make_judged(7, repo="a", status=Status.reject)],
               [make_judged(8, repo="b")]]
    for batch in batches:
        store.write(batch)
    return batches


def _state(store: DatasetStore) -> dict[str, list[TaskRow]]:
    return {t: sorted(store.rows(t), key=lambda r: r.instance_id) for t in ("tasks", "rejected")}


def _debris(root: Path) -> list[Path]:
    """Temp files and the compaction journal: what a finished operation never leaves."""
    return sorted(p for p in root.rglob("*") if p.name.startswith((".tmp-", ".compaction")))


def test_compact_merges_each_partition_into_one_file(store: DatasetStore) -> None:
    _batches(store)
    before = _state(store)
    order = [r.instance_id for r in store.rows("tasks", repo="a")]
    assert len(store.part_files("tasks", "a")) == 3
    result = store.compact()
    assert {(p.table, p.repo, p.replaced) for p in result.partitions} == {
        ("tasks", "a", 3), ("tasks", "b", 2), ("rejected", "a", 2)}  # rejected/b: one file
    assert result.files_removed == 4
    tables: tuple[TableName, ...] = ("tasks", "rejected")
    for table in tables:
        for repo in ("a", "b"):
            assert len(store.part_files(table, repo)) == 1
    assert _state(store) == before
    assert [r.instance_id for r in store.rows("tasks", repo="a")] == order  # oldest first
    merged = {p.merged for p in result.partitions}
    assert merged == {p.relative_to(store.root).as_posix() for t in tables
                      for p in store.part_files(t) if "rejected/b" not in str(p)}
    m = store.manifest()
    assert m is not None and (m.tables["tasks"].files, m.tables["rejected"].files) == (2, 2)
    assert m.tables["tasks"].rows == 5 and _debris(store.root) == []


def test_compact_twice_changes_nothing(store: DatasetStore) -> None:
    _batches(store)
    store.compact()
    files = snapshot(store.root)
    assert store.compact().partitions == ()
    assert snapshot(store.root) == files


def test_compact_one_table_and_repo_only(store: DatasetStore) -> None:
    _batches(store)
    others = {p: p.read_bytes() for p in store.part_files("rejected")}
    others.update({p: p.read_bytes() for p in store.part_files("tasks", "b")})
    result = store.compact("tasks", repo="a")
    assert [(p.table, p.repo, p.rows) for p in result.partitions] == [("tasks", "a", 3)]
    assert len(store.part_files("tasks", "a")) == 1
    assert all(p.read_bytes() == data for p, data in others.items())
    with pytest.raises(ValueError, match="valid tables"):
        store.compact("accepted")  # type: ignore[arg-type]


def test_compact_then_write_stays_idempotent(store: DatasetStore) -> None:
    batches = _batches(store)
    store.compact()
    result = store.write([j for b in batches for j in b] + [make_judged(9, repo="a")])
    assert result == WriteResult(added=1, skipped_duplicates=8)


def test_compact_refuses_unknown_schema_version_and_changes_nothing(store: DatasetStore) -> None:
    store.write([make_judged(0)])
    store.write([make_judged(1)])
    _plant(store, store.read().replace_schema_metadata({SCHEMA_VERSION_KEY: b"99"}))
    before = snapshot(store.root)
    with pytest.raises(DatasetError, match="schema version 99"):
        store.compact()
    assert snapshot(store.root) == before


# Crash injection: each test stops a compaction at one point, as a kill would, then checks
# what a lock-free reader sees meanwhile and what the next locked operation leaves.

class Crash(Exception):
    pass


def _crash_on(monkeypatch: pytest.MonkeyPatch, target: Any, name: str,
              when: Any = lambda *a: True) -> None:
    real = getattr(target, name)

    def fake(*args: Any, **kwargs: Any) -> Any:
        if when(*args):
            raise Crash(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, fake)


def _is_part_rename(src: Any, dst: Any) -> bool:
    return str(dst).endswith(".parquet")


# point -> (inject the crash, part files of tasks/a after it, journal left behind)
CRASH_POINTS: dict[str, tuple[Any, int, bool]] = {
    "writing the merged file": (lambda mp: _crash_on(mp, pq, "write_table"), 3, False),
    "before renaming the merged file": (
        lambda mp: _crash_on(mp, os, "replace", _is_part_rename), 3, True),
    "before unlinking the old files": (
        lambda mp: _crash_on(mp, store_module, "_unlink_all"), 4, True),
    "after unlinking one old file": (
        lambda mp: _crash_on(mp, Path, "unlink", _second_part_file()), 3, True),
    "before removing the journal": (
        lambda mp: _crash_on(mp, Path, "unlink", lambda p, *a: p.name == ".compaction.json"),
        1, True),
}


def _second_part_file() -> Any:
    """A predicate true from the second part file unlinked on (the first is really gone)."""
    seen: list[Path] = []

    def when(path: Path, *args: Any) -> bool:
        if path.name.startswith("part-"):
            seen.append(path)
        return len(seen) >= 2

    return when


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_crash_during_compaction_loses_and_repeats_nothing(store: DatasetStore, point: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _batches(store)
    before = _state(store)
    inject, files_left, journal_left = CRASH_POINTS[point]
    inject(monkeypatch)
    with pytest.raises(Crash):
        store.compact("tasks", repo="a")
    monkeypatch.undo()
    assert len(store.part_files("tasks", "a")) == files_left
    assert (store.root / ".compaction.json").is_file() == journal_left
    # A reader that takes no lock sees every row once, whatever the crash left on disk.
    assert _state(store) == before
    assert store.counts("tasks").rows == 5
    assert len(store.read("tasks").column("instance_id")) == 5
    # The next locked operation finishes (or undoes) the compaction and tidies up.
    store.write([])
    assert _debris(store.root) == []
    assert _state(store) == before
    ids_per_file = [read_part(p, ["instance_id"]).num_rows for p in store.part_files("tasks")]
    assert sum(ids_per_file) == 5  # no row in two files any more
    assert store.compact().partitions  # and compaction works again


def test_crash_between_rename_and_unlink_really_leaves_two_copies(
        store: DatasetStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The window the journal exists for: the merged file and the old ones side by side."""
    _batches(store)
    CRASH_POINTS["before unlinking the old files"][0](monkeypatch)
    with pytest.raises(Crash):
        store.compact("tasks", repo="a")
    monkeypatch.undo()
    on_disk = [read_part(p, ["instance_id"]).num_rows for p in store.part_files("tasks", "a")]
    assert len(on_disk) == 4 and sum(on_disk) == 6  # 3 old files + the merged one
    assert (store.root / ".compaction.json").is_file()
    assert sorted(store.instance_ids("tasks")) == sorted(r.instance_id for r in store.rows())
    assert len(store.rows("tasks", repo="a")) == 3
    store.refresh_manifest()
    assert len(store.part_files("tasks", "a")) == 1


def test_corrupt_journal_is_named(store: DatasetStore) -> None:
    store.write([make_judged(0)])
    (store.root / ".compaction.json").write_text("{half")
    with pytest.raises(DatasetError, match="compaction journal"):
        store.write([make_judged(1)])


def test_reader_relists_when_a_listed_file_vanishes(store: DatasetStore,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing taken just before a compaction unlinked the files: the reader reads again."""
    _batches(store)
    stale = store.part_files("tasks")
    store.compact()
    real = DatasetStore.part_files
    calls = {"n": 0}

    def listing(self: DatasetStore, table: Any = "tasks", repo: Any = None) -> list[Path]:
        calls["n"] += 1
        return stale if calls["n"] == 1 and table == "tasks" else real(self, table, repo)

    monkeypatch.setattr(DatasetStore, "part_files", listing)
    assert len(store.rows("tasks")) == 5 and calls["n"] >= 3


def test_reader_gives_up_when_files_never_settle(store: DatasetStore,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _batches(store)
    gone = store.root / "tasks" / "a" / "part-gone.parquet"
    monkeypatch.setattr(DatasetStore, "part_files", lambda self, table="tasks", repo=None: [gone])
    with pytest.raises(DatasetError, match="kept changing"):
        store.read()


def test_lock_free_reader_during_writes_and_compactions(store: DatasetStore) -> None:
    """A reader thread never sees a repeated id nor loses one while another thread writes
    and compacts the same partitions over and over."""
    import threading

    store.write([make_judged(0, repo="a"), make_judged(1, repo="b")])
    done, problems, reads = threading.Event(), [], [0]

    def reader() -> None:
        last: set[str] = set()
        while not done.is_set():
            ids = store.read("tasks").column("instance_id").to_pylist()
            if len(ids) != len(set(ids)):
                problems.append(f"repeated ids: {len(ids) - len(set(ids))}")
            if not last <= set(ids):
                problems.append(f"lost ids: {sorted(last - set(ids))}")
            last, reads[0] = set(ids), reads[0] + 1

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(2, 32, 2):
            store.write([make_judged(n, repo="a"), make_judged(n + 1, repo="b")])
            store.compact()
    finally:
        done.set()
        thread.join(timeout=60)
    assert problems == [] and reads[0] > 5
    assert len(store.instance_ids()) == 32 and len(store.part_files()) == 2


# -- a real SIGKILL during compaction ---------------------------------------------------

_COMPACT_CHILD = """
import sys
from pathlib import Path
import repogym.datasets.store as st

real = st.DatasetStore._compact_partition


def traced(self, table, directory):
    done = real(self, table, directory)
    print("merged", flush=True)
    return done


st.DatasetStore._compact_partition = traced
print("ready", flush=True)
sys.stdin.readline()
st.DatasetStore(Path(sys.argv[1])).compact()
print("done", flush=True)
"""


def _many_small_parts(root: Path, partitions: int = 12, files: int = 4) -> DatasetStore:
    store = DatasetStore(root)
    n = 0
    for _ in range(files):
        batch = []
        for p in range(partitions):
            batch.append(make_judged(n, repo=f"r{p}"))
            n += 1
        store.write(batch)
    return store


def test_sigkill_during_compaction_loses_and_repeats_nothing(tmp_path: Path) -> None:
    """A real process compacting 12 partitions is killed with SIGKILL after k of them were
    merged, at a few moments into the next one; every time, lock-free readers see every row
    once, and the next locked operation leaves no debris and one copy of each row."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    template = _many_small_parts(tmp_path / "template", partitions=12, files=4)
    expected = _state(template)
    for i, (merged, delay) in enumerate(((1, 0.0), (3, 0.004), (5, 0.01), (8, 0.02))):
        root = tmp_path / f"run{i}"
        shutil.copytree(template.root, root)
        with subprocess.Popen([sys.executable, "-c", _COMPACT_CHILD, str(root)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as child:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline().strip() == "ready"  # imports done
            child.stdin.write("go\n")
            child.stdin.flush()
            for _ in range(merged):
                assert child.stdout.readline().strip() == "merged"
            time.sleep(delay)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        store = DatasetStore(root)
        assert 12 < len(store.part_files()) < 48  # killed with the compaction half done
        assert _state(store) == expected, (merged, delay)  # before any recovery
        store.refresh_manifest()
        assert _debris(root) == [] and _state(store) == expected
        assert sum(read_part(p, ["instance_id"]).num_rows for p in store.part_files()) == 48
        store.compact()
        assert len(store.part_files()) == 12 and _state(store) == expected
