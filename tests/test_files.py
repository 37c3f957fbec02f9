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
