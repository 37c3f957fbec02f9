"""Source grammars: what the procedural generator needs to know of a language's syntax.

A :class:`Grammar` parses a file with its tree-sitter grammar and says which nodes are
*runtime code* (what a mutator may touch), which function a node is in, and whether a
mutated text is a real change that still builds. Mutators belong to a grammar *family*
(``python``, ``ecmascript``, ``go``): one family's mutators serve every grammar of it (JavaScript,
TypeScript and TSX share theirs). A toolchain names the file suffixes of its language;
:func:`grammar_for` picks the grammar of a file by its suffix.

Grammars are registered by name in :data:`GRAMMARS`; importing
:mod:`repogym.generators.mutators` registers the built-in ones.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from functools import lru_cache
from pathlib import PurePosixPath
from typing import ClassVar, Iterator

from tree_sitter import Language, Node, Parser, Tree

from repogym.registry import Registry


class Grammar(ABC):
    """One tree-sitter grammar and the runtime-code rules of its language."""

    name: ClassVar[str]
    family: ClassVar[str]  # the mutators that apply (Mutator.family)
    suffixes: ClassVar[tuple[str, ...]]  # file suffixes parsed with this grammar

    @abstractmethod
    def language(self) -> Language:
        """The tree-sitter language."""

    def parse(self, source: bytes) -> Tree:
        return Parser(_language(type(self))).parse(source)  # a parser per call: threads

    def parses_cleanly(self, source: bytes) -> bool:
        """Whether ``source`` parses with no ERROR or MISSING node anywhere."""
        return not self.parse(source).root_node.has_error

    @abstractmethod
    def runtime_nodes(self, root: Node) -> Iterator[Node]:
        """Every node of runtime code under ``root``, in source order."""

    @abstractmethod
    def in_runtime_code(self, node: Node, *, defaults: bool = False) -> bool:
        """Whether ``node`` lies in runtime code (checked from the node up to the root);
        with ``defaults``, parameter default values count too."""

    @abstractmethod
    def enclosing_function(self, node: Node) -> str | None:
        """The qualified name of the innermost function around ``node`` (``Klass.method``),
        or None outside any function."""

    def real_change(self, path: str, original: str, mutated: str, line: int) -> bool:
        """Whether ``mutated`` (one site changed near ``line``) builds where ``original``
        does and differs from it in code, not only in layout or comments. The default
        compares the syntax trees without comments."""
        return _shape(self.parse(original.encode())) != _shape(self.parse(mutated.encode()))


GRAMMARS: Registry[type[Grammar]] = Registry("grammar")
"""Grammar classes by name; ``GRAMMARS.get(name)()`` makes one."""


@lru_cache(maxsize=None)
def _language(kind: type[Grammar]) -> Language:
    return kind().language()


def grammar_for(path: str, names: tuple[str, ...] | None = None) -> Grammar | None:
    """The grammar that parses ``path`` (by suffix), among ``names`` (default: every one)."""
    suffix = PurePosixPath(path).suffix
    for name in names if names is not None else GRAMMARS.names():
        kind = GRAMMARS.get(name)
        if suffix in kind.suffixes:
            return _instance(kind)
    return None


def family_grammar(family: str) -> Grammar:
    """A grammar of ``family`` (the first registered): its runtime rules serve the family.

    Raises:
        UnknownPluginError: no grammar of that family is registered.
    """
    for name in GRAMMARS.names():
        if GRAMMARS.get(name).family == family:
            return _instance(GRAMMARS.get(name))
    from repogym.errors import UnknownPluginError

    raise UnknownPluginError("grammar family", family,
                             sorted({GRAMMARS.get(n).family for n in GRAMMARS.names()}))


@lru_cache(maxsize=None)
def _instance(kind: type[Grammar]) -> Grammar:
    return kind()


def _shape(tree: Tree) -> str:
    """The tree's node types and leaf texts, comments left out (layout-insensitive)."""
    out: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if "comment" in node.type:
            continue
        if node.child_count == 0:
            out.append(f"{node.type}:{(node.text or b'').decode('utf-8', 'replace')}")
        else:
            out.append(f"({node.type}")
        stack.extend(reversed(node.children))
    return " ".join(out)


__all__ = ["GRAMMARS", "Grammar", "family_grammar", "grammar_for"]
