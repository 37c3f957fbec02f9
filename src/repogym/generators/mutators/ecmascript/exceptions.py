"""Exception mutators: unwrap a ``try``."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, text
from repogym.generators.mutators.ecmascript.base import EcmaNodeMutator
from repogym.generators.mutators.ecmascript.blocks import declares
from repogym.generators.mutators.ecmascript.edits import unwrapped
from repogym.generators.mutators.ecmascript.runtime import holds_off_limits

_SCOPED = frozenset({"lexical_declaration", "class_declaration", "function_declaration",
                     "generator_function_declaration"})


def _block_names(block: Node) -> set[str]:
    """Names a block declares at its top level with ``let``, ``const``, ``class`` or
    ``function`` (scoped to the block: unwrapping it widens their scope)."""
    names: set[str] = set()
    for stmt in named_children(block):
        if stmt.type == "lexical_declaration":
            for part in stmt.named_children:
                names |= declares(part)
        elif stmt.type in _SCOPED:
            name = stmt.child_by_field_name("name")
            names |= {text(name)} if name is not None else set()
    return names


def _mentions(node: Node, names: set[str]) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier" and text(current) in names:
            return True
        stack.extend(current.named_children)
    return False


def _widening_is_safe(node: Node, blocks: list[Node]) -> bool:
    """Whether the blocks' own declarations, once in the enclosing block, clash with
    nothing there: no two blocks declare one name, and no sibling of the ``try`` mentions
    one (a redeclaration is a ``SyntaxError``; a mention would now see the new binding)."""
    seen: set[str] = set()
    for block in blocks:
        names = _block_names(block)
        if names & seen:
            return False
        seen |= names
    parent = node.parent
    siblings = [c for c in parent.named_children if c != node] if parent is not None else []
    return not seen or not any(_mentions(s, seen) for s in siblings)


@MUTATORS.register("js_remove_try")
class RemoveTry(EcmaNodeMutator):
    """A ``try`` with a ``catch`` is unwrapped: its body and ``finally`` run in turn,
    dedented, and nothing is caught.

    Not when the ``catch`` holds code no mutation may touch (a logging call...), and not
    when unwrapping would clash with a declaration around the ``try``.
    """

    node_types = frozenset({"try_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site replacing the statement by the code its success path runs."""
        body = node.child_by_field_name("body")
        handler = node.child_by_field_name("handler")
        finalizer = node.child_by_field_name("finalizer")
        if body is None or handler is None or holds_off_limits(handler):
            return
        final = finalizer.child_by_field_name("body") if finalizer is not None else None
        blocks = [b for b in (body, final) if b is not None]
        if not _widening_is_safe(node, blocks):
            return
        replacement = unwrapped(node, blocks, source)
        if replacement is not None:
            yield Site(node.start_byte, node.end_byte, replacement, node.start_point[0] + 1,
                       "`try` unwrapped: its `catch` is gone")
