"""The Rust grammar: tree-sitter-rust, the runtime-code rules of
:mod:`~repogym.generators.mutators.rust.runtime`, and a mutation counts when it changes
code, not only comments or layout.

A test file (``tests/*.rs``, ``benches/``, ``examples/``, ``build.rs``...) has no runtime
code: no change to one counts, whatever its functions hold. The generator is only offered
runtime sources, but a grammar does not rely on its caller for that. Whether a mutant
still builds is the mutators' concern: those that take code away or depend on types ask
:mod:`~repogym.generators.mutators.rust.checks` before proposing a site.
"""

from __future__ import annotations

from typing import Iterator

import tree_sitter_rust
from tree_sitter import Language, Node

from repogym.generators.mutators.grammars import GRAMMARS, Grammar
from repogym.generators.mutators.rust import runtime
from repogym.generators.mutators.shared import same_code

FAMILY = "rust"


@GRAMMARS.register("rust")
class RustGrammar(Grammar):
    """Rust source files (``.rs``)."""

    family = FAMILY
    suffixes = (".rs",)

    def language(self) -> Language:
        return Language(tree_sitter_rust.language())

    def runtime_nodes(self, root: Node) -> Iterator[Node]:
        return runtime.runtime_nodes(root)

    def in_runtime_code(self, node: Node, *, defaults: bool = False) -> bool:
        return runtime.in_runtime_code(node, defaults=defaults)

    def enclosing_function(self, node: Node) -> str | None:
        return runtime.enclosing_function(node)

    def real_change(self, path: str, original: str, mutated: str, line: int) -> bool:
        """The syntax trees differ (comments and layout aside) and the mutant parses
        cleanly; never in a test file."""
        if runtime.is_test_file(path):
            return False
        after = self.parse(mutated.encode()).root_node
        return not after.has_error and not same_code(
            self.parse(original.encode()).root_node, after)


RUST = RustGrammar()
