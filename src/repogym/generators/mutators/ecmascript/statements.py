"""Statement mutators: drop a call or assignment statement or an early ``return``, make a
function return ``undefined``."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node, Tree

from repogym.generators.mutators.base import MUTATORS, Site, named_children, replace_node, text
from repogym.generators.mutators.ecmascript.base import EcmaNodeMutator, operator
from repogym.generators.mutators.ecmascript.edits import delete_statement, summary
from repogym.generators.mutators.ecmascript.runtime import runtime_nodes
from repogym.generators.mutators.ecmascript.scopes import FUNCTIONS, function_of, is_generator
from repogym.generators.mutators.shared import statement_expression

_ASSIGNMENTS = frozenset({"assignment_expression", "augmented_assignment_expression"})
_NOTHING = frozenset({"undefined", "void 0"})
_AWAITED = frozenset({"call_expression"})


def simple_expression(stmt: Node) -> Node | None:
    """The call or assignment an expression statement is made of (``await`` seen through)."""
    return statement_expression(stmt, "await_expression", _AWAITED)


def _removable_kind(stmt: Node) -> str | None:
    """``call``, ``assignment`` or ``delete`` for a statement we may drop."""
    part = simple_expression(stmt)
    if part is None:
        return None
    if part.type == "call_expression":
        callee = part.child_by_field_name("function")
        return None if callee is None or callee.type in ("super", "import") else "call"
    if part.type in _ASSIGNMENTS:
        return "assignment"
    if part.type == "unary_expression" and operator(part) == "delete":
        return "delete"
    return None


@MUTATORS.register("js_remove_statement")
class RemoveStatement(EcmaNodeMutator):
    """Drop one call, assignment (``=``, ``+=``, ``||=``, ...) or ``delete`` statement.

    Its lines are deleted (its text, when it shares a line); ``{}`` takes its place when
    it is the whole body of an ``if``, ``else`` or loop. Not ``super(...)``.
    """

    node_types = frozenset({"expression_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for a removable statement."""
        kind = _removable_kind(node)
        site = None if kind is None else delete_statement(
            node, source, f"{kind} `{summary(node)}` removed")
        if site is not None:
            yield site


@MUTATORS.register("js_remove_return")
class RemoveReturn(EcmaNodeMutator):
    """An early ``return`` is dropped: the function runs on past it.

    Early: inside an ``if``, loop, ``try`` or ``switch`` rather than directly in the
    function's body (where dropping it is what ``js_return_value`` already does, or makes
    the rest of the body reachable).
    """

    node_types = frozenset({"return_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the statement (``{}`` when it is a whole ``if`` body)."""
        parent = node.parent
        if parent is None or (parent.type == "statement_block" and parent.parent is not None
                              and parent.parent.type in FUNCTIONS):
            return
        site = delete_statement(node, source, f"early `{summary(node)}` removed")
        if site is not None:
            yield site


def _returned(node: Node) -> Node | None:
    """The value a ``return`` gives, or ``node`` itself when it is an arrow's expression
    body (``(s) => s.trim()``)."""
    if node.type == "return_statement":
        parts = named_children(node)
        return parts[0] if len(parts) == 1 else None
    parent = node.parent
    if parent is None or parent.type != "arrow_function" or node.type == "statement_block":
        return None
    return node if parent.child_by_field_name("body") == node else None


@MUTATORS.register("js_return_value")
class ReturnValue(EcmaNodeMutator):
    """``return x`` becomes ``return undefined``, and an arrow's ``=> x`` becomes
    ``=> undefined``.

    Not a bare ``return``, not ``return undefined``/``return void 0``, and not in
    generators (where the returned value is rarely read).
    """

    node_types = frozenset({"return_statement"})

    def sites(self, tree: Tree, source: bytes) -> Iterator[Site]:
        """Sites for return statements and arrow expression bodies in runtime code."""
        for node in runtime_nodes(tree.root_node):
            if node.type == "return_statement" or (
                    node.parent is not None and node.parent.type == "arrow_function"):
                yield from self.visit(node, source)

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the returned expression replaced by ``undefined``."""
        value = _returned(node)
        if value is None or " ".join(text(value).split()) in _NOTHING:
            return
        function = node.parent if node.type != "return_statement" else function_of(node)
        if function is None or is_generator(function):
            return
        shown = f"return {summary(value)}" if node.type == "return_statement" \
            else f"=> {summary(value)}"
        yield replace_node(value, "undefined", f"`{shown}` returns undefined instead", node)
