"""``repogym export``: write the dataset's accepted tasks in a format a trainer loads.

    repogym export --format FORMAT --out DIR [--snapshot NAME] [--dataset DIR] [--overwrite]

Formats: harbor, hf, swebench, verl (:mod:`repogym.datasets.exports`). The dataset folder
defaults to ``REPOGYM_OUT`` (:attr:`repogym.config.Settings.out`). Re-exporting the same
tasks to the same DIR does nothing; a DIR holding anything else is refused unless
``--overwrite``. Prints one JSON line (the export's report) on stdout; errors are one line
``error: ...`` on stderr, exit code 2 for bad input and 1 for other failures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

FORMATS_HELP = "Export format: harbor, hf, swebench or verl."


def _fail(message: str, code: int) -> typer.Exit:
    from rich.console import Console

    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False,
                               soft_wrap=True)
    return typer.Exit(code)


def export(
    format: str = typer.Option(..., "--format", "-f", help=FORMATS_HELP),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write the export to."),
    snapshot: Optional[str] = typer.Option(None, help="Export this snapshot of the dataset."),
    dataset: Optional[Path] = typer.Option(
        None, help="Dataset folder (default: REPOGYM_OUT, i.e. the run's --out)."),
    overwrite: bool = typer.Option(False, help="Replace whatever DIR holds."),
) -> None:
    """Export the dataset's accepted tasks for a trainer or harness."""
    from repogym.config import Settings
    from repogym.datasets.exports import export_dataset
    from repogym.errors import InputError, RepogymError

    root = dataset if dataset is not None else Settings().out
    try:
        report = export_dataset(format, out, dataset=root, snapshot=snapshot,
                                overwrite=overwrite)
    except InputError as exc:
        raise _fail(str(exc).splitlines()[0], 2) from None
    except RepogymError as exc:
        raise _fail(str(exc).splitlines()[0], 1) from None
    typer.echo(json.dumps(report.model_dump(mode="json")))
