"""``repogym review ...``."""

from __future__ import annotations

import typer

app = typer.Typer(help="review", no_args_is_help=True)
