"""Block mutators: drop a whole ``if``."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, text
from repogym.generators.mutators.java.base import JavaNodeMutator
from repogym.generators.mutators.java.checks import has_pattern
from repogym.generators.mutators.java.edits import delete_statement
from repogym.generators.mutators.shared import named_descendants

_JUMPS = frozenset({"break_statement", "yield_statement"})


def header(node: Node) -> str:
    """A compound statement's header, on one line: ``if (c)``."""
    body = node.child_by_field_name("body") or node.child_by_field_name("consequence")
    end = body.start_byte - node.start_byte if body is not None else len(text(node))
    flat = " ".join((node.text or b"")[:end].decode("utf-8", "replace").split())
    return flat if len(flat) <= 60 else flat[:57] + "..."


@MUTATORS.register("java_remove_conditional")
class RemoveConditional(JavaNodeMutator):
    """An ``if`` without ``else`` is dropped with its body (a missing guard).

    Not an ``else if`` (its ``else`` would dangle), not one holding a ``break`` or
    ``yield`` (the loop or ``switch`` it ends may leave code unreachable, which does not
    compile), not one whose condition declares a pattern variable (``if (!(o instanceof
    Foo f)) return;`` puts ``f`` in scope after it), and not where the file would no
    longer compile (see :mod:`.edits`).
    """

    node_types = frozenset({"if_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the whole statement."""
        parent = node.parent
        cond = node.child_by_field_name("condition")
        if node.child_by_field_name("alternative") is not None or cond is None \
                or (parent is not None and parent.type == "if_statement") \
                or has_pattern(cond) or any(n.type in _JUMPS for n in named_descendants(node)):
            return
        site = delete_statement(node, source, f"`{header(node)}` block removed")
        if site is not None:
            yield site
