"""Block mutators: drop a whole ``if``, swap the values of two ``match`` arms."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, text
from repogym.generators.mutators.rust.base import RustNodeMutator, parts
from repogym.generators.mutators.rust.checks import breaks_with_value, loops_forever_without
from repogym.generators.mutators.rust.edits import delete_statement
from repogym.generators.mutators.shared import summary, swapped


def header(node: Node) -> str:
    """An ``if``'s header, on one line: ``if a < b``."""
    body = node.child_by_field_name("consequence")
    end = body.start_byte - node.start_byte if body is not None else len(text(node))
    flat = " ".join((node.text or b"")[:end].decode("utf-8", "replace").split())
    return flat if len(flat) <= 60 else flat[:57] + "..."


@MUTATORS.register("rs_remove_conditional")
class RemoveConditional(RustNodeMutator):
    """An ``if`` (or ``if let``) without ``else``, standing as a statement, is dropped
    with its body (a missing guard).

    Not an ``else if``, not one whose ``break`` or ``return`` may be the only way out of
    a ``loop { ... }`` (or gives the ``loop`` its value), and not where a local would lose
    its last use, its initialisation or the use that fixes its type.
    """

    node_types = frozenset({"if_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the whole statement."""
        stmt = node.parent
        if node.child_by_field_name("alternative") is not None or stmt is None \
                or stmt.type != "expression_statement" or loops_forever_without(node) \
                or breaks_with_value(node):
            return
        site = delete_statement(stmt, source, f"`{header(node)}` block removed")
        if site is not None:
            yield site


_SIMPLE_VALUES = frozenset({"boolean_literal", "integer_literal", "string_literal",
                            "char_literal", "float_literal", "scoped_identifier"})


def _shape(value: Node) -> str | None:
    """What a ``match`` arm's value is, when it holds no name its pattern may bind: a
    literal kind (``integer_literal``, a string's prefix...), or the path of an enum's
    variant (``Ordering::``)."""
    if value.type not in _SIMPLE_VALUES:
        return None
    if value.type == "scoped_identifier":
        path = value.child_by_field_name("path")
        return f"path {text(path)}" if path is not None else None
    if value.type in ("string_literal", "char_literal"):
        return f"{value.type} {text(value)[:1]}"
    if value.type == "integer_literal":
        from repogym.generators.mutators.rust.literals import split_literal

        found = split_literal(text(value))
        return f"integer {found[1]}" if found is not None else None
    return value.type


@MUTATORS.register("rs_match_arm_swap")
class MatchArmSwap(RustNodeMutator):
    """The values of two adjacent ``match`` arms of one shape trade places: ``A => true,
    B => false`` -> ``A => false, B => true``; ``0 => Ordering::Less, _ =>
    Ordering::Greater`` likewise.

    Only literals of one kind, or paths into one enum, which no pattern binds: the swap
    builds whatever the patterns are.
    """

    node_types = frozenset({"match_block"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site per swappable adjacent pair of arms."""
        arms = [a for a in parts(node) if a.type == "match_arm"]
        for first, second in zip(arms, arms[1:]):
            a, b = first.child_by_field_name("value"), second.child_by_field_name("value")
            if a is None or b is None or text(a) == text(b):
                continue
            shape = _shape(a)
            if shape is None or shape != _shape(b):
                continue
            yield swapped(a, b, source, first.start_point[0] + 1,
                          f"values `{summary(a, 25)}` and `{summary(b, 25)}` of two match "
                          "arms swapped")
