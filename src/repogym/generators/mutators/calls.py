"""Call mutators: swap two positional arguments, drop a call from a method chain."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, NodeMutator, Site, named_children, text
from repogym.generators.mutators.shared import arguments_swapped, chain_link_dropped

LITERALS = frozenset({"integer", "float", "string", "concatenated_string", "true", "false",
                      "none", "ellipsis"})
_NOT_POSITIONAL = frozenset({"keyword_argument", "list_splat", "dictionary_splat",
                             "parenthesized_list_splat"})
SYMMETRIC = frozenset({"max", "min", "gcd", "lcm", "hypot", "isclose", "add", "mul", "eq",
                       "ne", "and_", "or_", "xor", "dist"})
"""Callees (last dotted part) for which swapping arguments changes nothing."""


def _swappable(first: Node, second: Node) -> bool:
    """Positional, different, and not two literals of one kind (``f(1, 2)``)."""
    if first.type in _NOT_POSITIONAL or second.type in _NOT_POSITIONAL:
        return False
    if first.type in LITERALS and first.type == second.type:
        return False
    return text(first) != text(second)


@MUTATORS.register("swap_arguments")
class SwapArguments(NodeMutator):
    """Two adjacent positional arguments of a call trade places: ``f(a, b)`` -> ``f(b, a)``.

    Not when both are literals of one kind, and not for symmetric callees (``max``).
    """

    node_types = frozenset({"call"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site per adjacent swappable pair."""
        args = node.child_by_field_name("arguments")
        callee = node.child_by_field_name("function")
        if args is None or callee is None or args.type != "argument_list":
            return
        if text(callee).split(".")[-1] in SYMMETRIC:
            return
        parts = named_children(args)
        for first, second in zip(parts, parts[1:]):
            if _swappable(first, second):
                yield arguments_swapped(node, callee, first, second, source)


@MUTATORS.register("break_call_chain")
class BreakCallChain(NodeMutator):
    """One call drops out of a method chain: ``s.strip().lower()`` -> ``s.strip()``.

    Any link after the first call may go (``a.b().c().d()`` -> ``a.b().d()``), but not a
    call on ``super()``.
    """

    node_types = frozenset({"call"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the call replaced by the call it is made on."""
        yield from chain_link_dropped(node, "attribute", "attribute",
                                      lambda inner: text(inner) != "super")
