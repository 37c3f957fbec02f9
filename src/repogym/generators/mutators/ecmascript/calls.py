"""Call mutators: swap two arguments, drop a call from a method chain."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, replace_node, text
from repogym.generators.mutators.ecmascript.base import EcmaNodeMutator
from repogym.generators.mutators.ecmascript.edits import summary
from repogym.generators.mutators.ecmascript.scopes import FUNCTIONS

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
        middle = source[first.end_byte:second.start_byte].decode("utf-8", "replace")
        yield Site(first.start_byte, second.end_byte, text(second) + middle + text(first),
                   node.start_point[0] + 1,
                   f"arguments `{summary(first, 25)}` and `{summary(second, 25)}` "
                   f"of `{summary(callee, 30)}()` swapped")


def _passes_function(call: Node) -> bool:
    """Whether a call's arguments hold a function (``.forEach(function (x) {...})``)."""
    args = call.child_by_field_name("arguments")
    stack = [args] if args is not None else []
    while stack:
        current = stack.pop()
        if current.type in FUNCTIONS:
            return True
        stack.extend(current.named_children)
    return False


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
        callee = node.child_by_field_name("function")
        if callee is None or callee.type != "member_expression":
            return
        receiver = callee.child_by_field_name("object")
        method = callee.child_by_field_name("property")
        if receiver is None or method is None or receiver.type != "call_expression":
            return
        inner = receiver.child_by_field_name("function")
        if inner is None or inner.type in ("super", "import") or _passes_function(node):
            return
        yield replace_node(node, text(receiver),
                           f"`.{text(method)}()` dropped from `{summary(node, 40)}`")
