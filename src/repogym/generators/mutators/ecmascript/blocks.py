"""Block mutators: drop a whole ``if`` or loop, make two dependent statements trade places."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, text
from repogym.generators.mutators.ecmascript.base import EcmaNodeMutator, unwrapped_expression
from repogym.generators.mutators.ecmascript.edits import delete_statement, joins_safely
from repogym.generators.mutators.ecmascript.runtime import STATEMENT_LISTS, is_off_limits
from repogym.generators.mutators.ecmascript.scopes import LOOPS
from repogym.generators.mutators.ecmascript.statements import simple_expression
from repogym.generators.mutators.shared import (
    method_receiver,
    named_descendants,
    statements_swapped,
)

_ASSIGNMENTS = frozenset({"assignment_expression", "augmented_assignment_expression"})
_DECLARATIONS = frozenset({"lexical_declaration", "variable_declaration"})
_NAMES = frozenset({"identifier", "member_expression", "shorthand_property_identifier"})
_PATTERN_NAMES = frozenset({"identifier", "shorthand_property_identifier_pattern"})


def header(node: Node) -> str:
    """A compound statement's header, on one line: ``for (const x of xs)``, ``if (c)``."""
    body = node.child_by_field_name("body") or node.child_by_field_name("consequence")
    if node.type == "do_statement":
        cond = node.child_by_field_name("condition")
        flat = f"do ... while {text(cond) if cond is not None else ''}"
    else:
        end = body.start_byte - node.start_byte if body is not None else len(text(node))
        flat = text(node).encode()[:end].decode("utf-8", "replace")
    flat = " ".join(flat.split())
    return flat if len(flat) <= 60 else flat[:57] + "..."


@MUTATORS.register("js_remove_conditional")
class RemoveConditional(EcmaNodeMutator):
    """An ``if`` without ``else`` is dropped with its body (a missing guard)."""

    node_types = frozenset({"if_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the whole statement."""
        if node.child_by_field_name("alternative") is not None:
            return
        site = delete_statement(node, source, f"`{header(node)}` block removed")
        if site is not None:
            yield site


@MUTATORS.register("js_remove_loop")
class RemoveLoop(EcmaNodeMutator):
    """A ``for``, ``for ... of``, ``for ... in``, ``while`` or ``do ... while`` loop is
    dropped."""

    node_types = LOOPS

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the whole loop."""
        site = delete_statement(node, source, f"`{header(node)}` loop removed")
        if site is not None:
            yield site


def _simple(stmt: Node) -> Node | None:
    """The one assignment, call or update a statement is made of, or its one declarator."""
    if stmt.type in _DECLARATIONS:
        declarators = [c for c in stmt.named_children if c.type == "variable_declarator"]
        one = declarators[0] if len(declarators) == 1 else None
        return one if one is not None and one.child_by_field_name("value") else None
    part = simple_expression(stmt)
    if part is None or part.type not in (*_ASSIGNMENTS, "call_expression", "update_expression"):
        return None
    callee = part.child_by_field_name("function")
    return None if callee is not None and callee.type == "super" else part


def _targets(node: Node) -> set[str]:
    """What assigning to ``node`` changes: a name, a property, the object of an index."""
    node = unwrapped_expression(node)
    if node.type in ("identifier", "member_expression"):
        return {"".join(text(node).split())}
    if node.type == "subscript_expression":
        owner = node.child_by_field_name("object")
        return _targets(owner) if owner is not None else set()
    return set()


def declares(part: Node) -> set[str]:
    """The names a declarator binds (destructuring included)."""
    if part.type != "variable_declarator":
        return set()
    name = part.child_by_field_name("name")
    return {text(n) for n in named_descendants(name) if n.type in _PATTERN_NAMES} \
        if name else set()


def _receiver_writes(call: Node) -> set[str]:
    """The object whose method a call calls (``out.push(x)``: ``out``)."""
    owner = method_receiver(call, "member_expression")
    return _targets(owner) if owner is not None else set()


def writes(part: Node) -> set[str]:
    """Names and properties a simple statement assigns, declares, updates or calls a
    method of."""
    if part.type == "variable_declarator":
        return declares(part)
    if part.type == "call_expression":
        return _receiver_writes(part)
    target = part.child_by_field_name("left") or part.child_by_field_name("argument")
    return _targets(target) if target is not None else set()


def uses(node: Node) -> set[str]:
    """Every name and property the node mentions."""
    return {"".join(text(n).split()) for n in named_descendants(node) if n.type in _NAMES}


def _swappable(a: Node, b: Node) -> bool:
    """Their order matters (one writes what the other mentions), and swapping them does not
    move a use of a declared name above its declaration."""
    if declares(a) & uses(b) or declares(b) & uses(a):
        return False
    return bool(writes(a) & uses(b) or writes(b) & uses(a))


@MUTATORS.register("js_swap_statements")
class SwapStatements(EcmaNodeMutator):
    """Two adjacent simple statements trade places, when their order matters.

    Simple: an assignment, call or ``i++`` statement (not ``super(...)``: ``this`` is not
    there before it), or a declaration of one variable.
    The order matters when one assigns (or calls a method of) something the other
    mentions. Not when one declares a name the other reads: that swap only throws
    ``ReferenceError`` (or reads a hoisted ``undefined``).
    """

    node_types = STATEMENT_LISTS - {"program"}

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site per adjacent dependent pair."""
        stmts = named_children(node)
        for i, (first, second) in enumerate(zip(stmts, stmts[1:])):
            before = stmts[i - 1] if i > 0 else None
            after = stmts[i + 2] if i + 2 < len(stmts) else None
            if _fits(before, second, first, after):
                yield from _swap(first, second, source)


def _fits(before: Node | None, second: Node, first: Node, after: Node | None) -> bool:
    """Whether ``second`` then ``first`` between ``before`` and ``after`` stay apart."""
    return (joins_safely(before, text(second)) and joins_safely(second, text(first))
            and (after is None or joins_safely(first, text(after))))


def _swap(first: Node, second: Node, source: bytes) -> Iterator[Site]:
    a, b = _simple(first), _simple(second)
    if a is None or b is None or is_off_limits(first) or is_off_limits(second):
        return
    if text(first) == text(second) or not _swappable(a, b):
        return
    yield statements_swapped(first, second, source)
