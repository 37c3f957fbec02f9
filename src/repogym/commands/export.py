"""``repogym export``."""

from __future__ import annotations


def export() -> None:
    """Export the dataset for a trainer (placeholder until the exporters land)."""
