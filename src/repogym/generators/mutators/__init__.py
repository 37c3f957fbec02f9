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

The ``java`` family (package :mod:`repogym.generators.mutators.java`; every mutator
proposes only what still compiles as far as the file shows: no string ``-``, no variable
read unassigned, no ``catch`` left catching what nothing throws, no missing ``return``,
no unreachable code; never in test files, ``toString()``, ``hashCode()`` or logging):

==========  ========================  ====================================================
module      name                      bug
==========  ========================  ====================================================
operators   java_comparison_flip      ``<``↔``>=``, ``>``↔``<=``, ``==``↔``!=``
operators   java_arithmetic_swap      ``+``↔``-``, ``*``↔``/``, ``%``→``*`` (``+`` on numbers only)
operators   java_bitwise_swap         ``&``↔``|``, ``^``→``&``, ``<<``↔``>>``, ``>>>``→``<<``
operators   java_logical_swap         ``&&``↔``||``
operators   java_update_flip          ``i++``↔``i--`` inside a loop
conditions  java_negate_condition     ``if (c)`` -> ``if (!c)`` (also while/do/for)
conditions  java_invert_if_else       the if and else branches trade places
conditions  java_ternary_swap         ``c ? a : b`` -> ``c ? b : a``
literals    java_off_by_one           ``n`` -> ``n±1`` in comparisons, indexes, ``substring()``...
literals    java_constant_swap        ``true``↔``false``, ``0``↔``1``, ``n``→``n+1``
statements  java_remove_statement     a call, assignment or ``i++`` statement is dropped
statements  java_remove_early_return  an early ``return`` (inside an if/loop/switch) is dropped
statements  java_return_value         ``return x`` -> ``return null`` (``0``, ``false``)
blocks      java_remove_conditional   an ``if`` without else is dropped with its body
calls       java_swap_arguments       ``f(a, b)`` -> ``f(b, a)`` (arguments of one type)
calls       java_break_call_chain     ``s.trim().toLowerCase()`` -> ``s.trim()``
==========  ========================  ====================================================

The ``rust`` family (package :mod:`repogym.generators.mutators.rust`; only function
bodies outside test code, macros, ``const`` items and ``unsafe`` blocks; the mutators that
take code away or depend on types only propose what still builds as far as the file
shows: no block whose type changes, no local left unused, uninitialised or uninferable,
no ``-`` on a ``String``):

==========  ======================  ======================================================
module      name                    bug
==========  ======================  ======================================================
operators   rs_comparison_flip      ``<``↔``>=``, ``>``↔``<=``, ``==``↔``!=``
operators   rs_arithmetic_swap      ``+``↔``-``, ``*``↔``/``, ``%``→``*`` (numbers only)
operators   rs_bitwise_swap         ``&``↔``|``, ``^``→``&``, ``<<``↔``>>``
operators   rs_logical_swap         ``&&``↔``||``
conditions  rs_negate_condition     ``if c`` -> ``if !c`` (also ``while``; not ``if let``)
conditions  rs_invert_if_else       the if and else branches trade places
literals    rs_off_by_one           ``n`` -> ``n±1`` in comparisons, indexes, ranges; ``..``↔``..=``
literals    rs_constant_swap        ``true``↔``false``, ``0``↔``1`` (as a value)
statements  rs_remove_statement     a call, assignment or ``x += 1`` statement is dropped
statements  rs_remove_early_return  an early ``return`` (inside an if/loop/match) is dropped
statements  rs_return_value         ``Some(x)`` -> ``None``, ``!b``, ``0``, ``String::new()``
blocks      rs_remove_conditional   an ``if`` without else is dropped with its body
blocks      rs_match_arm_swap       two match arms' literal values trade places
calls       rs_swap_arguments       ``f(a, b)`` -> ``f(b, a)`` (arguments of one type)
calls       rs_break_call_chain     ``s.trim().trim_matches('x')`` -> ``s.trim()``, ``.rev()``
==========  ======================  ======================================================

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
    rust,
    java,
)
from repogym.generators.mutators.base import MUTATORS, Mutator, NodeMutator, Site

__all__ = ["MUTATORS", "Mutator", "NodeMutator", "Site", "python_grammar", "blocks", "calls", "conditions",
           "ecmascript", "exceptions", "golang", "java", "literals", "operators", "rust",
           "statements"]
