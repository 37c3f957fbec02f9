"""``repogym dataset ...`` through the real CLI app (typer's CliRunner), on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.datasets import DatasetStore, Manifest, SnapshotManifest, read_snapshot_rows
from repogym.schemas import Status
from tests.datasets.test_schema import make_judged


@pytest.fixture
def store(tmp_path: Path) -> DatasetStore:
    store = DatasetStore(tmp_path / "data")
    store.write([make_judged(1, repo="a"), make_judged(2, repo="b"),
                 make_judged(3, repo="a", status=Status.reject)])
    store.write([make_judged(4, repo="a")])
    return store


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["dataset", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def one_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_snapshot_list_and_show(store: DatasetStore) -> None:
    code, out, _ = cli("snapshot", "v1", "--dataset", str(store.root))
    assert code == 0 and "snapshot v1: 3 task(s) in 2 repo(s)" in out
    assert str(store.root / "snapshots" / "v1") in out
    store.write([make_judged(5, repo="b")])
    assert cli("snapshot", "v2", "--dataset", str(store.root))[0] == 0
    code, out, _ = cli("snapshots", "--dataset", str(store.root))
    lines = out.splitlines()
    assert code == 0 and [ln.split()[0] for ln in lines] == ["v1", "v2"]
    assert "3 task(s)" in lines[0] and "4 task(s)" in lines[1]
    code, out, _ = cli("show", "v2", "--dataset", str(store.root))
    shown = SnapshotManifest.model_validate_json(out)
    assert code == 0 and shown.total == 4 and shown.repos == {"a": 2, "b": 2}
    assert len(read_snapshot_rows(store.root, "v2")) == 4


def test_show_the_store_manifest(store: DatasetStore) -> None:
    code, out, _ = cli("show", "--dataset", str(store.root))
    m = Manifest.model_validate(json.loads(out))
    assert code == 0 and m.tables["tasks"].rows == 3 and m.tables["rejected"].rows == 1


def test_compact(store: DatasetStore) -> None:
    code, out, _ = cli("compact", "--dataset", str(store.root))
    assert code == 0 and "tasks/a: 2 files -> 1 (2 rows)" in out
    assert "compacted 1 partition(s), 1 file(s) fewer" in out
    assert len(store.part_files("tasks", "a")) == 1 and len(store.rows()) == 3
    code, out, _ = cli("compact", "--table", "rejected", "--dataset", str(store.root))
    assert code == 0 and "compacted 0 partition(s)" in out


def test_dataset_defaults_to_repogym_out(store: DatasetStore,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPOGYM_OUT", str(store.root))
    code, out, _ = cli("snapshot", "from-env")
    assert code == 0 and (store.root / "snapshots" / "from-env" / "snapshot.json").is_file()
    assert cli("snapshots")[1].startswith("from-env")


def test_reused_name_is_one_error_line(store: DatasetStore) -> None:
    assert cli("snapshot", "v1", "--dataset", str(store.root))[0] == 0
    code, _, err = cli("snapshot", "v1", "--dataset", str(store.root))
    assert code == 1 and "already exists" in one_error(err)


def test_bad_name_is_a_usage_error(store: DatasetStore) -> None:
    code, _, err = cli("snapshot", "../escape", "--dataset", str(store.root))
    assert code == 2 and "invalid snapshot name" in one_error(err)
    assert not (store.root / "snapshots").exists() and not (store.root.parent / "escape").exists()


def test_unknown_snapshot_lists_the_existing_ones(store: DatasetStore) -> None:
    cli("snapshot", "v1", "--dataset", str(store.root))
    code, out, err = cli("show", "nope", "--dataset", str(store.root))
    assert code == 1 and out == "" and "unknown snapshot 'nope'" in one_error(err)
    assert "snapshots: v1" in err


def test_empty_or_missing_dataset(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    for args in (("show",), ("compact",), ("snapshot", "v1")):
        code, _, err = cli(*args, "--dataset", missing)
        assert code == 1 and "no dataset here" in one_error(err), args
    assert not (tmp_path / "missing").exists()
    code, out, err = cli("snapshots", "--dataset", missing)
    assert code == 0 and out == "" and "no snapshots" in err


def test_unknown_table_is_a_usage_error(store: DatasetStore) -> None:
    code, _, err = cli("compact", "--table", "accepted", "--dataset", str(store.root))
    assert code == 2 and "valid tables: tasks, rejected" in one_error(err)


def test_reverify_refuses_a_missing_dataset_and_says_when_there_is_nothing(
        store: DatasetStore, tmp_path: Path) -> None:
    code, _, err = cli("reverify", "--dataset", str(tmp_path / "nowhere"))
    assert code == 1 and "no dataset here" in one_error(err)
    code, out, _ = cli("reverify", "--dataset", str(store.root), "--repo", "nobody")
    assert code == 0 and "0 task(s) re-verified" in out
