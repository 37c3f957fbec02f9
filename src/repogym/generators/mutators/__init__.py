"""Mutator plug-ins, one module per family; importing this package registers them all.

==================  ====================  ==============================================
family              name                  bug
==================  ====================  ==============================================
operators           comparison_flip       ``<``↔``>=``, ``==``↔``!=``, ``is``↔``is not``, ...
operators           arithmetic_swap       ``+``↔``-``, ``*``↔``/``, ``//``→``*``, ``%``→``//``
operators           boolean_swap          ``and``↔``or``
conditions          negate_condition      ``if c:`` -> ``if not (c):`` (also elif/while/ternary)
conditions          invert_if_else        the if and else bodies trade places
literals            off_by_one            ``n`` -> ``n±1`` in comparisons, slices, subscripts, range()
literals            constant_swap         ``True``↔``False``
statements          remove_statement      an assignment or call statement is dropped
statements          return_value          ``return x`` -> ``return None``
==================  ====================  ==============================================

The contract is :class:`~repogym.generators.mutators.base.Mutator`; what counts as
runtime code is in :mod:`repogym.generators.mutators.runtime`.
"""

from repogym.generators.mutators import conditions, literals, operators, statements
from repogym.generators.mutators.base import MUTATORS, Mutator, NodeMutator, Site

__all__ = ["MUTATORS", "Mutator", "NodeMutator", "Site",
           "conditions", "literals", "operators", "statements"]
