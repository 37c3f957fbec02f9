"""``atomic_write``: the whole file or the old one, and no temporary file left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.files import TMP_PREFIX, atomic_write, atomic_write_with


def test_writes_text_and_bytes_and_makes_the_folder(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "state.json"
    atomic_write(target, "{}\n")
    assert target.read_text() == "{}\n"
    atomic_write(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert [p.name for p in target.parent.iterdir()] == ["state.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "part.parquet"
    atomic_write(target, "old")

    def half(tmp: Path) -> None:
        tmp.write_text("half of the new")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write_with(target, half)
    assert target.read_text() == "old"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(TMP_PREFIX)]


def test_a_record_cache_keeps_records_whole_and_ignores_a_broken_file(tmp_path: Path) -> None:
    from repogym.cache import RecordCache
    from repogym.schemas.records import TimeLimits

    cache = RecordCache(tmp_path / "c", TimeLimits, fanout=2)
    record = TimeLimits(run=10.0, tests={"t": 2.0})
    assert cache.get("ab/cd") is None
    cache.put("ab/cd", record)
    path = cache.path("ab/cd")
    assert path == tmp_path / "c" / "ab" / "ab_cd.json" and cache.get("ab/cd") == record
    path.write_text("{half")
    assert cache.get("ab/cd") is None  # ignored, never an error
    cache.put("ab/cd", record)
    assert cache.get("ab/cd") == record
    cache.drop("ab/cd")
    assert cache.get("ab/cd") is None and not path.exists()
    nowhere = RecordCache(None, TimeLimits)
    nowhere.put("k", record)
    assert nowhere.get("k") is None and nowhere.path("k") is None
