"""Text edits shared by the statement-level mutators: delete a statement, unwrap a block.

Python's blocks are made of indentation, so removing a statement or lifting a block out
of its ``with``/``try`` is a text edit that must keep the indentation right:

* :func:`delete_statement` removes the statement's whole lines, or writes ``pass`` in
  its place when it is alone in its block or shares a line with another statement
  (never a statement holding a docstring, logging call or nested definition);
* :func:`unwrapped` gives the text of one or more blocks re-indented to the column of
  the compound statement that held them, lines inside multi-line strings untouched.
"""

from __future__ import annotations

from typing import Sequence

from tree_sitter import Node

from repogym.generators.mutators import shared
from repogym.generators.mutators.base import Site, named_children, replace_node
from repogym.generators.mutators.runtime import holds_off_limits
from repogym.generators.mutators.shared import indentation, stacked, string_rows

_STRINGS = frozenset({"string"})


def whole_lines(stmt: Node, source: bytes) -> tuple[int, int] | None:
    """The byte range of the lines ``stmt`` fills alone (a trailing comment goes too)."""
    return shared.whole_lines(stmt, source, (b"#",))


def delete_statement(stmt: Node, source: bytes, description: str) -> Site | None:
    """A site removing ``stmt`` from its block (``pass`` when it is needed).

    None outside a block, or when ``stmt`` holds code no mutation may touch (see
    :func:`~repogym.generators.mutators.runtime.holds_off_limits`).
    """
    block = stmt.parent
    if block is None or block.type != "block" or holds_off_limits(stmt):
        return None
    span = whole_lines(stmt, source) if len(named_children(block)) > 1 else None
    if span is None:
        return replace_node(stmt, "pass", description)
    return Site(span[0], span[1], "", stmt.start_point[0] + 1, description)


def reindented(block: Node, indent: bytes, source: bytes) -> bytes:
    """``block``'s text with its indentation replaced by ``indent``, the first line unindented.

    A block on its header's line (``try: x()``) is returned as it is.
    """
    return shared.reindented(block, block, indent, source, string_rows(block, _STRINGS))


def unwrapped(stmt: Node, parts: Sequence[bytes | Node], source: bytes) -> str | None:
    """The text replacing ``stmt``: ``parts`` (blocks, or lines of code) one after another
    at ``stmt``'s indentation. None when ``stmt`` does not start its line."""
    indent = indentation(stmt, source)
    if indent is None:
        return None
    return stacked([p if isinstance(p, bytes) else reindented(p, indent, source)
                    for p in parts], indent)

