"""The ``java`` mutator family: Java source files, read with tree-sitter-java.

Each mutator proposes only what still compiles as far as the file shows (see
:mod:`~repogym.generators.mutators.java.checks`); what counts as runtime code is in
:mod:`~repogym.generators.mutators.java.runtime`.
"""

from repogym.generators.mutators.java import (  # noqa: I001 - the grammar first
    grammar,
    blocks,
    calls,
    conditions,
    literals,
    operators,
    statements,
)

__all__ = ["blocks", "calls", "conditions", "grammar", "literals", "operators", "statements"]
