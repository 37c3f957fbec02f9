"""Text edits shared by the statement-level mutators of the ``ecmascript`` family.

JavaScript's blocks are made of braces, so removing a statement leaves valid code
wherever a block can be empty; the traps are elsewhere:

* a statement that is the whole body of an ``if``/``else``/loop (``if (x) f();``) cannot
  simply vanish: :func:`delete_statement` writes ``{}`` in its place;
* automatic semicolon insertion: in code without semicolons, deleting or moving a
  statement can glue the statement before it to a line starting with ``(``, ``[``,
  a template or an operator (``a = b`` + ``(c || d).f()`` is one call). Such edits are
  refused (:func:`joins_safely`);
* unwrapping a block (:func:`unwrapped`) re-indents its lines to the column of the
  statement it replaces, lines inside multi-line template strings untouched.
"""

from __future__ import annotations

from typing import Sequence

from tree_sitter import Node

from repogym.generators.mutators import shared
from repogym.generators.mutators.base import Site, named_children, replace_node, text
from repogym.generators.mutators.ecmascript.runtime import (
    enclosing_statement_list,
    holds_off_limits,
)
from repogym.generators.mutators.shared import indentation, stacked, string_rows, summary

__all__ = ["delete_statement", "joins_safely", "summary", "unwrapped", "whole_lines"]

_SELF_TERMINATED = frozenset({
    "statement_block", "if_statement", "for_statement", "for_in_statement",
    "while_statement", "do_statement", "try_statement", "switch_statement",
    "function_declaration", "generator_function_declaration", "class_declaration",
    "abstract_class_declaration", "labeled_statement", "empty_statement",
    "interface_declaration", "enum_declaration", "module", "internal_module"})
_HAZARDS = ("(", "[", "`", "+", "-", "/", "*", ",", ".", "?")
_TEMPLATES = frozenset({"template_string"})


def ends_statement(stmt: Node) -> bool:
    """Whether nothing written after ``stmt`` can continue it (``;`` or a compound
    statement's closing brace)."""
    return stmt.type in _SELF_TERMINATED or text(stmt).rstrip().endswith(";")


def joins_safely(before: Node | None, after: str) -> bool:
    """Whether text ``after`` may follow statement ``before`` without automatic semicolon
    insertion gluing the two into one statement."""
    return before is None or ends_statement(before) or not after.lstrip().startswith(_HAZARDS)


def _previous(stmt: Node) -> Node | None:
    sibling = stmt.prev_named_sibling
    while sibling is not None and sibling.type == "comment":
        sibling = sibling.prev_named_sibling
    return sibling


def _next(stmt: Node) -> Node | None:
    sibling = stmt.next_named_sibling
    while sibling is not None and sibling.type == "comment":
        sibling = sibling.next_named_sibling
    return sibling


def whole_lines(stmt: Node, source: bytes) -> tuple[int, int] | None:
    """The byte range of the lines ``stmt`` fills alone (a trailing comment goes too)."""
    return shared.whole_lines(stmt, source, (b"//", b"/*"))


def delete_statement(stmt: Node, source: bytes, description: str) -> Site | None:
    """A site removing ``stmt``: its lines (or its text) from a block or ``case``, or
    ``{}`` in its place when it is the whole body of an ``if``, ``else`` or loop.

    None when ``stmt`` holds code no mutation may touch (see
    :func:`~repogym.generators.mutators.ecmascript.runtime.holds_off_limits`), or when
    removing it would glue its neighbours together.
    """
    if holds_off_limits(stmt):
        return None
    if enclosing_statement_list(stmt) is None:
        return replace_node(stmt, "{}", description)
    following = _next(stmt)
    if following is not None and not joins_safely(_previous(stmt), text(following)):
        return None
    span = whole_lines(stmt, source) or (stmt.start_byte, stmt.end_byte)
    return Site(span[0], span[1], "", stmt.start_point[0] + 1, description)


def _inner(block: Node, indent: bytes, source: bytes) -> bytes | None:
    """The statements of a ``{ ... }`` block, re-indented to ``indent`` (first line bare;
    as they are on the brace's line: ``{ a(); b() }``); None for an empty block."""
    parts = [c for c in block.children if c.is_named]
    if not parts:
        return None
    return shared.reindented(parts[0], parts[-1], indent, source,
                             string_rows(block, _TEMPLATES))


def _joins(stmt: Node, blocks: Sequence[Node]) -> bool:
    """Whether the blocks' statements, in place of ``stmt``, stay apart from each other and
    from ``stmt``'s neighbours (see :func:`joins_safely`)."""
    sequence: list[Node | None] = [_previous(stmt)]
    for block in blocks:
        parts = named_children(block)
        if parts:
            if not joins_safely(sequence[-1], text(parts[0])):
                return False
            sequence.append(parts[-1])
    following = _next(stmt)
    return following is None or joins_safely(sequence[-1], text(following))


def unwrapped(stmt: Node, blocks: Sequence[Node], source: bytes) -> str | None:
    """The text replacing ``stmt``: the statements of ``blocks`` one after another at
    ``stmt``'s indentation. None when ``stmt`` does not start its line, is not in a block,
    the blocks hold no statement, or the statements would glue to their neighbours."""
    indent = indentation(stmt, source)
    if indent is None or enclosing_statement_list(stmt) is None or not _joins(stmt, blocks):
        return None
    pieces = [p for p in (_inner(b, indent, source) for b in blocks) if p is not None]
    if not pieces:
        return None
    return stacked(pieces, indent)
