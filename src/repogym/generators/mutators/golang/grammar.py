"""The Go grammar: tree-sitter-go, the runtime-code rules of
:mod:`~repogym.generators.mutators.golang.runtime`, and a mutation counts when it still
builds, as far as the syntax tree tells (:mod:`~repogym.generators.mutators.golang.checks`),
and changes code, not only comments or layout.

A test file (``x_test.go``) has no runtime code: no change to one counts, whatever its
functions hold. The generator is only offered runtime sources, but a grammar does not rely
on its caller for that.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator

import tree_sitter_go
from tree_sitter import Language, Node, Tree

from repogym.generators.mutators.golang import checks, runtime
from repogym.generators.mutators.golang.scopes import enclosing_function
from repogym.generators.mutators.grammars import GRAMMARS, Grammar
from repogym.generators.mutators.shared import same_code

FAMILY = "go"


@GRAMMARS.register("go")
class GoGrammar(Grammar):
    """Go source files (``.go``)."""

    family = FAMILY
    suffixes = (".go",)

    def language(self) -> Language:
        return Language(tree_sitter_go.language())

    def runtime_nodes(self, root: Node) -> Iterator[Node]:
        return runtime.runtime_nodes(root)

    def in_runtime_code(self, node: Node, *, defaults: bool = False) -> bool:
        return runtime.in_runtime_code(node, defaults=defaults)

    def enclosing_function(self, node: Node) -> str | None:
        return enclosing_function(node)

    def real_change(self, path: str, original: str, mutated: str, line: int) -> bool:
        """The syntax trees differ (comments and layout aside) and the mutant still builds
        as far as :func:`~repogym.generators.mutators.golang.checks.still_builds` sees;
        never in a test file."""
        if runtime.is_test_file(path):
            return False
        before, facts = _original(original.encode())
        after = self.parse(mutated.encode()).root_node
        return not same_code(before.root_node, after) and _builds(before, facts, after)


GO = GoGrammar()


@lru_cache(maxsize=32)
def _original(source: bytes) -> tuple[Tree, checks.FileFacts]:
    """The original's tree and facts, once per file (every mutant compares against them)."""
    tree = GO.parse(source)
    return tree, checks.file_facts(tree.root_node)


def builds_like(original: bytes, mutated: bytes) -> bool:
    """Whether ``mutated`` parses cleanly and has no build problem ``original`` has not
    (see :mod:`~repogym.generators.mutators.golang.checks`)."""
    before, facts = _original(original)
    return _builds(before, facts, GO.parse(mutated).root_node)


def _builds(before: Tree, facts: checks.FileFacts, after: Node) -> bool:
    return not after.has_error and checks.still_builds(before.root_node, after, facts)
