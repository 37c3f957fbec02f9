"""Statement mutators: drop a call or assignment statement or an early ``return``, make a
``return`` give a zero value (or swallow its error)."""

from __future__ import annotations

import re
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, replace_node, text
from repogym.generators.mutators.golang.base import GoNodeMutator, building, unparenthesised
from repogym.generators.mutators.golang.edits import delete_statement, summary
from repogym.generators.mutators.golang.hints import NILABLE, NUMERIC, file_types, result_types
from repogym.generators.mutators.golang.runtime import callee
from repogym.generators.mutators.golang.scopes import FUNCTIONS, body_statements, function_of

_ERROR_CHECK = re.compile(r"^\(?\s*\w*err\w*\s*!=\s*nil\s*\)?$", re.IGNORECASE)
_NIL_TYPES = frozenset({"pointer_type", "slice_type", "map_type", "channel_type",
                        "function_type", "interface_type"})
_VALUE_TYPES = frozenset({"array_type", "struct_type"})
_KNOWN_QUALIFIED = {"time.Time": "time.Time{}", "time.Duration": "0",
                    "time.Month": "0", "time.Weekday": "0"}
_ZEROS = frozenset({"nil", "0", '""', "``", "false", "0.0"})
_NOT_REMOVED = frozenset({"panic", "recover", "close"})
_SYNCHRONISING = frozenset({"Lock", "Unlock", "RLock", "RUnlock", "Wait", "Done"})
"""Methods whose call, removed, mostly hangs the tests (a mutex never released, a
``sync.WaitGroup`` never done) instead of failing them."""


def _removable_kind(stmt: Node) -> str | None:
    """``call``, ``assignment``, ``increment`` or ``decrement`` for a statement we may
    drop (not ``:=``, whose names later statements read, not ``panic``, and not what
    synchronises goroutines: ``close(ch)``, ``mu.Unlock()``, ``wg.Done()``)."""
    if stmt.type == "assignment_statement":
        return "assignment"
    if stmt.type in ("inc_statement", "dec_statement"):
        return "increment" if stmt.type == "inc_statement" else "decrement"
    parts = named_children(stmt) if stmt.type == "expression_statement" else []
    if len(parts) != 1 or parts[0].type != "call_expression":
        return None
    name = callee(parts[0])
    if name in _NOT_REMOVED or name.split(".")[-1] in _SYNCHRONISING:
        return None
    return "call"


@MUTATORS.register("go_remove_statement")
class RemoveStatement(GoNodeMutator):
    """Drop one call, assignment (``=``, ``+=``, ...) or ``i++``/``i--`` statement.

    Its lines are deleted (its text, when it shares a line). Not a declaration (``:=``,
    ``var``), not ``panic(...)``, not a call that synchronises goroutines (``mu.Unlock()``,
    ``wg.Done()``, ``close(ch)``: without it the tests hang rather than fail), and not
    where the file would no longer build (the statement held the last use of a variable
    or an import).
    """

    node_types = frozenset({"expression_statement", "assignment_statement", "inc_statement",
                            "dec_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for a removable statement."""
        kind = _removable_kind(node)
        site = None if kind is None else delete_statement(
            node, source, f"{kind} `{summary(node)}` removed")
        if site is not None:
            yield site


def is_error_return(stmt: Node) -> bool:
    """Whether ``stmt`` is the only statement of an ``if err != nil { return ... }``:
    error propagation, which ``go_return_value`` turns into a swallowed error instead."""
    block = stmt.parent.parent if stmt.parent is not None else None
    statement = block.parent if block is not None else None
    if statement is None or statement.type != "if_statement" \
            or statement.child_by_field_name("consequence") != block:
        return False
    cond = statement.child_by_field_name("condition")
    return cond is not None and len(body_statements(block)) == 1 \
        and _ERROR_CHECK.match(" ".join(text(cond).split())) is not None


@MUTATORS.register("go_remove_return")
class RemoveReturn(GoNodeMutator):
    """An early ``return`` is dropped: the function runs on past it.

    Early: inside an ``if``, loop, ``switch`` or ``select`` rather than directly in the
    function's body. Not the ``return`` of an ``if err != nil`` (see
    :func:`is_error_return`), and not where the function would then end without one.
    """

    node_types = frozenset({"return_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the statement."""
        function = function_of(node)
        body = function.child_by_field_name("body") if function is not None else None
        if body is None or node in body_statements(body) or is_error_return(node):
            return
        site = delete_statement(node, source, f"early `{summary(node)}` removed")
        if site is not None:
            yield site


def zero_value(kind: Node, root: Node) -> str | None:
    """The zero value of type ``kind`` as Go source (``0``, ``""``, ``nil``, ``T{}``), or
    None when the file does not show what ``kind`` is."""
    kind = _unwrapped_type(kind)
    if kind.type in _NIL_TYPES:
        return "nil"
    if kind.type in _VALUE_TYPES:
        return text(kind) + "{}"
    if kind.type == "qualified_type":
        return _KNOWN_QUALIFIED.get("".join(text(kind).split()))
    if kind.type != "type_identifier":
        return None
    name = text(kind)
    basic = _basic_zero(name)
    if basic is not None:
        return basic
    declared = file_types(root).types.get(name)
    if declared is None:
        return None
    declared = _unwrapped_type(declared)
    if declared.type in _VALUE_TYPES:
        return f"{name}{{}}"
    if declared.type in _NIL_TYPES:
        return "nil"
    return _basic_zero(text(declared)) if declared.type == "type_identifier" else None


def _unwrapped_type(kind: Node) -> Node:
    while kind.type == "parenthesized_type" and kind.named_children:
        kind = kind.named_children[0]
    return kind


def _basic_zero(name: str) -> str | None:
    if name in NUMERIC:
        return "0"
    if name == "string":
        return '""'
    if name == "bool":
        return "false"
    return "nil" if name in NILABLE else None


def _is_zero(value: Node, zero: str) -> bool:
    """Whether ``value`` already is the zero value (``nil``, ``0``, ``T{}``...)."""
    flat = "".join(text(unparenthesised(value)).split())
    return flat == "".join(zero.split()) or flat in _ZEROS


@MUTATORS.register("go_return_value")
class ReturnValue(GoNodeMutator):
    """One value of a ``return`` becomes its type's zero value: ``return n, nil`` ->
    ``return 0, nil``; ``return nil, err`` -> ``return nil, nil`` (the error swallowed).

    The zero value is spelled from the function's result types: ``0``, ``""``, ``false``,
    ``nil`` for pointers, slices, maps, interfaces and errors, ``T{}`` for structs and
    arrays the file declares; a value whose type the file does not show is left alone,
    as are values already zero, bare returns and ``return f()`` of several results.
    """

    node_types = frozenset({"return_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site per value that is not zero already."""
        function = function_of(node)
        result = function.child_by_field_name("result") if function is not None \
            and function.type in FUNCTIONS else None
        values = named_children(named_children(node)[0]) if named_children(node) else []
        kinds = result_types(result) if result is not None else []
        if not values or len(values) != len(kinds):
            return
        root = node
        while root.parent is not None:
            root = root.parent
        for value, kind in zip(values, kinds):
            zero = zero_value(kind, root)
            if zero is None or _is_zero(value, zero):
                continue
            site = building(replace_node(
                value, zero, f"`{summary(value, 40)}` in `{summary(node, 50)}` returns "
                             f"`{zero}` instead", node), source)
            if site is not None:
                yield site
