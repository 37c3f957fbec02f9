"""Snapshots: named, immutable versions of the accepted tasks, to train or evaluate on.

Layout (under the dataset root of :class:`~repogym.datasets.store.DatasetStore`)::

    <root>/snapshots/
      _ledger.jsonl                           every name ever used, one JSON line each
      .tmp-<name>-<hex>/                      a snapshot being made (renamed when complete)
      <name>/
        snapshot.json                         the manifest (:class:`SnapshotManifest`)
        tasks/<repo>/part-*.parquet           the store's part files, frozen

A snapshot holds the ``tasks`` table as it was when the snapshot was made: the store's part
files, hard-linked (copied where the file system cannot link) and made read-only. Part files
are never modified in the store (compaction writes a new file and unlinks the old ones), so
a hard link keeps the snapshot's bytes whatever the store does later. ``<name>/tasks`` reads
like the store's ``tasks`` directory (pandas, polars, duckdb, HF ``datasets``).

``snapshot.json`` records the name, creation time, schema and pipeline versions, the task
count per repo and per kind, a **content hash** and every file with its sha256. The content
hash is the sha256 of the lines ``<instance_id>\\t<row hash>\\n`` sorted by id, where the row
hash is the sha256 of the row's canonical JSON (:func:`row_hash`): two snapshots of the same
rows have the same content hash however the rows are split into files.

Guarantees:

* **Atomic.** The snapshot is assembled in ``.tmp-*`` and renamed into place whole, under the
  store's writer lock (so it sees no half-finished write or compaction).
* **Names are never reused.** A name is a safe path segment (:data:`NAME_PATTERN`); a name
  in use, or recorded in ``_ledger.jsonl`` (even if its directory was removed by hand), is
  refused.
* **Verified reads.** :func:`read_snapshot_rows` checks every file's sha256, that no file
  was added or removed, and the content hash; each file is read through
  :func:`~repogym.datasets.store.read_part`, which refuses unknown schema versions.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Iterable, Sequence

from pydantic import ValidationError

from repogym.datasets.store import DatasetStore, is_part_file, read_part, rows_of
from repogym.errors import DatasetError, InputError
from repogym.files import TMP_PREFIX, fsync_dir
from repogym.schemas.arrow import READABLE_VERSIONS, SCHEMA_VERSION, TaskRow, pipeline_version
from repogym.schemas.records import Record, utcnow

SNAPSHOTS_DIR = "snapshots"
MANIFEST_NAME = "snapshot.json"
LEDGER_NAME = "_ledger.jsonl"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""A snapshot name: letters, digits, ``.``, ``_``, ``-``; starts with a letter or digit."""
_CHUNK = 1 << 20
_READ_ONLY = 0o444


class SnapshotFile(Record):
    """One frozen part file: its path relative to the snapshot directory, sha256 and size."""

    path: str
    sha256: str
    rows: int
    bytes: int


class SnapshotManifest(Record):
    """The content of ``snapshot.json``."""

    name: str
    created_at: datetime
    schema_version: int
    pipeline_version: str
    total: int
    repos: dict[str, int]
    kinds: dict[str, int]
    content_hash: str
    files: tuple[SnapshotFile, ...]


def snapshots_dir(root: Path) -> Path:
    """``<root>/snapshots``."""
    return Path(root) / SNAPSHOTS_DIR


def check_name(name: str) -> str:
    """``name`` if it is a valid snapshot name.

    Raises:
        InputError: it is not one safe path segment matching :data:`NAME_PATTERN`.
    """
    if not NAME_PATTERN.fullmatch(name):
        raise InputError(f"invalid snapshot name {name!r}: use 1-128 letters, digits, '.', "
                         "'_' or '-', starting with a letter or digit")
    return name


def row_hash(row: TaskRow) -> str:
    """sha256 (hex) of the row's canonical JSON (keys sorted, UTF-8)."""
    text = json.dumps(row.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def content_hash(rows: Iterable[TaskRow]) -> str:
    """sha256 (hex) over the sorted ``(instance_id, row hash)`` pairs of ``rows``."""
    h = hashlib.sha256()
    for iid, digest in sorted((r.instance_id, row_hash(r)) for r in rows):
        h.update(f"{iid}\t{digest}\n".encode())
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


# -- creating ---------------------------------------------------------------------------

def create_snapshot(root: Path, name: str) -> SnapshotManifest:
    """Freeze the accepted tasks of the dataset at ``root`` as snapshot ``name``.

    Runs under the store's writer lock. Earlier snapshots are not touched.

    Raises:
        InputError: ``name`` is not a valid snapshot name.
        DatasetError: the name is already used (now or ever), the ``tasks`` table is empty,
            a part file is unreadable or of another schema version, or an id is repeated.
        OSError: a file could not be linked, copied or written (nothing is left behind).
    """
    check_name(name)
    store = DatasetStore(Path(root))
    if not store.root.is_dir():
        raise DatasetError(f"{store.root}: no dataset here; nothing to snapshot")
    with store.exclusive():
        base = snapshots_dir(store.root)
        _check_unused(base, name)
        _remove_stale(base)
        files = store.part_files("tasks")
        if not files:
            raise DatasetError(f"{store.root}: no accepted tasks; nothing to snapshot")
        manifest = _assemble(store.root, base, name, files)
        _append_ledger(base, manifest)
    return manifest


def _check_unused(base: Path, name: str) -> None:
    if (base / name).exists():
        raise DatasetError(f"snapshot {name!r} already exists in {base}; snapshots are "
                           "immutable, pick a new name")
    used = {entry.get("name"): entry for entry in _ledger(base)}
    if name in used:
        raise DatasetError(f"snapshot name {name!r} was used before (created "
                           f"{used[name].get('created_at')}, since removed); names are never "
                           "reused, pick a new one")


def _remove_stale(base: Path) -> None:
    """Delete snapshot directories a crash left half-made. Only safe under the lock."""
    for path in base.glob(f"{TMP_PREFIX}*") if base.is_dir() else []:
        _make_writable(path)
        shutil.rmtree(path, ignore_errors=True)


def _assemble(root: Path, base: Path, name: str, files: Sequence[Path]) -> SnapshotManifest:
    """Build the snapshot in a temp directory and rename it to ``<base>/<name>``."""
    tmp = base / f"{TMP_PREFIX}{name}-{secrets.token_hex(4)}"
    tmp.mkdir(parents=True)
    try:
        frozen = [_freeze(src, tmp / src.relative_to(root)) for src in files]
        manifest = _manifest_of(name, tmp, frozen)
        _write_manifest(tmp, manifest)
        os.rename(tmp, base / name)
    except BaseException:
        _make_writable(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(base)
    return manifest


def _freeze(src: Path, dst: Path) -> Path:
    """Hard-link ``src`` at ``dst`` (copy if linking is impossible), read-only; ``dst``."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:  # another file system, or links not supported
        shutil.copyfile(src, dst)
        with open(dst, "rb") as fh:
            os.fsync(fh.fileno())
    os.chmod(dst, _READ_ONLY)
    return dst


def _manifest_of(name: str, directory: Path, files: Sequence[Path]) -> SnapshotManifest:
    entries, rows = [], []
    for path in files:
        part_rows = rows_of(path, read_part(path))
        rows += part_rows
        entries.append(SnapshotFile(path=path.relative_to(directory).as_posix(),
                                    sha256=file_sha256(path), rows=len(part_rows),
                                    bytes=path.stat().st_size))
    _check_unique(rows, directory)
    return SnapshotManifest(
        name=name, created_at=utcnow(), schema_version=SCHEMA_VERSION,
        pipeline_version=pipeline_version(), total=len(rows),
        repos=_count(r.repo for r in rows), kinds=_count(r.kind.value for r in rows),
        content_hash=content_hash(rows), files=tuple(entries))


def _check_unique(rows: Sequence[TaskRow], where: Path) -> None:
    repeated = [iid for iid, n in Counter(r.instance_id for r in rows).items() if n > 1]
    if repeated:
        raise DatasetError(f"{where}: instance ids repeated across part files "
                           f"({', '.join(sorted(repeated)[:5])}); the store is inconsistent")


def _count(values: Iterable[str]) -> dict[str, int]:
    return dict(sorted(Counter(values).items()))


def _write_manifest(directory: Path, manifest: SnapshotManifest) -> None:
    path = directory / MANIFEST_NAME
    path.write_text(manifest.model_dump_json(indent=2) + "\n")
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())
    os.chmod(path, _READ_ONLY)
    for sub in sorted({p.parent for p in directory.rglob("*")}, reverse=True):
        fsync_dir(sub)


def _append_ledger(base: Path, manifest: SnapshotManifest) -> None:
    entry = {"name": manifest.name, "created_at": manifest.created_at.isoformat(),
             "content_hash": manifest.content_hash}
    with open(base / LEDGER_NAME, "a") as fh:
        fh.write(json.dumps(entry) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _ledger(base: Path) -> list[dict[str, str]]:
    """The ledger's entries (a torn last line from a crash is ignored)."""
    try:
        lines = (base / LEDGER_NAME).read_text().splitlines()
    except FileNotFoundError:
        return []
    entries = []
    for line in lines:
        with contextlib.suppress(ValueError):
            entries.append(json.loads(line))
    return [e for e in entries if isinstance(e, dict)]


def _make_writable(directory: Path) -> None:
    for path in directory.rglob("*"):
        with contextlib.suppress(OSError):
            if path.is_file():
                os.chmod(path, 0o644)




# -- reading ----------------------------------------------------------------------------

def list_snapshots(root: Path) -> list[SnapshotManifest]:
    """Every snapshot of the dataset at ``root``, oldest first (empty if there is none).

    Raises:
        DatasetError: a snapshot's ``snapshot.json`` is not a valid manifest.
    """
    base = snapshots_dir(root)
    if not base.is_dir():
        return []
    names = [d.name for d in base.iterdir()
             if d.is_dir() and NAME_PATTERN.fullmatch(d.name) and (d / MANIFEST_NAME).is_file()]
    return sorted((load_snapshot(root, n) for n in names), key=lambda m: (m.created_at, m.name))


def load_snapshot(root: Path, name: str) -> SnapshotManifest:
    """The manifest of snapshot ``name`` (files are not verified; see :func:`verify_snapshot`).

    Raises:
        DatasetError: there is no such snapshot (the message lists the ones that exist), or
            its ``snapshot.json`` is not a valid manifest.
    """
    base = snapshots_dir(root)
    path = base / name / MANIFEST_NAME
    if not NAME_PATTERN.fullmatch(name) or not path.is_file():
        existing = sorted(m.name for m in list_snapshots(root))
        known = ", ".join(existing) if existing else "none yet"
        raise DatasetError(f"unknown snapshot {name!r} in {Path(root)}; snapshots: {known}")
    try:
        manifest = SnapshotManifest.model_validate_json(path.read_text())
    except (ValueError, ValidationError) as exc:
        raise DatasetError(f"{path}: not a valid snapshot manifest ({exc})") from exc
    if manifest.name != name:
        raise DatasetError(f"{path}: manifest is for snapshot {manifest.name!r}, not {name!r}")
    return manifest


def verify_snapshot(root: Path, name: str) -> SnapshotManifest:
    """Check that snapshot ``name`` is exactly what its manifest says; the manifest.

    Checks the schema version, that the directory holds exactly the listed part files, and
    every file's sha256.

    Raises:
        DatasetError: unknown snapshot, or any check failed (the message says which file).
    """
    manifest = load_snapshot(root, name)
    directory = snapshots_dir(root) / name
    if manifest.schema_version not in READABLE_VERSIONS:
        raise DatasetError(f"{directory}: snapshot has schema version "
                           f"{manifest.schema_version}, but this repogym reads only "
                           f"{', '.join(map(str, READABLE_VERSIONS))}")
    listed = {f.path for f in manifest.files}
    found = {p.relative_to(directory).as_posix() for p in directory.rglob("*")
             if p.is_file() and is_part_file(p)}
    if listed != found:
        extra, missing = sorted(found - listed), sorted(listed - found)
        raise DatasetError(f"{directory}: snapshot was altered: files added {extra}, "
                           f"removed {missing}")
    for entry in manifest.files:
        if file_sha256(directory / entry.path) != entry.sha256:
            raise DatasetError(f"{directory / entry.path}: snapshot was altered: sha256 "
                               "differs from snapshot.json")
    return manifest


def read_snapshot_rows(root: Path, name: str) -> list[TaskRow]:
    """The tasks of snapshot ``name``, verified (file hashes, file list, content hash).

    Rows come in the manifest's file order, each file's rows in stored order.

    Raises:
        DatasetError: there is no such snapshot (the message lists the ones that exist), it
            was altered (a file added, removed or changed; the content hash differs), or a
            file is of another schema version.
    """
    manifest = verify_snapshot(root, name)
    directory = snapshots_dir(root) / name
    rows = [row for entry in manifest.files
            for row in rows_of(directory / entry.path, read_part(directory / entry.path))]
    if len(rows) != manifest.total or content_hash(rows) != manifest.content_hash:
        raise DatasetError(f"{directory}: snapshot content does not match its content hash")
    return rows
