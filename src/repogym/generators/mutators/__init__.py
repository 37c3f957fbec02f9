"""Mutator plug-ins, one module per family; importing this package registers them all.

==========  ==================  ==========================================================
family      name                bug
==========  ==================  ==========================================================
operators   comparison_flip     ``<``↔``>=``, ``>``↔``<=``, ``==``↔``!=``
operators   membership_flip     ``in``↔``not in``, ``is``↔``is not``
operators   arithmetic_swap     ``+``↔``-``, ``*``↔``/``, ``//``→``*``, ``%``→``//``
operators   boolean_swap        ``and``↔``or``
conditions  negate_condition    ``if c:`` -> ``if not (c):`` (also elif/while/ternary)
conditions  invert_if_else      the if and else bodies trade places
literals    off_by_one          ``n`` -> ``n±1`` in comparisons, slices, subscripts, range()
literals    constant_swap       ``True``↔``False``
literals    change_default      a parameter default: ``True``↔``False``, ``n+1``, ``""``
literals    slice_bound         ``x[1:]`` -> ``x[:]``, ``x[:n]`` -> ``x[:n - 1]``
statements  remove_statement    an assignment or call statement is dropped
statements  remove_return       an early ``return`` (inside an if/loop/with/try) is dropped
statements  return_value        ``return x`` -> ``return None``
blocks      remove_conditional  an ``if`` without else is dropped with its body
blocks      remove_loop         a ``for``/``while`` loop is dropped
blocks      remove_with         ``with cm as x: body`` -> ``x = cm`` + ``body``
blocks      swap_statements     two adjacent dependent statements trade places
exceptions  remove_try          ``try`` unwrapped: body, else, finally; no handler
exceptions  exception_swap      ``except ValueError`` -> ``except TypeError`` (also raise)
calls       swap_arguments      ``f(a, b)`` -> ``f(b, a)``
calls       break_call_chain    ``s.strip().lower()`` -> ``s.strip()``
==========  ==================  ==========================================================

The contract is :class:`~repogym.generators.mutators.base.Mutator`; what counts as
runtime code is in :mod:`repogym.generators.mutators.runtime`; the text edits shared by
statement-level mutators are in :mod:`repogym.generators.mutators.edits`.
"""

from repogym.generators.mutators import (  # noqa: I001 - grammars before their mutators
    python_grammar,
    blocks,
    calls,
    conditions,
    exceptions,
    literals,
    operators,
    statements,
)
from repogym.generators.mutators.base import MUTATORS, Mutator, NodeMutator, Site

__all__ = ["MUTATORS", "Mutator", "NodeMutator", "Site", "python_grammar", "blocks", "calls", "conditions",
           "exceptions", "literals", "operators", "statements"]
