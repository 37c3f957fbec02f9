"""``repogym dataset ...``."""

from __future__ import annotations

import typer

app = typer.Typer(help="dataset", no_args_is_help=True)
