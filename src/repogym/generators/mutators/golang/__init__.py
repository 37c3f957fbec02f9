"""The ``go`` family: the Go grammar and its mutators.

The grammar (:mod:`.grammar`) parses ``.go`` files with tree-sitter-go; what counts as
runtime code is in :mod:`.runtime`, the names of functions in :mod:`.scopes`. Go does not
build code that other languages run (an unused variable or import, a missing
``return``), so the mutators that take code away go through a static build check
(:mod:`.checks`), and those whose result depends on types read them from the file
(:mod:`.hints`). The mutators, registered with a ``go_`` prefix, are listed in
:mod:`repogym.generators.mutators`. Importing this package registers them all.
"""

from repogym.generators.mutators.golang import (  # noqa: I001 - grammar first
    grammar,
    blocks,
    calls,
    conditions,
    literals,
    operators,
    statements,
)

__all__ = ["blocks", "calls", "conditions", "grammar", "literals", "operators", "statements"]
