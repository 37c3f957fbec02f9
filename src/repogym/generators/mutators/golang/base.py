"""The base of the ``go`` family's node mutators, and helpers they share."""

from __future__ import annotations

from tree_sitter import Node

from repogym.generators.mutators.base import NodeMutator, Site, named_children, text
from repogym.generators.mutators.golang.checks import vet_count
from repogym.generators.mutators.golang.grammar import FAMILY, GO, builds_like

_LOGICAL = frozenset({"&&", "||"})


class GoNodeMutator(NodeMutator):
    """A node mutator for Go trees."""

    family = FAMILY


def operator(node: Node) -> str:
    """The text of a node's ``operator`` field (``""`` without one)."""
    op = node.child_by_field_name("operator")
    return text(op) if op is not None else ""


def unparenthesised(node: Node) -> Node:
    """The expression inside parentheses: ``((x))`` -> ``x``."""
    while node.type == "parenthesized_expression" and len(named_children(node)) == 1:
        node = named_children(node)[0]
    return node


def building(site: Site | None, source: bytes) -> Site | None:
    """``site`` when the file it makes still builds as far as the syntax tree tells (no
    variable, import or label left unused, no declaration taken from a use, no missing
    ``return``: see :mod:`~repogym.generators.mutators.golang.checks`); else None.

    For the mutators that take code away, where that is what goes wrong.
    """
    if site is None or not builds_like(source, site.apply(source)):
        return None
    return site


_EXPRESSIONS = frozenset({"binary_expression", "parenthesized_expression",
                         "unary_expression"})


def _chain_head(node: Node) -> Node | None:
    """The outermost ``&&``/``||`` expression ``node`` is part of, through operators and
    parentheses (``x == "a"`` in ``x == "a" || ok``), or None."""
    head = None
    current = node
    while current.parent is not None and current.parent.type in _EXPRESSIONS:
        current = current.parent
        if current.type == "binary_expression" and operator(current) in _LOGICAL:
            head = current
    if node.type == "binary_expression" and operator(node) in _LOGICAL and head is None:
        head = node
    return head


def vet_clean(site: Site, node: Node, source: bytes) -> bool:
    """Whether the ``&&``/``||`` chain around ``node`` has no more of vet's ``bool``
    findings (``x != a || x != b``, an operand twice) with ``site`` made than without:
    ``go test`` runs that check, and fails every test when it finds one."""
    head = _chain_head(node)
    if head is None:
        return True
    grown = len(site.replacement.encode()) - (site.end - site.start)
    before = source[head.start_byte:head.end_byte]
    after = site.apply(source)[head.start_byte:head.end_byte + grown]
    return vet_findings(after) <= vet_findings(before)


def vet_findings(expression: bytes) -> int:
    """vet's ``bool`` findings in one expression."""
    tree = GO.parse(b"package p\n\nvar _ = " + expression + b"\n")
    return vet_count(tree.root_node)
