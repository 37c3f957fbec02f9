"""Statement mutators: drop a statement or an early ``return``, return a wrong value."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, replace_node, text
from repogym.generators.mutators.rust.base import RustNodeMutator, parts
from repogym.generators.mutators.rust.checks import (
    NUMERIC_TYPES,
    block_items,
    diverges,
    loops_forever_without,
    node_removable,
    tail,
)
from repogym.generators.mutators.rust.conditions import negated
from repogym.generators.mutators.rust.edits import delete_statement
from repogym.generators.mutators.rust.runtime import (
    FUNCTIONS,
    LOOPS,
    callee,
    function_of,
    holds_off_limits,
    statement_expression,
)
from repogym.generators.mutators.shared import summary

_REMOVABLE = frozenset({"call_expression", "assignment_expression", "compound_assignment_expr"})
_KEEP_CALLS = frozenset({"drop", "forget", "mem::drop", "std::mem::drop", "mem::forget",
                         "std::mem::forget", "core::mem::drop", "core::mem::forget"})
"""Calls whose removal keeps a borrow (a guard) alive past a later use: a borrow error."""


def _removed_expression(stmt: Node) -> Node | None:
    """The call or assignment an expression statement ``x;`` is made of, through ``?``
    and ``.await`` (``f()?;``, ``g().await;``)."""
    if stmt.type != "expression_statement" or not any(c.type == ";" for c in stmt.children):
        return None
    expression = statement_expression(stmt)
    while expression is not None and expression.type in ("try_expression", "await_expression"):
        inner = parts(expression)
        expression = inner[0] if len(inner) == 1 else None
    if expression is None or expression.type not in _REMOVABLE:
        return None
    if expression.type == "call_expression" and callee(expression) in _KEEP_CALLS:
        return None
    return expression


@MUTATORS.register("rs_remove_statement")
class RemoveStatement(RustNodeMutator):
    """A call (``v.push(x);``, ``self.flush()?;``), assignment (``self.pos = end;``) or
    compound assignment (``n += 1;``) statement is dropped.

    Not a ``let``, a macro (``println!``, ``write!``...), ``drop(guard)`` (the borrow it
    ends would reach a later use), nor where the block's type or a local would suffer
    (:func:`~repogym.generators.mutators.rust.edits.delete_statement`).
    """

    node_types = frozenset({"expression_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the statement."""
        if _removed_expression(node) is None:
            return
        site = delete_statement(node, source, f"`{summary(node, 50)}` removed")
        if site is not None:
            yield site


def _block_of(node: Node) -> Node | None:
    parent = node.parent
    return parent if parent is not None and parent.type == "block" else None


def _is_early(block: Node) -> bool:
    """Whether a ``return`` in ``block`` is early: the block is inside an ``if``, a loop
    or a ``match`` of its function, not the function's body itself."""
    current: Node | None = block
    while current is not None and current.type not in FUNCTIONS:
        if current.type in LOOPS or current.type in ("if_expression", "match_expression"):
            return True
        current = current.parent
    return False


@MUTATORS.register("rs_remove_early_return")
class RemoveEarlyReturn(RustNodeMutator):
    """An early ``return`` (in an ``if``, loop or ``match`` block of its function) is
    dropped: the function carries on past it.

    Only where its block's value is ``()`` or comes from a tail expression (else the
    ``return`` made the block diverge, which its type needs), not in a ``loop { ... }``
    (without the ``return`` it may never end), and not when its value holds the last use
    of a local.
    """

    node_types = frozenset({"return_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the ``return`` statement."""
        stmt = node.parent
        if stmt is None:
            return
        if stmt.type != "expression_statement":
            stmt = node
        block = _block_of(stmt)
        if block is None or not _is_early(block) or loops_forever_without(stmt):
            return
        site = delete_statement(stmt, source, f"early `{summary(node, 50)}` removed")
        if site is not None:
            yield site


# --- return value ----------------------------------------------------------------------


def _return_type(function: Node) -> str:
    result = function.child_by_field_name("return_type")
    return "".join(text(result).split()) if result is not None else ""


def _generic_argument(kind: str, outer: str) -> str | None:
    """``Option<T>`` -> ``T`` for ``outer`` ``Option``; ``Result<T,E>`` -> ``T`` for
    ``Result`` (its first argument; not for a one-argument alias such as ``io::Result<T>``,
    which may wrap ``T`` in more)."""
    for prefix in (f"{outer}<", f"std::option::{outer}<", f"std::result::{outer}<",
                   f"io::{outer}<", f"fmt::{outer}<"):
        if kind.startswith(prefix) and kind.endswith(">"):
            inner = kind[len(prefix):-1]
            depth = 0
            for i, char in enumerate(inner):
                if char in "<([":
                    depth += 1
                elif char in ">)]":
                    depth -= 1
                elif char == "," and depth == 0:
                    return inner[:i]
            return inner if outer == "Option" else None  # Result<T>: an alias, of what?
    return None


def _wrapped(value: Node, constructor: str) -> Node | None:
    """The argument of ``Some(x)`` / ``Ok(x)``, when ``value`` is such a call."""
    if value.type != "call_expression" or callee(value) != constructor:
        return None
    args = value.child_by_field_name("arguments")
    inner = parts(args) if args is not None else []
    return inner[0] if len(inner) == 1 else None


def _wrong_value(value: Node, kind: str) -> tuple[Node, str] | None:
    """What replaces (part of) ``value`` of a function returning ``kind``."""
    if _generic_argument(kind, "Option") is not None:
        if _wrapped(value, "Some") is not None:
            return value, "None"
        return None
    inner_kind = _generic_argument(kind, "Result")
    if inner_kind is not None:
        inner = _wrapped(value, "Ok")
        return _wrong_value(inner, inner_kind) if inner is not None else None
    if kind == "bool":
        if value.type == "boolean_literal":
            return None
        return value, negated(value)
    if kind in NUMERIC_TYPES:
        if value.type in ("integer_literal", "float_literal"):
            return None
        return value, "0.0" if kind.startswith("f") else "0"
    if kind == "String" and "".join(text(value).split()) != "String::new()":
        return value, "String::new()"
    if kind.startswith("Vec<") and "".join(text(value).split()) not in ("Vec::new()", "vec![]"):
        return value, "Vec::new()"
    return None


def _returned_values(node: Node) -> Iterator[Node]:
    """``x`` of ``return x``; the tail expression of a function body."""
    if node.type == "return_expression":
        inner = parts(node)
        if len(inner) == 1:
            yield inner[0]
    elif node.type == "block" and node.parent is not None \
            and node.parent.type == "function_item" \
            and node.parent.child_by_field_name("body") == node:
        end = tail(node)
        if end is not None and end.type != "expression_statement" and end == block_items(node)[-1]:
            yield end


@MUTATORS.register("rs_return_value")
class ReturnValue(RustNodeMutator):
    """A function returns a wrong value of its type: ``Some(x)`` -> ``None`` in a
    function returning ``Option``, ``Ok(Some(x))`` -> ``Ok(None)``, a ``bool`` negated
    (``return !(a < b)``), a number ``0``, a ``String`` empty, a ``Vec`` empty.

    For ``return x`` and the tail expression of a function body (not of a closure), from
    the return type the function declares; not when the value dropped holds the last use
    of a local, or fixes its type.
    """

    node_types = frozenset({"return_expression", "block"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """At most one site for a returned value."""
        function = function_of(node) if node.type == "return_expression" else node.parent
        if function is None or function.type != "function_item":
            return
        kind = _return_type(function)
        for value in _returned_values(node):
            found = _wrong_value(value, kind)
            if found is None:
                continue
            target, new = found
            if diverges(target) or holds_off_limits(target) \
                    or not node_removable(target):
                continue
            yield replace_node(target, new, f"`{summary(value, 40)}` returns `{new}` instead",
                               value)

