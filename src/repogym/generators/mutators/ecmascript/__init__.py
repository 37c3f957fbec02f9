"""The ``ecmascript`` family: JavaScript, TypeScript and TSX grammars and their mutators.

One set of runtime-code rules (:mod:`.runtime`, with function names from :mod:`.scopes`)
serves the three grammars (:mod:`.grammar`); the mutators, registered with a ``js_``
prefix, are listed in :mod:`repogym.generators.mutators`. Importing this package
registers them all.
"""

from repogym.generators.mutators.ecmascript import (  # noqa: I001 - grammars first
    grammar,
    blocks,
    calls,
    conditions,
    exceptions,
    literals,
    operators,
    statements,
)

__all__ = ["blocks", "calls", "conditions", "exceptions", "grammar", "literals", "operators",
           "statements"]
