"""The Java grammar (``.java``), the one grammar of the ``java`` family.

A mutation counts when the mutated file parses cleanly (the generator checks), is no test
file, and its syntax tree differs from the original's, comments and layout aside
(:func:`same_code`). Whether it still compiles is the mutators' business: each looks at
the code around a site (:mod:`.checks`) and proposes only what javac accepts as far as
the file shows.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator

import tree_sitter_java
from tree_sitter import Language, Node, Tree

from repogym.generators.mutators.grammars import GRAMMARS, Grammar
from repogym.generators.mutators.java import runtime
from repogym.generators.mutators.java.scopes import enclosing_function
from repogym.generators.mutators.shared import same_code

FAMILY = "java"


@GRAMMARS.register("java")
class JavaGrammar(Grammar):
    """Java source files (``.java``)."""

    family = FAMILY
    suffixes = (".java",)

    def language(self) -> Language:
        return Language(tree_sitter_java.language())

    def runtime_nodes(self, root: Node) -> Iterator[Node]:
        return runtime.runtime_nodes(root)

    def in_runtime_code(self, node: Node, *, defaults: bool = False) -> bool:
        return runtime.in_runtime_code(node, defaults=defaults)

    def enclosing_function(self, node: Node) -> str | None:
        return enclosing_function(node)

    def real_change(self, path: str, original: str, mutated: str, line: int) -> bool:
        """The syntax trees differ (comments and layout aside); never in a test file."""
        if runtime.is_test_file(path):
            return False
        before = _original(original.encode()).root_node
        return not same_code(before, self.parse(mutated.encode()).root_node)


JAVA = JavaGrammar()


@lru_cache(maxsize=32)
def _original(source: bytes) -> Tree:
    """The original's tree, once per file (every mutant compares against it)."""
    return JAVA.parse(source)
