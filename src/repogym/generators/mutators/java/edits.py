"""Text edits shared by the statement-level mutators of the ``java`` family.

A statement is taken out of its block (its lines, or its text when it shares a line); one
that is the whole body of an ``if``/``else`` (``if (x) f();``) becomes ``{}``. Not a
statement that is the whole body of a loop (the loop may then never end) or of a ``case
->`` rule (in a ``switch`` expression, ``{}`` yields nothing); not one whose removal
takes a logging call along, leaves a variable unassigned where it is read (see
:func:`~repogym.generators.mutators.java.checks.assigns_blank`), or leaves a ``catch``
catching what nothing throws (:func:`~repogym.generators.mutators.java.checks.catch_needs_calls`).
"""

from __future__ import annotations

from tree_sitter import Node

from repogym.generators.mutators import shared
from repogym.generators.mutators.base import Site, replace_node
from repogym.generators.mutators.java.checks import assigns_blank, catch_needs_calls
from repogym.generators.mutators.java.runtime import enclosing_block, holds_off_limits
from repogym.generators.mutators.shared import summary

__all__ = ["delete_statement", "summary", "whole_lines"]

_BRANCHES = frozenset({"if_statement"})


def whole_lines(stmt: Node, source: bytes) -> tuple[int, int] | None:
    """The byte range of the lines ``stmt`` fills alone (a trailing comment goes too)."""
    return shared.whole_lines(stmt, source, (b"//", b"/*"))


def removable(stmt: Node) -> bool:
    """Whether taking ``stmt`` (and all under it) away keeps the file compiling, as far as
    the checks named in the module docstring see."""
    return not holds_off_limits(stmt) and not assigns_blank(stmt) \
        and not catch_needs_calls(stmt)


def delete_statement(stmt: Node, source: bytes, description: str) -> Site | None:
    """A site removing ``stmt`` (see the module docstring), or None."""
    if not removable(stmt):
        return None
    if enclosing_block(stmt) is None:
        parent = stmt.parent
        if parent is None or parent.type not in _BRANCHES:
            return None
        return replace_node(stmt, "{}", description)
    span = whole_lines(stmt, source) or (stmt.start_byte, stmt.end_byte)
    return Site(span[0], span[1], "", stmt.start_point[0] + 1, description)
