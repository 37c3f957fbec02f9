"""The JavaScript, TypeScript and TSX grammars: one family (``ecmascript``), one set of
runtime-code rules (:mod:`~repogym.generators.mutators.ecmascript.runtime`), three
tree-sitter languages.

A mutation counts when the mutated file parses cleanly with the file's grammar (the
generator checks) and its syntax tree differs from the original's, comments and layout
aside: what :meth:`Grammar.real_change`'s default tells, but found by descending only
into the subtrees whose text differs (:func:`same_code`). A TypeScript declaration file
(``.d.ts``, which arrives here as ``.ts``) has no runtime code: its trees yield no
runtime node, and no change to one counts.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator

import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Language, Node, Tree

from repogym.generators.mutators.ecmascript import runtime
from repogym.generators.mutators.ecmascript.scopes import enclosing_function
from repogym.generators.mutators.grammars import GRAMMARS, Grammar
from repogym.generators.mutators.shared import same_code

FAMILY = "ecmascript"


class EcmaScriptGrammar(Grammar):
    """The runtime-code rules shared by JavaScript, TypeScript and TSX."""

    family = FAMILY

    def runtime_nodes(self, root: Node) -> Iterator[Node]:
        return runtime.runtime_nodes(root)

    def in_runtime_code(self, node: Node, *, defaults: bool = False) -> bool:
        return runtime.in_runtime_code(node, defaults=defaults)

    def enclosing_function(self, node: Node) -> str | None:
        return enclosing_function(node)

    def real_change(self, path: str, original: str, mutated: str, line: int) -> bool:
        """The syntax trees differ (comments and layout aside); never in a ``.d.ts``."""
        if runtime.is_declaration_file(path):
            return False
        before = _parsed_original(self, original).root_node
        return not same_code(before, self.parse(mutated.encode()).root_node)


@lru_cache(maxsize=32)
def _parsed_original(grammar: Grammar, text: str) -> Tree:
    """The original's tree, once per file (every mutation of it compares against it)."""
    return grammar.parse(text.encode())


@GRAMMARS.register("javascript")
class JavaScriptGrammar(EcmaScriptGrammar):
    """JavaScript with JSX, as CommonJS or ES modules."""

    suffixes = (".js", ".mjs", ".cjs", ".jsx")

    def language(self) -> Language:
        return Language(tree_sitter_javascript.language())


@GRAMMARS.register("typescript")
class TypeScriptGrammar(EcmaScriptGrammar):
    """TypeScript without JSX (``<T>x`` is a type assertion)."""

    suffixes = (".ts", ".mts", ".cts")

    def language(self) -> Language:
        return Language(tree_sitter_typescript.language_typescript())


@GRAMMARS.register("tsx")
class TsxGrammar(EcmaScriptGrammar):
    """TypeScript with JSX."""

    suffixes = (".tsx",)

    def language(self) -> Language:
        return Language(tree_sitter_typescript.language_tsx())
