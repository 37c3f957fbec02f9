"""Statement mutators: drop a simple statement, make a ``return`` return ``None``."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import (
    MUTATORS, NodeMutator, Site, named_children, replace_node, text)

_REMOVABLE = frozenset({"assignment", "augmented_assignment", "call", "await"})
_TRIVIAL_RETURNS = frozenset({"none"})


def _removable_kind(stmt: Node) -> str | None:
    """``assignment``/``augmented assignment``/``call`` for a statement we may drop."""
    parts = named_children(stmt)
    if len(parts) != 1 or parts[0].type not in _REMOVABLE:
        return None
    part = parts[0]
    if part.type == "assignment" and part.child_by_field_name("type") is not None:
        return None  # `x: T = v` would take its annotation along; `x: T` does nothing
    if part.type == "await":
        inner = named_children(part)
        return "call" if len(inner) == 1 and inner[0].type == "call" else None
    return part.type.replace("_", " ")


def _whole_lines(stmt: Node, source: bytes) -> tuple[int, int] | None:
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


@MUTATORS.register("remove_statement")
class RemoveStatement(NodeMutator):
    """Drop one assignment, augmented assignment or call statement.

    The statement's lines are deleted; when it is the only statement of its block, or
    shares a line with another statement, it is replaced by ``pass`` instead. Annotated
    assignments are kept (their annotation would go with them).
    """

    node_types = frozenset({"expression_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for a removable statement directly in a block."""
        kind = _removable_kind(node)
        block = node.parent
        if kind is None or block is None or block.type != "block":
            return
        description = f"{kind} `{_summary(node)}` removed"
        span = _whole_lines(node, source) if len(named_children(block)) > 1 else None
        if span is None:
            yield replace_node(node, "pass", description)
        else:
            yield Site(span[0], span[1], "", node.start_point[0] + 1, description)


def _summary(node: Node, limit: int = 60) -> str:
    flat = " ".join(text(node).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _function_of(node: Node) -> Node | None:
    current = node.parent
    while current is not None and current.type not in ("function_definition", "lambda"):
        current = current.parent
    return current


def _is_generator(function: Node) -> bool:
    """Whether the function's own body (not nested functions) contains ``yield``."""
    body = function.child_by_field_name("body")
    stack = [body] if body is not None else []
    while stack:
        node = stack.pop()
        if node.type == "yield":
            return True
        if node.type not in ("function_definition", "lambda", "class_definition"):
            stack.extend(node.children)
    return False


@MUTATORS.register("return_value")
class ReturnValue(NodeMutator):
    """``return x`` becomes ``return None`` (not in generators, not when x is None)."""

    node_types = frozenset({"return_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the returned expression replaced by ``None``."""
        parts = named_children(node)
        if len(parts) != 1 or parts[0].type in _TRIVIAL_RETURNS:
            return
        function = _function_of(node)
        if function is None or _is_generator(function):
            return
        yield replace_node(parts[0], "None",
                           f"`return {_summary(parts[0])}` returns None instead", node)
