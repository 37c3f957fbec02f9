"""Statement mutators: drop a call or assignment statement or an early ``return``, make a
``return`` give its type's default value."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, replace_node, text
from repogym.generators.mutators.java.base import JavaNodeMutator
from repogym.generators.mutators.java.checks import (
    assigns_blank,
    blank_locals,
    catch_needs_calls,
    endless_loop,
    ends_in_return,
    loop_names,
    unparenthesised,
    written_names,
)
from repogym.generators.mutators.java.edits import delete_statement, summary
from repogym.generators.mutators.java.scopes import (
    BLOCKS,
    CONSTRUCTORS,
    FUNCTIONS,
    LOOPS,
    function_of,
    is_void,
)
from repogym.generators.mutators.shared import ancestors

_KINDS = {"method_invocation": "call", "assignment_expression": "assignment",
          "update_expression": "update", "object_creation_expression": "call"}
_NOT_REMOVED = frozenset({"lock", "unlock", "countDown", "notify", "notifyAll", "wait",
                          "await", "signal", "signalAll", "release", "acquire", "join",
                          "close"})
"""Calls whose removal mostly hangs the tests (a lock never released) or leaks, instead
of failing them."""
_PRIMITIVE_ZEROS = {"integral_type": "0", "floating_point_type": "0", "boolean_type": "false"}
_ZEROS = frozenset({"null", "0", "0L", "0l", "0.0", "0.0f", "0.0F", "0.0d", "0.0D", "0f",
                    "0F", "0d", "0D", "false", "'\\0'"})


def _removable_kind(stmt: Node) -> str | None:
    """``call``, ``assignment`` or ``update`` for a statement we may drop."""
    parts = named_children(stmt)
    if len(parts) != 1 or parts[0].type not in _KINDS:
        return None
    part = parts[0]
    if part.type == "method_invocation":
        name = part.child_by_field_name("name")
        if name is None or text(name) in _NOT_REMOVED:
            return None
    return _KINDS[part.type]


def _may_end_a_loop(stmt: Node) -> bool:
    """Whether ``stmt`` writes a name an enclosing loop's condition reads (``i++`` in
    ``while (i < n)``, ``node = node.next``, ``it.next()``): without it the loop may never
    end."""
    return bool(written_names(stmt) & loop_names(stmt))


@MUTATORS.register("java_remove_statement")
class RemoveStatement(JavaNodeMutator):
    """Drop one call, assignment (``=``, ``+=``, ...), ``i++`` or ``new X()`` statement.

    Its lines are deleted (its text, when it shares a line); ``{}`` takes its place when it
    is the whole body of an ``if``/``else``. Not the whole body of a loop or ``case ->``,
    not what may end a loop (it writes what the loop's condition reads), not a call that
    synchronises threads or closes (``unlock()``, ``countDown()``, ``close()``), and not
    where the file would no longer compile (see :mod:`.edits`).
    """

    node_types = frozenset({"expression_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for a removable statement."""
        kind = _removable_kind(node)
        if kind is None or _may_end_a_loop(node):
            return
        site = delete_statement(node, source, f"{kind} `{summary(node)}` removed")
        if site is not None:
            yield site


def _in_tail(node: Node, function: Node) -> bool:
    """Whether nothing of ``function`` runs after ``node`` anyway: it is the last
    statement of its block, and so is each enclosing statement, up to the body."""
    body = function.child_by_field_name("body")
    current = node
    while current != body and current.parent is not None:
        parent = current.parent
        if parent.type in LOOPS:
            return False
        if parent.type in BLOCKS and _followed(current):
            return False
        if parent.type == "switch_block_statement_group" and _followed(parent):
            return False  # the next case runs on
        current = parent
    return True


def _followed(node: Node) -> bool:
    """Whether code (not a comment) comes after ``node`` among its siblings."""
    following = node.next_named_sibling
    while following is not None and "comment" in following.type:
        following = following.next_named_sibling
    return following is not None


def _in_endless_loop(node: Node) -> bool:
    for current in ancestors(node.parent):
        if current.type in FUNCTIONS:
            return False
        if current.type in LOOPS and endless_loop(current):
            return True
    return False


@MUTATORS.register("java_remove_early_return")
class RemoveEarlyReturn(JavaNodeMutator):
    """An early ``return`` is dropped: the method runs on past it.

    Early: inside an ``if``, loop, ``switch``, ``try`` or block rather than directly in
    the method's body, and with code of the method after it. Only what still compiles: a
    method that returns a value must end in a ``return``/``throw`` of its own; no
    constructor (a ``final`` field would be assigned twice) nor a method with a local
    declared without a value (it may be read unassigned); not in an endless loop (it would
    then never end); not a ``return`` holding a call out of a ``try`` that catches a
    checked exception.
    """

    node_types = frozenset({"return_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the statement (``{}`` when it is a whole ``if`` body)."""
        function = function_of(node)
        body = function.child_by_field_name("body") if function is not None else None
        if function is None or body is None or node.parent == body \
                or function.type in CONSTRUCTORS or blank_locals(function):
            return
        void = is_void(function)
        valued = bool(named_children(node))
        if void is False or (void is None and valued):
            if not ends_in_return(function):
                return
        elif _in_tail(node, function):
            return
        if _in_endless_loop(node):
            return
        site = delete_statement(node, source, f"early `{summary(node)}` removed")
        if site is not None:
            yield site


def default_value(function: Node) -> str | None:
    """What a method's return type defaults to: ``0``, ``false`` or ``null``; None for a
    lambda or a ``void`` method."""
    if function.type != "method_declaration":
        return None
    kind = function.child_by_field_name("type")
    if kind is None or kind.type == "void_type":
        return None
    return _PRIMITIVE_ZEROS.get(kind.type, "null")


@MUTATORS.register("java_return_value")
class ReturnValue(JavaNodeMutator):
    """``return x`` becomes ``return null`` where the method returns a reference,
    ``return 0`` for a number (``char`` included), ``return false`` for a ``boolean``.

    Not in a lambda (its type is not in the file), not a value already the default, and
    not a value holding a call out of a ``try`` that catches a checked exception (nothing
    would throw it any more) or an assignment to a variable declared without a value.
    """

    node_types = frozenset({"return_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the value replaced by the default."""
        parts = named_children(node)
        function = function_of(node)
        if len(parts) != 1 or function is None:
            return
        zero = default_value(function)
        value = parts[0]
        if zero is None or "".join(text(unparenthesised(value)).split()) in _ZEROS:
            return
        if catch_needs_calls(value) or assigns_blank(value):
            return
        yield replace_node(value, zero, f"`return {summary(value, 40)}` returns `{zero}` "
                                        "instead", node)
