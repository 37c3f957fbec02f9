"""Block mutators: drop a whole ``if`` or loop."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, text
from repogym.generators.mutators.golang.base import GoNodeMutator
from repogym.generators.mutators.golang.edits import delete_statement
from repogym.generators.mutators.golang.scopes import LOOPS, body_statements
from repogym.generators.mutators.golang.statements import is_error_return


def header(node: Node) -> str:
    """A compound statement's header, on one line: ``for i := 0; i < n; i++``, ``if c``."""
    body = node.child_by_field_name("body") or node.child_by_field_name("consequence")
    end = body.start_byte - node.start_byte if body is not None else len(text(node))
    flat = " ".join((node.text or b"")[:end].decode("utf-8", "replace").split())
    return flat if len(flat) <= 60 else flat[:57] + "..."


@MUTATORS.register("go_remove_conditional")
class RemoveConditional(GoNodeMutator):
    """An ``if`` without ``else`` is dropped with its body (a missing guard).

    Not an ``else if`` (its ``else`` would dangle), not error propagation (``if err !=
    nil { return ..., err }``: dropping it mostly leaves ``err`` unused, and
    ``go_return_value`` swallows errors instead), and not where the file would no longer
    build.
    """

    node_types = frozenset({"if_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the whole statement."""
        if node.child_by_field_name("alternative") is not None:
            return
        inner = body_statements(node.child_by_field_name("consequence"))
        if len(inner) == 1 and is_error_return(inner[0]):
            return
        site = delete_statement(node, source, f"`{header(node)}` block removed")
        if site is not None:
            yield site


@MUTATORS.register("go_remove_loop")
class RemoveLoop(GoNodeMutator):
    """A ``for`` loop (of any form: three-clause, condition, ``range``, bare) is dropped,
    with its label if it has one, unless the file would no longer build without it."""

    node_types = LOOPS

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the whole loop."""
        target = node.parent if node.parent is not None \
            and node.parent.type == "labeled_statement" else node
        site = delete_statement(target, source, f"`{header(node)}` loop removed")
        if site is not None:
            yield site
