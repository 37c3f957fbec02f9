"""Taking a statement out of its block, for the statement-level mutators of the ``rust``
family.

Every removal goes through :func:`delete_statement`, which proposes it only when the
block keeps its type (:func:`~repogym.generators.mutators.rust.checks.removable`), no
code that no mutation may touch goes along
(:func:`~repogym.generators.mutators.rust.runtime.holds_off_limits`), and every local the
statement mentions stays used, initialised and inferable
(:func:`~repogym.generators.mutators.rust.checks.keeps_locals`).
"""

from __future__ import annotations

from tree_sitter import Node

from repogym.generators.mutators import shared
from repogym.generators.mutators.base import Site
from repogym.generators.mutators.rust.checks import keeps_locals, removable
from repogym.generators.mutators.rust.runtime import holds_off_limits


def whole_lines(stmt: Node, source: bytes) -> tuple[int, int] | None:
    """The byte range of the lines ``stmt`` fills alone (a trailing comment goes too)."""
    return shared.whole_lines(stmt, source, (b"//", b"/*"))


def _span(stmt: Node, source: bytes) -> tuple[int, int]:
    """The statement's lines, or its text and the blanks after it when it shares a line
    (``a(); b();``)."""
    lines = whole_lines(stmt, source)
    if lines is not None:
        return lines
    end = stmt.end_byte
    rest = source[end:]
    return stmt.start_byte, end + len(rest) - len(rest.lstrip(b" \t"))


def delete_statement(stmt: Node, source: bytes, description: str) -> Site | None:
    """A site removing ``stmt`` from its block; None where that may not build (module
    docstring)."""
    if not removable(stmt) or holds_off_limits(stmt) \
            or not keeps_locals(stmt, stmt.start_byte, stmt.end_byte):
        return None
    start, end = _span(stmt, source)
    return Site(start, end, "", stmt.start_point[0] + 1, description)
