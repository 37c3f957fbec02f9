"""``repogym dataset ...``: snapshots, compaction and the manifest of the dataset.

    repogym dataset snapshot NAME [--dataset DIR]   freeze the accepted tasks as NAME
    repogym dataset snapshots [--dataset DIR]       list the snapshots, oldest first
    repogym dataset show [NAME] [--dataset DIR]     the store's manifest, or NAME's, as JSON
    repogym dataset compact [--table T] [--repo R]  merge each partition's part files
    repogym dataset reverify [--repo R] [--workers N]  grade every task's gold and empty patch
                                                    again; retire those that no longer hold

``--dataset`` defaults to ``Settings().out`` (``REPOGYM_OUT``). Results go to stdout;
errors are one line ``error: ...`` on stderr with exit code 1 (2 for bad usage).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional

import typer
from pydantic import BaseModel
from rich.console import Console

if TYPE_CHECKING:
    from repogym.datasets.reverify import ReverifyReport

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
def compact(table: Optional[str] = typer.Option(None, help="tasks, rejected, infra or retired (default: all)."),
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


@app.command("reverify")
def reverify(repo: Optional[str] = typer.Option(None, help="One repository (default: all)."),
             workers: int = typer.Option(2, min=1, help="Grades at a time."),
             provider: str = typer.Option("docker", help="The sandbox provider."),
             dataset: Optional[Path] = DATASET_OPTION) -> None:
    """Re-verify accepted tasks in their images as they are now: the gold patch must still
    score 1 and an empty patch 0. Tasks that no longer hold move to the `retired` table
    (never deleted; snapshots keep theirs); the others count one more re-verification."""
    from repogym.datasets.reverify import reverify as run_reverify
    from repogym.datasets.store import DatasetStore
    from repogym.errors import DatasetError

    root = _root(dataset)
    with _errors():
        if not root.is_dir():
            raise DatasetError(f"{root}: no dataset here")
        report = run_reverify(DatasetStore(root), repo=repo, workers=workers,
                              provider=provider)
        updated = _record_reverified(root, report, provider, repo)
    for line in report.lines():
        typer.echo(line)
    if updated:
        typer.echo(f"corpus state: the environments now recorded for {', '.join(updated)} "
                   "(the next corpus run does not re-verify these tasks again)")
    if report.undecided:
        raise typer.Exit(1)


def _record_reverified(root: Path, report: ReverifyReport, provider: str,
                       repo: Optional[str]) -> list[str]:
    """The corpus state of a dataset that corpus runs write to, told of the re-verification
    (:func:`repogym.flows.corpus_flow.record_reverified`)."""
    from repogym.config import Settings
    from repogym.corpus.state import StateStore
    from repogym.flows.corpus_flow import record_reverified
    from repogym.sandboxes import get_provider

    if not report.checked or not StateStore(root).repos():
        return []
    return record_reverified(root, report, get_provider(provider, Settings()), repo)


@app.command("split")
def split(name: str = typer.Argument(..., help="The split set's name, e.g. v1-time."),
          snapshot: str = typer.Option(..., help="The snapshot to split (splits are stored "
                                                 "in it)."),
          cutoff: Optional[str] = typer.Option(
              None, help="ISO date: eval tasks only from mined commits authored after it."),
          eval_fraction: float = typer.Option(0.2, help="Share of groups for eval when no "
                                                        "cutoff is given."),
          validation_share: float = typer.Option(0.5, help="Share of eval groups that go to "
                                                           "validation (the rest: test)."),
          group_by: str = typer.Option("function", help="function, file or repo: tasks "
                                                        "that stay together."),
          threshold: float = typer.Option(0.5, help="Near-duplicate threshold (Jaccard)."),
          reference: Optional[Path] = typer.Option(
              None, help="JSONL of {id, statement, patch}: tasks overlapping it stay out of "
                         "eval."),
          dataset: Optional[Path] = DATASET_OPTION) -> None:
    """Write train/validation/test splits into a snapshot, near-duplicates kept together
    and reference overlaps kept out of eval; print the counts."""
    from datetime import datetime

    from repogym.datasets.overlap import load_reference
    from repogym.datasets.snapshots import check_name, read_snapshot_rows, snapshots_dir
    from repogym.datasets.splits import GroupBy, SplitSettings, plan_splits, write_plan
    from repogym.errors import InputError

    root = _root(dataset)
    with _errors():
        try:
            when = datetime.fromisoformat(cutoff) if cutoff else None
            by = GroupBy(group_by)
        except ValueError as exc:
            raise InputError(f"bad --cutoff or --group-by: {exc}") from exc
        check_name(name)
        rows = read_snapshot_rows(root, snapshot)
        ref = load_reference(reference) if reference else []
        settings = SplitSettings(cutoff=when, eval_fraction=eval_fraction,
                                 validation_share=validation_share, group_by=by,
                                 threshold=threshold)
        plan = plan_splits(rows, settings, name=name, snapshot=snapshot, reference=ref,
                           reference_name=str(reference) if reference else None)
        path = write_plan(snapshots_dir(root) / snapshot, plan)
    counts = ", ".join(f"{k} {v}" for k, v in plan.counts.items())
    typer.echo(f"split {name} of {snapshot}: {counts}; {plan.suspects} suspect(s) kept out "
               f"of eval; near-duplicate rate {plan.near_duplicate_rate:.1%}")
    typer.echo(str(path))
