"""The ``rust`` family: the Rust grammar and its mutators.

The grammar (:mod:`.grammar`) parses ``.rs`` files with tree-sitter-rust; what counts as
runtime code (function bodies, never test code, macros, ``const`` items or ``unsafe``
blocks) and the names of functions are in :mod:`.runtime`. Rust rejects code that other
languages run (a block whose type changes, an uninitialised or uninferable local, ``-``
on a ``String``), so the mutators that take code away or depend on types ask a static
check (:mod:`.checks`) before proposing a site. The mutators, registered with an ``rs_``
prefix, are listed in :mod:`repogym.generators.mutators`. Importing this package
registers them all.
"""

from repogym.generators.mutators.rust import (  # noqa: I001 - grammar first
    grammar,
    blocks,
    calls,
    conditions,
    literals,
    operators,
    statements,
)

__all__ = ["blocks", "calls", "conditions", "grammar", "literals", "operators", "statements"]
