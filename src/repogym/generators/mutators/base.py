"""The mutator contract: a plug-in that proposes small bugs in runtime Python code.

A mutator looks at a parsed file and yields :class:`Site`\\ s: a byte range of the
source and the text to put there. It does not apply, validate or rank them; the
procedural generator (:mod:`repogym.generators.procedural`) does that, and drops any
site that falls outside runtime code (see :mod:`repogym.generators.mutators.runtime`),
does not re-parse cleanly, or changes nothing.

Most mutators are a :class:`NodeMutator`: they say which node types they look at and
turn one such node into zero or more sites; the walk over runtime code is shared.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Iterator

from tree_sitter import Node, Tree

from repogym.generators.mutators.grammars import family_grammar
from repogym.registry import Registry


@dataclass(frozen=True)
class Site:
    """One proposed change: replace ``source[start:end]`` (bytes) with ``replacement``.

    Attributes:
        start: first byte replaced.
        end: byte after the last one replaced (``end >= start``).
        replacement: the new text (UTF-8 encoded when applied).
        line: the 1-based line the change is about (used for coverage targeting).
        description: a short human description, e.g. ``"`<` flipped to `>=`"``.
    """

    start: int
    end: int
    replacement: str
    line: int
    description: str

    def apply(self, source: bytes) -> bytes:
        """``source`` with this site's change made."""
        return source[: self.start] + self.replacement.encode() + source[self.end:]

    def node(self, tree: Tree, source: bytes) -> Node | None:
        """The smallest node of ``tree`` around the non-blank bytes this site replaces."""
        start, end = self.start, self.end
        while start < end and source[start:start + 1].isspace():
            start += 1
        while end > start and source[end - 1:end].isspace():
            end -= 1
        return tree.root_node.descendant_for_byte_range(start, end)


class Mutator(ABC):
    """A kind of bug, registered by name in :data:`MUTATORS`.

    ``name`` is set by the registry; it is stored in every mutation the mutator makes.
    ``edits_defaults`` says whether its sites may lie in parameter default values, the one
    part of a signature that acts at call time (see
    :func:`~repogym.generators.mutators.runtime.in_default_value`).
    """

    name: ClassVar[str]
    edits_defaults: ClassVar[bool] = False
    family: ClassVar[str] = "python"  # the grammars it reads (Grammar.family)

    @abstractmethod
    def sites(self, tree: Tree, source: bytes) -> Iterator[Site]:
        """Every place this mutator can change runtime code in one file.

        Args:
            tree: ``source`` parsed with the tree-sitter Python grammar.
            source: the file's bytes (UTF-8).

        Returns:
            Sites in source order. Each should lie in runtime code (inside a function
            body, outside annotations, docstrings, logging calls and the other regions
            :func:`~repogym.generators.mutators.runtime.is_excluded` names); the
            generator re-checks this and drops any that do not.
        """


class NodeMutator(Mutator):
    """A mutator that looks at runtime nodes of some types, one node at a time."""

    node_types: ClassVar[frozenset[str]]

    def sites(self, tree: Tree, source: bytes) -> Iterator[Site]:
        """Sites from :meth:`visit` for every runtime node of one of :attr:`node_types`."""
        for node in family_grammar(self.family).runtime_nodes(tree.root_node):
            if node.type in self.node_types:
                yield from self.visit(node, source)

    @abstractmethod
    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """The sites for one node of a type in :attr:`node_types` (maybe none)."""


MUTATORS: Registry[type[Mutator]] = Registry("mutator")
"""Mutator classes by name; ``MUTATORS.get(name)()`` makes one."""


def replace_node(node: Node, replacement: str, description: str,
                 line_node: Node | None = None) -> Site:
    """A site that replaces ``node``'s text, reported on ``line_node``'s line (or its own)."""
    anchor = line_node or node
    return Site(node.start_byte, node.end_byte, replacement,
                anchor.start_point[0] + 1, description)


def text(node: Node) -> str:
    """The node's source text."""
    return (node.text or b"").decode("utf-8", "replace")


def named_children(node: Node) -> list[Node]:
    """The node's named children, comments left out."""
    return [c for c in node.named_children if c.type != "comment"]
