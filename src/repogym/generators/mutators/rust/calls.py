"""Call mutators: swap two arguments, drop a call from a chain where the type stays."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, replace_node, text
from repogym.generators.mutators.rust.base import RustNodeMutator, method_call, parts
from repogym.generators.mutators.rust.checks import declared_type, node_removable
from repogym.generators.mutators.rust.literals import split_literal
from repogym.generators.mutators.rust.runtime import callee, holds_off_limits
from repogym.generators.mutators.shared import arguments_swapped, summary

SYMMETRIC = frozenset({"max", "min", "eq", "ne", "swap", "hypot", "ptr_eq", "zip",
                       "max_by", "min_by", "add", "mul"})
"""Callees (last part) for which swapping arguments changes nothing (or little)."""
_LITERALS = frozenset({"string_literal", "raw_string_literal", "char_literal",
                       "boolean_literal", "integer_literal"})
STR_METHODS = frozenset({"trim", "trim_start", "trim_end", "trim_left", "trim_right",
                         "trim_matches", "trim_start_matches", "trim_end_matches"})
"""``&str`` -> ``&str``: dropped after a call that gives a ``&str``."""
STR_SOURCES = STR_METHODS | {"as_str"}
STRING_METHODS = frozenset({"to_lowercase", "to_uppercase", "to_ascii_lowercase",
                            "to_ascii_uppercase", "replace", "replacen"})
"""``String`` -> ``String`` (on a ``String``): dropped after a call that gives one."""
STRING_SOURCES = frozenset({"to_string", "to_lowercase", "to_uppercase", "replace",
                            "replacen"})
ADAPTERS = frozenset({"rev", "skip", "take", "filter", "step_by", "skip_while",
                      "take_while", "fuse", "peekable"})
"""Iterator adapters that keep the item type: dropped before a consumer."""
CONSUMERS = frozenset({"collect", "count", "sum", "product", "max", "min", "last", "next",
                       "nth", "any", "all", "position", "find", "for_each", "fold",
                       "max_by_key", "min_by_key"})


def _literal_kind(node: Node) -> str | None:
    """A literal's kind for swapping: strings and chars by prefix (``b"x"``, ``r"x"``),
    small unsuffixed integers (which fit any integer type), booleans."""
    if node.type in ("string_literal", "raw_string_literal", "char_literal"):
        body = text(node)
        return f"{node.type}:{body[:body.find(chr(39)) if node.type == 'char_literal' else body.find(chr(34))]}"
    if node.type == "integer_literal":
        found = split_literal(text(node))
        return f"int:{found[1]}" if found is not None and 0 <= found[0] <= 127 else None
    return "bool" if node.type == "boolean_literal" else None


def _argument_kind(node: Node) -> str | None:
    """An argument's type for swapping, as far as the file shows: a literal's kind, a
    local's or parameter's declared type, ``&x`` / ``&mut x`` of one."""
    if node.type in _LITERALS:
        return _literal_kind(node)
    if node.type == "reference_expression":
        value = node.child_by_field_name("value")
        mutable = any(c.type == "mutable_specifier" for c in node.children)
        inner = _argument_kind(value) if value is not None else None
        return f"&{'mut ' if mutable else ''}{inner}" if inner is not None else None
    if node.type in ("identifier", "field_expression"):
        kind = declared_type(node)
        return f"type:{kind}" if kind is not None else None
    return None


@MUTATORS.register("rs_swap_arguments")
class SwapArguments(RustNodeMutator):
    """Two adjacent arguments of a call trade places: ``f(a, b)`` -> ``f(b, a)``.

    Only arguments of one type the file shows: literals of one kind (two strings, two
    small integers, two chars), locals, parameters or fields declared with one type (and
    ``&``/``&mut`` of them), different texts; not a symmetric callee (``max``,
    ``mem::swap``...).
    """

    node_types = frozenset({"call_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site per swappable adjacent pair."""
        args = node.child_by_field_name("arguments")
        function = node.child_by_field_name("function")
        if args is None or function is None:
            return
        if callee(node).replace("::", ".").split(".")[-1] in SYMMETRIC:
            return
        items = parts(args)
        for first, second in zip(items, items[1:]):
            if text(first) == text(second):
                continue
            kind = _argument_kind(first)
            if kind is not None and kind == _argument_kind(second):
                yield arguments_swapped(node, function, first, second, source)


def _dropped_link(node: Node) -> tuple[Node, str] | None:
    """``(receiver, method)`` when ``node``, a method call, can drop out of its chain:
    a ``&str`` method on a ``&str`` call, a ``String`` method on a ``String`` call, an
    item-keeping iterator adapter whose result a consumer takes."""
    found = method_call(node)
    if found is None:
        return None
    receiver, method = found
    inner = method_call(receiver)
    if inner is not None:
        if method in STR_METHODS and inner[1] in STR_SOURCES:
            return receiver, method
        if method in STRING_METHODS and inner[1] in STRING_SOURCES:
            return receiver, method
    if method in ADAPTERS and receiver.type in ("call_expression", "identifier",
                                                "field_expression"):
        outer = node.parent.parent if node.parent is not None \
            and node.parent.type == "field_expression" else None
        consumer = method_call(outer) if outer is not None else None
        if consumer is not None and consumer[0] == node and consumer[1] in CONSUMERS:
            return receiver, method
    return None


@MUTATORS.register("rs_break_call_chain")
class BreakCallChain(RustNodeMutator):
    """A call drops out of a method chain where the type stays: ``s.trim().to_string()
    .to_lowercase()`` -> ``s.trim().to_string()``, ``name.trim().trim_end_matches('/')``
    -> ``name.trim()``, ``xs.iter().rev().collect()`` -> ``xs.iter().collect()``.

    Only ``&str`` methods after a call giving a ``&str``, ``String`` methods after one
    giving a ``String``, and iterator adapters that keep the item type before a consumer
    (``.skip(1).count()``); not when the dropped arguments hold the last use of a local.
    """

    node_types = frozenset({"call_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """At most one site: the call replaced by its receiver."""
        link = _dropped_link(node)
        if link is None:
            return
        receiver, method = link
        args = node.child_by_field_name("arguments")
        if args is not None and (holds_off_limits(args) or not node_removable(args)):
            return
        yield replace_node(node, text(receiver),
                           f"`.{method}()` dropped from `{summary(node, 40)}`")
