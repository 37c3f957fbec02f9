"""Running an export: accepted rows in, one directory out, atomically and idempotently.

The output directory ``OUT`` of an export holds the format's files plus ``export.json``
(:class:`~repogym.datasets.exports.base.ExportManifest`). Re-exporting into ``OUT``:

* ``OUT`` missing or empty: the export is written into a hidden sibling
  (``.<OUT>.tmp-<hex>``) and renamed to ``OUT`` when complete; a failure leaves nothing.
* ``OUT`` holds an export of the same format and the same rows (equal fingerprints):
  **idempotent** — nothing is written, the report says ``unchanged``.
* ``OUT`` holds anything else (another format, other rows, foreign files): **refused**
  with an :class:`~repogym.errors.InputError`, unless ``overwrite=True``, in which case the
  new export is written beside it, swapped in, and the old directory deleted.

Only accepted rows (``status == accept``) are exported, sorted by ``instance_id``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Sequence

from pydantic import ValidationError

from repogym.datasets.exports.base import (
    EXPORT_MANIFEST,
    EXPORTERS,
    ExportManifest,
    ExportOptions,
    ExportReport,
)
from repogym.errors import DatasetError, InputError, RepogymError
from repogym.schemas.arrow import TaskRow, pipeline_version
from repogym.schemas.records import Status, utcnow


def load_rows(dataset: Path, snapshot: str | None = None) -> list[TaskRow]:
    """The accepted tasks of a dataset folder, or of one of its snapshots.

    Raises:
        InputError: the dataset folder does not exist.
        DatasetError: the dataset (or snapshot) is unreadable.
    """
    dataset = Path(dataset)
    if not dataset.is_dir():
        raise InputError(f"{dataset}: no such dataset folder")
    if snapshot is None:
        from repogym.datasets.store import DatasetStore

        rows = DatasetStore(dataset).rows("tasks")
    else:
        try:
            from repogym.datasets.snapshots import read_snapshot_rows
        except ImportError as exc:  # pragma: no cover - snapshots ship with the store
            raise RepogymError(f"snapshots are not available in this repogym: {exc}") from exc
        rows = read_snapshot_rows(dataset, snapshot)
    return [r for r in rows if r.status is Status.accept]


def fingerprint(fmt: str, version: str, options: ExportOptions, rows: Sequence[TaskRow]) -> str:
    """A hash of everything an export's content depends on."""
    h = hashlib.sha256()
    h.update(json.dumps([fmt, version, options.model_dump(mode="json")]).encode())
    for row in rows:
        h.update(row.model_dump_json().encode())
        h.update(b"\0")
    return h.hexdigest()


def read_manifest(out: Path) -> ExportManifest | None:
    """``OUT/export.json``, or None when there is none or it is not a valid manifest."""
    try:
        return ExportManifest.model_validate_json((Path(out) / EXPORT_MANIFEST).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def export_rows(fmt: str, rows: Sequence[TaskRow], out: Path, *,
                options: ExportOptions | None = None, overwrite: bool = False,
                source: str = "") -> ExportReport:
    """Export accepted ``rows`` in format ``fmt`` to the directory ``out``.

    See the module docstring for what happens when ``out`` already exists.

    Raises:
        UnknownPluginError: ``fmt`` is not a registered format (lists the valid ones).
        InputError: no accepted row; ``out`` is in the way; a row cannot be exported.
        DatasetError: two rows share an ``instance_id``.
    """
    exporter = EXPORTERS.get(fmt)()
    options = options or ExportOptions()
    chosen = _accepted(rows)
    out = Path(out)
    start = time.monotonic()
    digest = fingerprint(fmt, exporter.version, options, chosen)
    current = read_manifest(out)
    if current is not None and current.format == fmt and current.fingerprint == digest:
        return _report(fmt, out, len(chosen), start, unchanged=True)
    _check_target(out, overwrite, current)
    tmp = out.parent / f".{out.name}.tmp-{secrets.token_hex(6)}"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.mkdir()
    try:
        exporter.write(chosen, tmp, options)
        manifest = ExportManifest(format=fmt, exporter_version=exporter.version,
                                  fingerprint=digest, tasks=len(chosen),
                                  instance_ids=tuple(r.instance_id for r in chosen),
                                  source=source, created_at=utcnow(),
                                  pipeline_version=pipeline_version())
        (tmp / EXPORT_MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n")
        _swap_in(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _report(fmt, out, len(chosen), start)


def export_dataset(fmt: str, out: Path, *, dataset: Path, snapshot: str | None = None,
                   options: ExportOptions | None = None,
                   overwrite: bool = False) -> ExportReport:
    """Export a dataset's accepted tasks (or a snapshot's) in format ``fmt`` to ``out``.

    The format is checked before the dataset is read.

    Raises:
        UnknownPluginError, InputError, DatasetError: as :func:`export_rows` and
            :func:`load_rows`.
    """
    EXPORTERS.get(fmt)
    rows = load_rows(dataset, snapshot)
    source = f"{dataset}" + (f" (snapshot {snapshot})" if snapshot else "")
    if not rows:
        where = f"snapshot {snapshot!r} of {dataset}" if snapshot else str(dataset)
        raise InputError(f"no accepted tasks in {where}: nothing to export")
    return export_rows(fmt, rows, out, options=options, overwrite=overwrite, source=source)


def _accepted(rows: Sequence[TaskRow]) -> list[TaskRow]:
    chosen = sorted((r for r in rows if r.status is Status.accept), key=lambda r: r.instance_id)
    if not chosen:
        raise InputError("no accepted tasks to export")
    for a, b in zip(chosen, chosen[1:], strict=False):
        if a.instance_id == b.instance_id:
            raise DatasetError(f"two rows share the instance_id {a.instance_id!r}")
    return chosen


def _check_target(out: Path, overwrite: bool, current: ExportManifest | None) -> None:
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} exists and is not a directory")
    if overwrite or not out.is_dir() or not any(out.iterdir()):
        return
    held = (f"a {current.format} export of {current.tasks} task(s) with other content"
            if current is not None else "files that are not a repogym export")
    raise InputError(f"{out} already holds {held}; choose another --out or pass --overwrite")


def _swap_in(tmp: Path, out: Path) -> None:
    """Rename the finished ``tmp`` to ``out`` (replacing an old ``out`` if there is one)."""
    if out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    if not out.exists():
        os.rename(tmp, out)
        return
    old = out.parent / f".{out.name}.old-{secrets.token_hex(6)}"
    os.rename(out, old)
    try:
        os.rename(tmp, out)
    except OSError:
        os.rename(old, out)
        raise
    with contextlib.suppress(OSError):
        shutil.rmtree(old)


def _report(fmt: str, out: Path, tasks: int, start: float, *,
            unchanged: bool = False) -> ExportReport:
    files = [p for p in out.rglob("*") if p.is_file()]
    return ExportReport(format=fmt, out=out, tasks=tasks, files=len(files),
                        bytes=sum(p.stat().st_size for p in files),
                        seconds=round(time.monotonic() - start, 3), unchanged=unchanged)
