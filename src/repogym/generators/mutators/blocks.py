"""Block mutators: drop a whole ``if`` or loop, lift a ``with`` body out of its context
manager, make two dependent statements trade places."""

from __future__ import annotations

import re
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, NodeMutator, Site, named_children, text
from repogym.generators.mutators.edits import delete_statement, unwrapped
from repogym.generators.mutators.runtime import holds_off_limits, is_off_limits
from repogym.generators.mutators.shared import (
    innermost,
    method_receiver,
    named_descendants,
    statement_expression,
    statements_swapped,
)

_LOOPS = {"for_statement": "for", "while_statement": "while"}
_SIMPLE = frozenset({"assignment", "augmented_assignment", "call"})
_NAMES = frozenset({"identifier", "attribute"})
_FUNCTION = frozenset({"function_definition"})
_PATTERNS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list",
                       "list_splat_pattern", "parenthesized_expression"})


def header(node: Node) -> str:
    """A compound statement's header without comments: ``for x in xs:``, ``with cm:``."""
    field = node.child_by_field_name
    if node.type == "for_statement":
        parts = f"for {text(field('left') or node)} in {text(field('right') or node)}"
    elif node.type == "with_statement":
        clause = next((c for c in node.children if c.type == "with_clause"), node)
        parts = f"with {text(clause)}"
    else:
        keyword = node.type.split("_")[0]
        parts = f"{keyword} {text(field('condition') or node)}"
    flat = " ".join(parts.split())
    return (flat if len(flat) <= 60 else flat[:57] + "...") + ":"


@MUTATORS.register("remove_conditional")
class RemoveConditional(NodeMutator):
    """An ``if`` without ``elif``/``else`` is dropped with its body (a missing guard).

    Its lines are deleted, or it becomes ``pass`` when it is alone in its block.
    """

    node_types = frozenset({"if_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the whole statement."""
        if node.children_by_field_name("alternative"):
            return
        site = delete_statement(node, source, f"`{header(node)}` block removed")
        if site is not None:
            yield site


@MUTATORS.register("remove_loop")
class RemoveLoop(NodeMutator):
    """A ``for`` or ``while`` loop (with its ``else``) is dropped."""

    node_types = frozenset(_LOOPS)

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the whole loop."""
        site = delete_statement(node, source, f"`{header(node)}` loop removed")
        if site is not None:
            yield site


def _with_items(node: Node) -> list[Node]:
    clause = next((c for c in node.children if c.type == "with_clause"), None)
    return [] if clause is None else [c for c in clause.named_children if c.type == "with_item"]


def _binding(item: Node) -> bytes | None:
    """``target = value`` for ``value as target``; None for an item without a target."""
    value = item.child_by_field_name("value")
    if value is None or value.type != "as_pattern":
        return None
    target = value.child_by_field_name("alias")
    parts = named_children(value)
    if target is None or not parts:
        return None
    return f"{text(target)} = {text(parts[0])}".encode()


@MUTATORS.register("remove_with")
class RemoveWith(NodeMutator):
    """``with cm as x: body`` becomes ``x = cm`` then ``body``: the manager is never entered.

    Items without ``as`` are dropped; the body is dedented to the ``with``'s column. Not
    when the statement holds off-limits code (a docstring, a nested definition...).
    """

    node_types = frozenset({"with_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site replacing the statement by its bindings and body."""
        body = node.child_by_field_name("body")
        if body is None or holds_off_limits(node):
            return
        bindings = [b for b in map(_binding, _with_items(node)) if b is not None]
        replacement = unwrapped(node, [*bindings, body], source)
        if replacement is not None:
            yield Site(node.start_byte, node.end_byte, replacement, node.start_point[0] + 1,
                       f"`{header(node)}` removed: its body runs unmanaged")


def _simple(stmt: Node) -> Node | None:
    """The one assignment, augmented assignment or call a statement is made of."""
    part = statement_expression(stmt, "await")
    if part is None or part.type not in _SIMPLE:
        return None
    if part.type == "assignment" and part.child_by_field_name("type") is not None:
        return None  # annotated: `x: T = v` moves its annotation, `x: T` does nothing
    return part


def _targets(node: Node) -> set[str]:
    """What assigning to ``node`` changes: names, attributes, the container of an item."""
    if node.type in _NAMES:
        return {text(node)}
    if node.type == "subscript":
        value = node.child_by_field_name("value")
        return {text(value)} if value is not None else set()
    if node.type in _PATTERNS:
        return set().union(*(_targets(c) for c in named_children(node)))
    return set()


def writes(part: Node) -> set[str]:
    """Names and attributes a simple statement assigns, or whose method it calls."""
    if part.type == "call":
        receiver = method_receiver(part, "attribute")
        return _targets(receiver) if receiver is not None else set()
    left = part.child_by_field_name("left")
    return _targets(left) if left is not None else set()


def uses(node: Node) -> set[str]:
    """Every name and attribute the node mentions."""
    return {text(n) for n in named_descendants(node) if n.type in _NAMES}


def _dependent(first: Node, second: Node) -> bool:
    return bool(writes(first) & uses(second) or writes(second) & uses(first))


def _bound_before(names: set[str], stmt: Node, source: bytes) -> bool:
    """Whether each plain name appears in the enclosing function before ``stmt``.

    When one does not, ``stmt`` binds it first, and a statement reading it cannot move
    above ``stmt`` without a blunt ``NameError``.
    """
    function = innermost(stmt, _FUNCTION)
    start = function.start_byte if function is not None else 0
    before = source[start:stmt.start_byte].decode("utf-8", "replace")
    return all(re.search(rf"\b{re.escape(name)}\b", before) for name in names)


@MUTATORS.register("swap_statements")
class SwapStatements(NodeMutator):
    """Two adjacent simple statements trade places, when their order matters.

    Simple: an assignment (not annotated), augmented assignment or call. The order
    matters when one assigns (or calls a method of) something the other mentions. Not
    when the first binds a name for the first time and the second reads it: that swap
    only raises ``NameError``.
    """

    node_types = frozenset({"block"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site per adjacent dependent pair."""
        stmts = named_children(node)
        for first, second in zip(stmts, stmts[1:]):
            yield from _swap(first, second, source)


def _swap(first: Node, second: Node, source: bytes) -> Iterator[Site]:
    a, b = _simple(first), _simple(second)
    if a is None or b is None or is_off_limits(first) or is_off_limits(second):
        return
    if text(first) == text(second) or not _dependent(a, b):
        return
    first_bound = {n for n in writes(a) & uses(b) if "." not in n}
    if not _bound_before(first_bound, first, source):
        return
    yield statements_swapped(first, second, source)
