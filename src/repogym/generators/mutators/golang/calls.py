"""Call mutators: swap two arguments, drop a call that keeps its argument's type."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, replace_node, text
from repogym.generators.mutators.golang.base import GoNodeMutator, building
from repogym.generators.mutators.golang.hints import type_of
from repogym.generators.mutators.golang.runtime import callee
from repogym.generators.mutators.shared import arguments_swapped, summary

_SIMPLE_ARGUMENTS = frozenset({"identifier", "selector_expression", "index_expression",
                               "interpreted_string_literal", "raw_string_literal"})
_STRINGS = frozenset({"interpreted_string_literal", "raw_string_literal"})
SYMMETRIC = frozenset({"max", "min", "Max", "Min", "Equal", "EqualFold", "DeepEqual",
                       "Hypot", "Dim"})
"""Callees (last dotted part) for which swapping arguments changes nothing (or little)."""
_BUILTINS = frozenset({"append", "delete", "make", "new", "len", "cap", "complex"})
SAME_TYPE_FUNCTIONS: dict[str, frozenset[str]] = {
    "strings": frozenset({"ToLower", "ToUpper", "ToTitle", "Title", "TrimSpace", "Trim",
                          "TrimLeft", "TrimRight", "TrimPrefix", "TrimSuffix", "TrimFunc",
                          "Replace", "ReplaceAll", "Clone", "ToValidUTF8"}),
    "bytes": frozenset({"ToLower", "ToUpper", "ToTitle", "Title", "TrimSpace", "Trim",
                        "TrimLeft", "TrimRight", "TrimPrefix", "TrimSuffix", "TrimFunc",
                        "Replace", "ReplaceAll", "Clone", "ToValidUTF8"}),
    "filepath": frozenset({"Clean", "ToSlash", "FromSlash"}),
    "path": frozenset({"Clean"}),
    "math": frozenset({"Abs", "Floor", "Ceil", "Round", "RoundToEven", "Trunc"}),
    "unicode": frozenset({"ToLower", "ToUpper", "ToTitle"}),
}
"""Library functions whose result has the type of their first argument: ``strings.ToLower(s)``
-> ``s`` still builds."""
SAME_TYPE_METHODS = frozenset({"UTC", "Local", "Round", "Truncate", "In", "Abs"})
"""Methods whose result has their receiver's type (``time.Time``, ``time.Duration``)."""


def _kind(node: Node) -> str | None:
    """An argument's type as far as the file shows (:func:`type_of`)."""
    return type_of(node)


def _swappable(first: Node, second: Node) -> bool:
    """Simple, different, of one known type, and no format string among them."""
    if first.type not in _SIMPLE_ARGUMENTS or second.type not in _SIMPLE_ARGUMENTS:
        return False
    if text(first) == text(second) or any(n.type in _STRINGS and "%" in text(n)
                                          for n in (first, second)):
        return False
    kind = _kind(first)
    return kind is not None and kind == _kind(second)


@MUTATORS.register("go_swap_arguments")
class SwapArguments(GoNodeMutator):
    """Two adjacent arguments of a call trade places: ``f(a, b)`` -> ``f(b, a)``.

    Only simple arguments (names, fields, indexing, strings) of one type the file shows
    (parameters, typed locals, literals: ``strings.Replace(s, "a", "b", -1)``), no format
    string, not a builtin (``append``, ``make``...) nor a symmetric callee (``max``,
    ``bytes.Equal``...), and not a variadic ``f(a, b...)``.
    """

    node_types = frozenset({"call_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site per swappable adjacent pair."""
        args = node.child_by_field_name("arguments")
        function = node.child_by_field_name("function")
        if args is None or function is None:
            return
        name = callee(node)
        if name in _BUILTINS or name.split(".")[-1] in SYMMETRIC:
            return
        parts = named_children(args)
        if any(p.type == "variadic_argument" for p in parts):
            return
        for first, second in zip(parts, parts[1:]):
            if _swappable(first, second):
                yield arguments_swapped(node, function, first, second, source)


def _unwrapped_call(node: Node) -> Node | None:
    """The first argument of a same-type library call (``strings.ToLower(s)``: ``s``), if
    ``node`` is one."""
    function = node.child_by_field_name("function")
    args = node.child_by_field_name("arguments")
    if function is None or args is None or function.type != "selector_expression":
        return None
    owner = function.child_by_field_name("operand")
    field = function.child_by_field_name("field")
    parts = named_children(args)
    if owner is None or field is None or not parts or parts[0].type == "variadic_argument":
        return None
    same = SAME_TYPE_FUNCTIONS.get(text(owner), frozenset())
    return parts[0] if text(field) in same else None


def _chain_link(node: Node) -> tuple[Node, str] | None:
    """``t.UTC()`` -> ``t``'s call (``time.Now()``), when ``node`` calls a same-type method
    on a call, or any method on a call in a statement of its own."""
    function = node.child_by_field_name("function")
    if function is None or function.type != "selector_expression":
        return None
    receiver = function.child_by_field_name("operand")
    field = function.child_by_field_name("field")
    if receiver is None or field is None or receiver.type != "call_expression":
        return None
    standalone = node.parent is not None and node.parent.type == "expression_statement"
    if text(field) in SAME_TYPE_METHODS or (standalone and callee(receiver) not in _BUILTINS):
        return receiver, text(field)
    return None


@MUTATORS.register("go_break_call_chain")
class BreakCallChain(GoNodeMutator):
    """A call drops out, its argument or receiver kept: ``strings.ToLower(s)`` -> ``s``,
    ``time.Now().UTC()`` -> ``time.Now()``.

    Only calls whose result has the type of what remains: library functions like
    ``strings.TrimSpace`` or ``math.Abs``, methods like ``UTC`` or ``Truncate``, and any
    method ending a chain in a statement of its own (``b.Reset().Write(x)``). Not where
    the file would no longer build (an import or a variable read only in the dropped
    part).
    """

    node_types = frozenset({"call_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """At most one site: the call replaced by what it is made on."""
        statement = node.parent is not None and node.parent.type == "expression_statement"
        argument = None if statement else _unwrapped_call(node)
        if argument is not None:
            site = replace_node(node, text(argument),
                                f"`{callee(node)}()` dropped from `{summary(node, 40)}`")
            found = building(site, source)
            if found is not None:
                yield found
            return
        link = _chain_link(node)
        if link is not None:
            receiver, method = link
            site = replace_node(node, text(receiver),
                                f"`.{method}()` dropped from `{summary(node, 40)}`")
            found = building(site, source)
            if found is not None:
                yield found
