"""Call mutators: swap two arguments, drop a call from a method chain."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, text
from repogym.generators.mutators.ecmascript.base import EcmaNodeMutator
from repogym.generators.mutators.ecmascript.scopes import FUNCTIONS
from repogym.generators.mutators.shared import (
    arguments_swapped,
    chain_link_dropped,
    named_descendants,
)

LITERALS = frozenset({"number", "string", "template_string", "true", "false", "null",
                      "undefined"})
_SIMPLE_ARGUMENTS = LITERALS | {"identifier", "member_expression", "subscript_expression",
                                "this"}
SYMMETRIC = frozenset({"max", "min", "hypot", "is", "isEqual", "equals", "deepEqual",
                       "equal", "strictEqual", "notEqual", "notStrictEqual"})
"""Callees (last dotted part) for which swapping arguments changes nothing."""


def _swappable(first: Node, second: Node) -> bool:
    """Simple, different, and not two literals of one kind (``s.slice(0, 12)``)."""
    if first.type not in _SIMPLE_ARGUMENTS or second.type not in _SIMPLE_ARGUMENTS:
        return False
    if first.type in LITERALS and first.type == second.type:
        return False
    if first.type == "template_string" and named_children(first):
        return False
    return text(first) != text(second)


@MUTATORS.register("js_swap_arguments")
class SwapArguments(EcmaNodeMutator):
    """The two arguments of a call (or ``new``) trade places: ``f(a, b)`` -> ``f(b, a)``.

    Only calls with exactly two simple arguments (names, properties, indexing, literals),
    not two literals of one kind, and not symmetric callees (``Math.max``, ``Object.is``).
    """

    node_types = frozenset({"call_expression", "new_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site swapping the arguments."""
        args = node.child_by_field_name("arguments")
        callee = node.child_by_field_name("function") or node.child_by_field_name("constructor")
        if args is None or callee is None or args.type != "arguments":
            return
        if text(callee).split(".")[-1].strip() in SYMMETRIC:
            return
        parts = named_children(args)
        if len(parts) != 2 or not _swappable(*parts):
            return
        first, second = parts
        yield arguments_swapped(node, callee, first, second, source)


def _passes_function(call: Node) -> bool:
    """Whether a call's arguments hold a function (``.forEach(function (x) {...})``)."""
    args = call.child_by_field_name("arguments")
    return args is not None and any(n.type in FUNCTIONS for n in named_descendants(args))


@MUTATORS.register("js_break_call_chain")
class BreakCallChain(EcmaNodeMutator):
    """One call drops out of a method chain: ``s.trim().toLowerCase()`` -> ``s.trim()``.

    Any link after the first call may go (``a.b().c().d()`` -> ``a.b().d()``), but not a
    call on ``super(...)``, nor one passed a callback (``.forEach(fn)``: dropping it drops
    a whole loop body). Optional chaining is never removed alone: that is no real bug.
    """

    node_types = frozenset({"call_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the call replaced by the call it is made on."""
        yield from chain_link_dropped(
            node, "member_expression", "property",
            lambda inner: inner.type not in ("super", "import") and not _passes_function(node))
