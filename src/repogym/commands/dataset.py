"""``repogym dataset ...``: snapshots, compaction and the manifest of the dataset.

    repogym dataset snapshot NAME [--dataset DIR]   freeze the accepted tasks as NAME
    repogym dataset snapshots [--dataset DIR]       list the snapshots, oldest first
    repogym dataset show [NAME] [--dataset DIR]     the store's manifest, or NAME's, as JSON
    repogym dataset compact [--table T] [--repo R]  merge each partition's part files

``--dataset`` defaults to ``Settings().out`` (``REPOGYM_OUT``). Results go to stdout;
errors are one line ``error: ...`` on stderr with exit code 1 (2 for bad usage).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator, Optional

import typer
from pydantic import BaseModel
from rich.console import Console

app = typer.Typer(help="dataset", no_args_is_help=True)
_err = Console(stderr=True)

DATASET_OPTION = typer.Option(None, "--dataset", help="Dataset folder (default: REPOGYM_OUT).")


def _root(dataset: Optional[Path]) -> Path:
    from repogym.config import Settings

    return dataset if dataset is not None else Settings().out


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """Turn a :class:`RepogymError` into ``error: <first line>`` and exit code 1."""
    from repogym.errors import InputError, RepogymError

    try:
        yield
    except RepogymError as exc:
        _err.print(f"[bold red]error:[/] {str(exc).splitlines()[0]}", highlight=False,
                   soft_wrap=True)
        raise typer.Exit(2 if isinstance(exc, InputError) else 1) from None


@app.command("snapshot")
def snapshot(name: str = typer.Argument(..., help="A new name, e.g. v1 or 2024-06-01."),
             dataset: Optional[Path] = DATASET_OPTION) -> None:
    """Freeze the current accepted tasks as an immutable, named snapshot."""
    from repogym.datasets.snapshots import create_snapshot, snapshots_dir

    root = _root(dataset)
    with _errors():
        m = create_snapshot(root, name)
    typer.echo(f"snapshot {m.name}: {m.total} task(s) in {len(m.repos)} repo(s), "
               f"{len(m.files)} file(s), content sha256 {m.content_hash}")
    typer.echo(str(snapshots_dir(root) / m.name))


@app.command("snapshots")
def snapshots(dataset: Optional[Path] = DATASET_OPTION) -> None:
    """List the snapshots: name, creation time, tasks, content hash (oldest first)."""
    from repogym.datasets.snapshots import list_snapshots

    with _errors():
        found = list_snapshots(_root(dataset))
    if not found:
        _err.print(f"no snapshots in {_root(dataset)}", highlight=False)
        return
    width = max(len(m.name) for m in found)
    for m in found:
        typer.echo(f"{m.name:<{width}}  {m.created_at.isoformat(timespec='seconds')}  "
                   f"{m.total:>6} task(s)  {m.content_hash[:16]}")


@app.command("show")
def show(name: Optional[str] = typer.Argument(None, help="A snapshot (default: the store)."),
         dataset: Optional[Path] = DATASET_OPTION) -> None:
    """Print the manifest of the store, or of snapshot NAME, as JSON."""
    from repogym.datasets.snapshots import load_snapshot
    from repogym.datasets.store import DatasetStore
    from repogym.errors import DatasetError

    root = _root(dataset)
    with _errors():
        if name is not None:
            shown: BaseModel | None = load_snapshot(root, name)
        else:
            shown = DatasetStore(root).manifest()
            if shown is None:
                raise DatasetError(f"{root}: no dataset here (no manifest.json)")
    assert shown is not None  # _errors() exits on every error
    typer.echo(shown.model_dump_json(indent=2))


@app.command("compact")
def compact(table: Optional[str] = typer.Option(None, help="tasks, rejected or infra (default: all)."),
            repo: Optional[str] = typer.Option(None, help="One repository (default: all)."),
            dataset: Optional[Path] = DATASET_OPTION) -> None:
    """Merge each partition's part files into one (snapshots are not affected)."""
    from repogym.datasets.store import TABLES, DatasetStore
    from repogym.errors import DatasetError

    if table is not None and table not in TABLES:
        _err.print(f"[bold red]error:[/] unknown table {table!r}; valid tables: "
                   f"{', '.join(TABLES)}", highlight=False)
        raise typer.Exit(2)
    root = _root(dataset)
    with _errors():
        if not root.is_dir():
            raise DatasetError(f"{root}: no dataset here")
        result = DatasetStore(root).compact(table, repo)
    for p in result.partitions:
        typer.echo(f"{p.table}/{p.repo}: {p.replaced} files -> 1 ({p.rows} rows)")
    typer.echo(f"compacted {len(result.partitions)} partition(s), "
               f"{result.files_removed} file(s) fewer")
