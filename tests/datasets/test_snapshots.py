"""Snapshots: named, immutable, verified versions of the accepted tasks (real files)."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import repogym.datasets.store as store_module
from repogym.datasets import (
    DatasetStore,
    SnapshotManifest,
    content_hash,
    create_snapshot,
    list_snapshots,
    load_snapshot,
    read_part,
    read_snapshot_rows,
    row_hash,
    verify_snapshot,
)
from repogym.datasets.snapshots import file_sha256, snapshots_dir
from repogym.errors import DatasetError, InputError
from repogym.schemas import SCHEMA_VERSION, SCHEMA_VERSION_KEY, CandidateKind, Status, TaskRow
from tests.datasets.test_schema import make_judged


@pytest.fixture
def store(tmp_path: Path) -> DatasetStore:
    store = DatasetStore(tmp_path / "data")
    store.write([make_judged(1, repo="a"), make_judged(2, repo="b"),
                 make_judged(3, repo="a", status=Status.reject)])
    store.write([make_judged(4, repo="a")])
    return store


def by_id(rows: list[TaskRow]) -> dict[str, TaskRow]:
    return {r.instance_id: r for r in rows}


def frozen_state(root: Path, name: str) -> dict[str, bytes]:
    """Every file of a snapshot with its bytes."""
    base = snapshots_dir(root) / name
    return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def writable(path: Path) -> Path:
    os.chmod(path, 0o644)
    return path


# -- creating ---------------------------------------------------------------------------

def test_snapshot_freezes_the_accepted_tasks(store: DatasetStore) -> None:
    m = create_snapshot(store.root, "v1")
    assert (m.name, m.total, m.repos, m.schema_version) == ("v1", 3, {"a": 2, "b": 1},
                                                              SCHEMA_VERSION)
    assert m.kinds == {CandidateKind.synthetic.value: 3} and m.pipeline_version
    rows = read_snapshot_rows(store.root, "v1")
    assert by_id(rows) == by_id(store.rows("tasks")) and len(rows) == 3  # no rejected row
    assert m.content_hash == content_hash(store.rows("tasks"))
    assert load_snapshot(store.root, "v1") == m
    saved = json.loads((snapshots_dir(store.root) / "v1" / "snapshot.json").read_text())
    assert SnapshotManifest.model_validate(saved) == m


def test_snapshot_files_are_read_only_hard_links_with_their_hashes(store: DatasetStore) -> None:
    m = create_snapshot(store.root, "v1")
    base = snapshots_dir(store.root) / "v1"
    originals = {p.relative_to(store.root).as_posix(): p for p in store.part_files("tasks")}
    assert {f.path for f in m.files} == set(originals)
    for f in m.files:
        frozen = base / f.path
        assert os.path.samefile(frozen, originals[f.path])  # a hard link, no copy
        assert f.sha256 == file_sha256(frozen) and f.bytes == frozen.stat().st_size
        assert f.rows == pq.read_metadata(frozen).num_rows
        assert not frozen.stat().st_mode & 0o222


def test_snapshot_copies_where_links_are_impossible(store: DatasetStore,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def no_link(src: Any, dst: Any) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_link)
    m = create_snapshot(store.root, "copied")
    for f in m.files:
        frozen = snapshots_dir(store.root) / "copied" / f.path
        assert not os.path.samefile(frozen, store.root / f.path)
        assert frozen.read_bytes() == (store.root / f.path).read_bytes()
    assert by_id(read_snapshot_rows(store.root, "copied")) == by_id(store.rows())


def test_snapshot_reads_like_the_store_with_pyarrow(store: DatasetStore) -> None:
    create_snapshot(store.root, "v1")
    table = pq.read_table(snapshots_dir(store.root) / "v1" / "tasks")
    assert sorted(table.column("instance_id").to_pylist()) == sorted(store.instance_ids())


def test_same_content_same_hash_however_it_is_split(store: DatasetStore) -> None:
    first = create_snapshot(store.root, "before-compaction")
    store.compact()
    second = create_snapshot(store.root, "after-compaction")
    assert len(second.files) < len(first.files)
    assert second.content_hash == first.content_hash
    store.write([make_judged(9, repo="b")])
    third = create_snapshot(store.root, "more")
    assert third.content_hash != first.content_hash and third.total == 4


def test_row_hash_changes_with_any_column() -> None:
    row = TaskRow.from_judged(make_judged(1))
    assert row_hash(row) == row_hash(TaskRow.from_judged(make_judged(1)))
    assert row_hash(row) != row_hash(row.model_copy(update={"problem_statement": "other"}))
    assert content_hash([row]) != content_hash([row.model_copy(update={"PASS_TO_PASS": ()})])


def test_later_writes_compactions_and_snapshots_never_change_a_snapshot(
        store: DatasetStore) -> None:
    m = create_snapshot(store.root, "v1")
    files, rows = frozen_state(store.root, "v1"), read_snapshot_rows(store.root, "v1")
    store.write([make_judged(5, repo="a"), make_judged(6, repo="c")])
    store.compact()  # unlinks the store's names of v1's files
    create_snapshot(store.root, "v2")
    store.write([make_judged(7, repo="a")])
    store.compact()
    create_snapshot(store.root, "v3")
    assert frozen_state(store.root, "v1") == files
    assert verify_snapshot(store.root, "v1") == m == load_snapshot(store.root, "v1")
    assert read_snapshot_rows(store.root, "v1") == rows
    assert [s.total for s in list_snapshots(store.root)] == [3, 5, 6]


def test_snapshot_finishes_an_interrupted_compaction_first(store: DatasetStore,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    store.write([make_judged(5, repo="a")])

    def crash(paths: Any) -> None:
        raise RuntimeError("killed")

    monkeypatch.setattr(store_module, "_unlink_all", crash)
    with pytest.raises(RuntimeError):
        store.compact("tasks", repo="a")  # merged file and old files now side by side
    monkeypatch.undo()
    m = create_snapshot(store.root, "v1")
    assert m.total == 4 and len(read_snapshot_rows(store.root, "v1")) == 4
    assert sum(f.rows for f in m.files) == 4


def test_crashed_snapshot_leaves_nothing_and_the_name_stays_free(
        store: DatasetStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(src: Any, dst: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "rename", crash)
    with pytest.raises(OSError, match="disk full"):
        create_snapshot(store.root, "v1")
    monkeypatch.undo()
    assert list(snapshots_dir(store.root).iterdir()) == []
    assert create_snapshot(store.root, "v1").total == 3


def test_stale_temp_snapshot_dirs_are_removed(store: DatasetStore) -> None:
    stale = snapshots_dir(store.root) / ".tmp-v0-dead" / "tasks" / "a"
    stale.mkdir(parents=True)
    (stale / "part-x.parquet").write_bytes(b"half")
    create_snapshot(store.root, "v1")
    assert sorted(p.name for p in snapshots_dir(store.root).iterdir()) == ["_ledger.jsonl", "v1"]


# -- names ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["", ".", "..", "../x", "a/b", ".hidden", "_ledger.jsonl",
                                  "-flag", "with space", "x" * 129, "ü"])
def test_bad_names_are_refused(store: DatasetStore, name: str) -> None:
    with pytest.raises(InputError, match="invalid snapshot name"):
        create_snapshot(store.root, name)
    assert not snapshots_dir(store.root).exists()


def test_a_name_is_never_reused(store: DatasetStore) -> None:
    create_snapshot(store.root, "v1")
    store.write([make_judged(8)])
    with pytest.raises(DatasetError, match="'v1' already exists"):
        create_snapshot(store.root, "v1")
    shutil.rmtree(snapshots_dir(store.root) / "v1")
    with pytest.raises(DatasetError, match="used before"):
        create_snapshot(store.root, "v1")
    assert create_snapshot(store.root, "v1.1").total == 4


def test_nothing_to_snapshot(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no dataset here"):
        create_snapshot(tmp_path / "missing", "v1")
    assert not (tmp_path / "missing").exists()
    store = DatasetStore(tmp_path / "only-rejected")
    store.write([make_judged(1, status=Status.reject)])
    with pytest.raises(DatasetError, match="no accepted tasks"):
        create_snapshot(store.root, "v1")


# -- reading ----------------------------------------------------------------------------

def test_unknown_snapshot_lists_the_existing_ones(store: DatasetStore) -> None:
    with pytest.raises(DatasetError, match="unknown snapshot 'v1'.*none yet"):
        read_snapshot_rows(store.root, "v1")
    create_snapshot(store.root, "v1")
    create_snapshot(store.root, "v2")
    for name in ("v3", "../v1", "_ledger.jsonl"):
        with pytest.raises(DatasetError, match=r"unknown snapshot .*snapshots: v1, v2"):
            read_snapshot_rows(store.root, name)
    assert [m.name for m in list_snapshots(store.root)] == ["v1", "v2"]
    assert list_snapshots(store.root / "nowhere") == []


def _first_file(root: Path, name: str) -> Path:
    m = load_snapshot(root, name)
    return snapshots_dir(root) / name / m.files[0].path


def test_a_changed_file_is_an_error(store: DatasetStore) -> None:
    create_snapshot(store.root, "v1")
    path = _first_file(store.root, "v1")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.unlink()  # break the hard link: the store keeps its own copy intact
    path.write_bytes(bytes(data))
    with pytest.raises(DatasetError, match="altered: sha256 differs") as info:
        read_snapshot_rows(store.root, "v1")
    assert str(path) in str(info.value)
    assert len(store.rows()) == 3


def test_an_added_or_removed_file_is_an_error(store: DatasetStore) -> None:
    create_snapshot(store.root, "v1")
    path = _first_file(store.root, "v1")
    extra = path.with_name("part-extra.parquet")
    shutil.copyfile(path, extra)
    with pytest.raises(DatasetError, match="files added.*part-extra"):
        read_snapshot_rows(store.root, "v1")
    extra.unlink()
    path.unlink()
    with pytest.raises(DatasetError, match="removed"):
        read_snapshot_rows(store.root, "v1")


def test_an_edited_manifest_is_an_error(store: DatasetStore) -> None:
    create_snapshot(store.root, "v1")
    path = writable(snapshots_dir(store.root) / "v1" / "snapshot.json")
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "content_hash": "0" * 64}))
    with pytest.raises(DatasetError, match="content hash"):
        read_snapshot_rows(store.root, "v1")
    path.write_text("{not json")
    with pytest.raises(DatasetError, match="not a valid snapshot manifest"):
        read_snapshot_rows(store.root, "v1")


def test_snapshot_reads_refuse_an_unknown_schema_version(store: DatasetStore) -> None:
    """Even with hashes made to match, every file goes through read_part."""
    create_snapshot(store.root, "v1")
    path = _first_file(store.root, "v1")
    table = read_part(path).replace_schema_metadata({SCHEMA_VERSION_KEY: b"99"})
    path.unlink()
    pq.write_table(table, path)
    manifest_path = writable(snapshots_dir(store.root) / "v1" / "snapshot.json")
    data = json.loads(manifest_path.read_text())
    rel = path.relative_to(snapshots_dir(store.root) / "v1").as_posix()
    for entry in data["files"]:
        if entry["path"] == rel:
            entry["sha256"], entry["bytes"] = file_sha256(path), path.stat().st_size
    manifest_path.write_text(json.dumps(data))
    verify_snapshot(store.root, "v1")  # the hashes match ...
    with pytest.raises(DatasetError, match="schema version 99") as info:
        read_snapshot_rows(store.root, "v1")  # ... but the version is refused
    assert str(path) in str(info.value)


def test_store_file_of_another_schema_version_is_not_snapshotted(store: DatasetStore) -> None:
    table = store.read().replace_schema_metadata({SCHEMA_VERSION_KEY: b"99"})
    pq.write_table(table, store.part_files("tasks", "a")[0].with_name("part-v99.parquet"))
    with pytest.raises(DatasetError, match="schema version 99"):
        create_snapshot(store.root, "v1")
    assert sorted(p.name for p in snapshots_dir(store.root).iterdir()) == []
    store.part_files("tasks", "a")[-1].unlink()
    assert create_snapshot(store.root, "v1").total == 3  # the failed try did not burn the name


def test_snapshot_of_another_schema_version_is_refused(store: DatasetStore) -> None:
    create_snapshot(store.root, "v1")
    path = writable(snapshots_dir(store.root) / "v1" / "snapshot.json")
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 99}))
    with pytest.raises(DatasetError, match="schema version 99"):
        read_snapshot_rows(store.root, "v1")
