"""Text edits shared by the statement-level mutators of the ``go`` family.

Go's bodies are always blocks, so a statement is always taken out of a statement list,
which may be left empty (``if x {\\n}`` builds). What removal breaks in Go is elsewhere:
a variable, import or label it held the last use of, a declaration a later statement
needs, the ``return`` a function with results must end in. Those are told by
:func:`~repogym.generators.mutators.golang.base.building`, which every removal goes
through.
"""

from __future__ import annotations

from tree_sitter import Node

from repogym.generators.mutators import shared
from repogym.generators.mutators.base import Site
from repogym.generators.mutators.golang.base import building
from repogym.generators.mutators.golang.runtime import enclosing_statement_list, holds_off_limits
from repogym.generators.mutators.shared import summary

__all__ = ["delete_statement", "summary", "whole_lines"]


def whole_lines(stmt: Node, source: bytes) -> tuple[int, int] | None:
    """The byte range of the lines ``stmt`` fills alone (a trailing comment goes too)."""
    return shared.whole_lines(stmt, source, (b"//", b"/*"))


def _span(stmt: Node, source: bytes) -> tuple[int, int]:
    """What to delete: the statement's lines, or its text and the ``;`` (and blanks) after
    it when it shares a line (``a(); b()``)."""
    lines = whole_lines(stmt, source)
    if lines is not None:
        return lines
    end = stmt.end_byte
    rest = source[end:]
    stripped = rest.lstrip(b" \t")
    if stripped.startswith(b";"):
        after = stripped[1:]
        end += len(rest) - len(after.lstrip(b" \t"))
    return stmt.start_byte, end


def delete_statement(stmt: Node, source: bytes, description: str) -> Site | None:
    """A site removing ``stmt`` from its statement list.

    None when ``stmt`` is in no statement list (an ``if`` header's statement), holds code
    no mutation may touch (see
    :func:`~repogym.generators.mutators.golang.runtime.holds_off_limits`), or the file
    would no longer build without it (:func:`~repogym.generators.mutators.golang.base.building`).
    """
    if enclosing_statement_list(stmt) is None or holds_off_limits(stmt):
        return None
    start, end = _span(stmt, source)
    return building(Site(start, end, "", stmt.start_point[0] + 1, description), source)
