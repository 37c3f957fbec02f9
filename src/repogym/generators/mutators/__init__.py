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

The ``ecmascript`` family (JavaScript, TypeScript, TSX; package
:mod:`repogym.generators.mutators.ecmascript`):

==========  =====================  =======================================================
module      name                   bug
==========  =====================  =======================================================
operators   js_comparison_flip     ``<``↔``>=``, ``>``↔``<=``, ``===``↔``!==``, ``==``↔``!=``
operators   js_arithmetic_swap     ``+``↔``-``, ``*``↔``/``, ``%``→``*`` (not string ``+``)
operators   js_logical_swap        ``&&``↔``||``, ``??``→``||`` (and ``&&=``, ``||=``, ``??=``)
operators   js_update_flip         ``i++``↔``i--`` inside a loop
conditions  js_negate_condition    ``if (c)`` -> ``if (!c)`` (also while/do-while/ternary)
conditions  js_invert_if_else      the if and else branches trade places
literals    js_off_by_one          ``n`` -> ``n±1`` in comparisons, indexes, ``.slice()``...
literals    js_constant_swap       ``true``↔``false``
literals    js_change_default      a default: ``true``↔``false``, ``n+1``, ``""``
statements  js_remove_statement    a call, assignment or ``delete`` statement is dropped
statements  js_remove_return       an early ``return`` (inside an if/loop/try) is dropped
statements  js_return_value        ``return x`` -> ``return undefined`` (also ``=> x``)
blocks      js_remove_conditional  an ``if`` without else is dropped with its body
blocks      js_remove_loop         a ``for``/``for-of``/``for-in``/``while`` loop is dropped
blocks      js_swap_statements     two adjacent dependent statements trade places
exceptions  js_remove_try          ``try`` unwrapped: body and finally; no ``catch``
calls       js_swap_arguments      ``f(a, b)`` -> ``f(b, a)``
calls       js_break_call_chain    ``s.trim().toLowerCase()`` -> ``s.trim()``
==========  =====================  =======================================================

The ``go`` family (package :mod:`repogym.generators.mutators.golang`; the mutators that
take code away, and those that depend on types, only propose what still builds as far
as the file shows: no unused variable or import, no missing ``return``, no vet finding
that fails ``go test``):

==========  =====================  =======================================================
module      name                   bug
==========  =====================  =======================================================
operators   go_comparison_flip     ``<``↔``>=``, ``>``↔``<=``, ``==``↔``!=``
operators   go_arithmetic_swap     ``+``↔``-``, ``*``↔``/``, ``%``→``*`` (not string ``+``)
operators   go_bitwise_swap        ``&``↔``|``, ``^``/``&^``→``&``, ``<<``↔``>>``
operators   go_logical_swap        ``&&``↔``||``
operators   go_update_flip         ``i++``↔``i--`` inside a loop
conditions  go_negate_condition    ``if c`` -> ``if !c`` (also ``for`` conditions)
conditions  go_invert_if_else      the if and else branches trade places
literals    go_off_by_one          ``n`` -> ``n±1`` in comparisons, indexes, slice bounds...
literals    go_constant_swap       ``true``↔``false``, ``0``↔``1``, ``n``→``n+1``, ``"s"``→``""``
statements  go_remove_statement    a call, assignment or ``i++`` statement is dropped
statements  go_remove_return       an early ``return`` (inside an if/loop/switch) is dropped
statements  go_return_value        ``return n, nil`` -> ``return 0, nil``; ``err`` -> ``nil``
blocks      go_remove_conditional  an ``if`` without else is dropped with its body
blocks      go_remove_loop         a ``for`` loop is dropped
calls       go_swap_arguments      ``f(a, b)`` -> ``f(b, a)`` (arguments of one type)
calls       go_break_call_chain    ``strings.ToLower(s)`` -> ``s``, ``t.UTC()`` dropped
==========  =====================  =======================================================

The contract is :class:`~repogym.generators.mutators.base.Mutator`; what counts as
runtime code is in :mod:`repogym.generators.mutators.runtime`; the text edits shared by
statement-level mutators are in :mod:`repogym.generators.mutators.edits`. What the
families do alike (walking runtime code, re-indenting, swapping two nodes...) is written
once, in :mod:`repogym.generators.mutators.shared`, parameterised by each language's
node types.
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
    ecmascript,
    golang,
)
from repogym.generators.mutators.base import MUTATORS, Mutator, NodeMutator, Site

__all__ = ["MUTATORS", "Mutator", "NodeMutator", "Site", "python_grammar", "blocks", "calls", "conditions",
           "ecmascript", "exceptions", "golang", "literals", "operators", "statements"]
