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

from repogym.generators.mutators.base import Site, named_children, replace_node, text
from repogym.generators.mutators.runtime import holds_off_limits


def summary(node: Node, limit: int = 60) -> str:
    """The node's text on one line, cut to ``limit`` characters."""
    flat = " ".join(text(node).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def whole_lines(stmt: Node, source: bytes) -> tuple[int, int] | None:
    """The byte range of the lines ``stmt`` fills alone (a trailing comment goes too)."""
    line_start = source.rfind(b"\n", 0, stmt.start_byte) + 1
    if source[line_start:stmt.start_byte].strip():
        return None
    newline = source.find(b"\n", stmt.end_byte)
    line_end = len(source) if newline < 0 else newline + 1
    rest = source[stmt.end_byte:line_end].strip()
    if rest and not rest.startswith(b"#"):
        return None
    return line_start, line_end


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


def _string_rows(block: Node) -> set[int]:
    """Rows that begin inside a multi-line string (their indentation is string content)."""
    rows: set[int] = set()
    stack = [block]
    while stack:
        node = stack.pop()
        if node.type == "string" and node.end_point[0] > node.start_point[0]:
            rows.update(range(node.start_point[0] + 1, node.end_point[0] + 1))
        else:
            stack.extend(node.children)
    return rows


def _line_start(source: bytes, byte: int) -> int:
    return source.rfind(b"\n", 0, byte) + 1


def reindented(block: Node, indent: bytes, source: bytes) -> bytes:
    """``block``'s text with its indentation replaced by ``indent``, the first line unindented.

    A block on its header's line (``try: x()``) is returned as it is.
    """
    start = _line_start(source, block.start_byte)
    own_indent = source[start:block.start_byte]
    if own_indent.strip():
        return source[block.start_byte:block.end_byte]
    strings = _string_rows(block)
    lines = source[start:block.end_byte].split(b"\n")
    out = [lines[0][len(own_indent):]]
    for row, line in enumerate(lines[1:], start=block.start_point[0] + 1):
        keep = row in strings or not line.startswith(own_indent)
        out.append(line if keep else indent + line[len(own_indent):])
    return b"\n".join(out)


def unwrapped(stmt: Node, parts: Sequence[bytes | Node], source: bytes) -> str | None:
    """The text replacing ``stmt``: ``parts`` (blocks, or lines of code) one after another
    at ``stmt``'s indentation. None when ``stmt`` does not start its line."""
    indent = source[_line_start(source, stmt.start_byte):stmt.start_byte]
    if indent.strip():
        return None
    pieces = [p if isinstance(p, bytes) else reindented(p, indent, source) for p in parts]
    return (b"\n" + indent).join(pieces).decode("utf-8", "replace")

