"""The dataset loads unchanged in the readers trainers use: pandas, polars, duckdb, HF datasets.

Each reader is pointed at the plain files (no repogym code on the reading side) of the
``tasks`` and ``rejected`` tables and of a snapshot; every row must come back with the same
instance ids, the ``repo`` column and intact list columns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from repogym.datasets import DatasetStore, TableName, create_snapshot
from repogym.datasets.snapshots import snapshots_dir
from repogym.schemas import Status, TaskRow
from tests.datasets.test_schema import make_judged

LIST_COLUMNS = ("FAIL_TO_PASS", "PASS_TO_PASS", "files", "lines")
SCALAR_COLUMNS = ("instance_id", "repo", "status", "reason", "problem_statement", "patch",
                  "evidence")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> DatasetStore:
    """Two repos (one needing URI-encoding), accepted and rejected rows, several files."""
    store = DatasetStore(tmp_path_factory.mktemp("loaders") / "data")
    store.write([make_judged(1, repo="acme__calc"), make_judged(2, repo="org/tools"),
                 make_judged(3, repo="acme__calc", status=Status.reject),
                 make_judged(4, repo="org/tools", status=Status.review)])
    store.write([make_judged(5, repo="acme__calc", fail_to_pass=("t::a", "t::b[x-1]")),
                 make_judged(6, repo="org/tools", pass_to_pass=()),
                 make_judged(7, repo="org/tools", status=Status.infra_error)])
    create_snapshot(store.root, "v1")
    return store


SOURCES: dict[str, tuple[Callable[[Path], Path], TableName]] = {
    "tasks": (lambda root: root / "tasks", "tasks"),
    "rejected": (lambda root: root / "rejected", "rejected"),
    "snapshot": (lambda root: snapshots_dir(root) / "v1" / "tasks", "tasks"),
}


def expected(store: DatasetStore, source: str) -> dict[str, dict[str, Any]]:
    table = SOURCES[source][1]
    return {r.instance_id: comparable(r.to_arrow_row()) for r in store.rows(table)}


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """The columns under test as plain Python values (numpy arrays and tuples to lists)."""
    out = {name: record[name] for name in SCALAR_COLUMNS}
    out["evidence"] = json.loads(out["evidence"])
    for name in LIST_COLUMNS:
        out[name] = [v.item() if hasattr(v, "item") else v for v in record[name]]
    return out


def by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    ids = [r["instance_id"] for r in records]
    assert len(ids) == len(set(ids)), "a row was loaded twice"
    return {r["instance_id"]: comparable(r) for r in records}


def load_pandas(directory: Path, scratch: Path) -> list[dict[str, Any]]:
    import pandas as pd

    frame = pd.read_parquet(directory)
    assert "repo" in frame.columns
    return frame.to_dict("records")


def load_polars(directory: Path, scratch: Path) -> list[dict[str, Any]]:
    import polars as pl

    frame = pl.read_parquet(directory / "*" / "*.parquet")
    assert "repo" in frame.columns and frame.schema["lines"] == pl.List(pl.Int32)
    return frame.to_dicts()


def load_duckdb(directory: Path, scratch: Path) -> list[dict[str, Any]]:
    import duckdb

    with duckdb.connect() as con:
        cursor = con.execute(f"select * from read_parquet('{directory}/*/*.parquet')")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, values)) for values in cursor.fetchall()]
    assert "repo" in names
    return rows


def load_hf_from_parquet(directory: Path, scratch: Path) -> list[dict[str, Any]]:
    from datasets import Dataset

    files = sorted(str(p) for p in directory.glob("*/*.parquet"))
    data = Dataset.from_parquet(files, cache_dir=str(scratch))
    assert "repo" in data.column_names
    return list(data)


def load_hf_load_dataset(directory: Path, scratch: Path) -> list[dict[str, Any]]:
    from datasets import load_dataset

    data = load_dataset("parquet", data_files=str(directory / "*" / "*.parquet"), split="train",
                        cache_dir=str(scratch))
    assert "repo" in data.column_names
    assert data.features["FAIL_TO_PASS"].feature.dtype == "string"  # a list, not a string
    return list(data)


LOADERS = {"pandas": load_pandas, "polars": load_polars, "duckdb": load_duckdb,
           "hf-from_parquet": load_hf_from_parquet, "hf-load_dataset": load_hf_load_dataset}


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """HF ``datasets`` must read the local files without asking the Hub anything."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("loader", list(LOADERS))
def test_loads_unchanged(store: DatasetStore, loader: str, source: str, tmp_path: Path) -> None:
    directory = SOURCES[source][0](store.root)
    want = expected(store, source)
    got = by_id(LOADERS[loader](directory, tmp_path))
    assert set(got) == set(want)
    assert got == want
    assert len({r["repo"] for r in got.values()}) == 2


def test_fixture_covers_both_repos_and_tables(store: DatasetStore) -> None:
    assert store.counts("tasks").repos == {"acme__calc": 2, "org/tools": 2}
    assert store.counts("rejected").repos == {"acme__calc": 1, "org/tools": 1}
    assert store.counts("infra").repos == {"org/tools": 1}
    assert any(len(r.FAIL_TO_PASS) == 2 for r in store.rows()) and any(
        r.PASS_TO_PASS == () for r in store.rows())
    assert all(isinstance(r, TaskRow) for r in store.rows("rejected"))
