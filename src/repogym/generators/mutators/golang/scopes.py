"""Functions in a Go syntax tree, and the names they go by.

Go has two kinds of named function, both at package level: ``func Parse(...)`` is
``Parse``, and a method ``func (u *UUID) String()`` is ``UUID.String`` (the receiver's
type, without ``*`` or type parameters). A function literal (``func(x int) bool {...}``)
has no name: it belongs to the function around it, or, in a package-level ``var``
initialiser, to the variable (``var isSep = func(r rune) bool {...}`` -> ``isSep``),
as the rest of that initialiser does.
"""

from __future__ import annotations

from tree_sitter import Node

from repogym.generators.mutators.base import named_children, text
from repogym.generators.mutators.shared import ancestors, contains, innermost

NAMED_FUNCTIONS = frozenset({"function_declaration", "method_declaration"})
FUNCTIONS = NAMED_FUNCTIONS | {"func_literal"}
"""Every node type with a body of code that runs when it is called."""
LOOPS = frozenset({"for_statement"})
SWITCHES = frozenset({"expression_switch_statement", "type_switch_statement",
                      "select_statement"})
_RECEIVER_TYPES = frozenset({"type_identifier"})


def receiver_type(method: Node) -> str | None:
    """The type a method is declared on: ``(u *UUID)`` -> ``UUID``, ``(l *List[T])`` ->
    ``List``."""
    receiver = method.child_by_field_name("receiver")
    stack = [receiver] if receiver is not None else []
    while stack:
        current = stack.pop()
        if current.type in _RECEIVER_TYPES:
            return text(current)
        if current.type != "type_arguments":
            stack.extend(reversed(current.named_children))
    return None


def function_name(function: Node) -> str | None:
    """``Func`` for a function, ``Type.Method`` for a method, None for a function literal."""
    name = function.child_by_field_name("name")
    if function.type not in NAMED_FUNCTIONS or name is None:
        return None
    if function.type == "method_declaration":
        owner = receiver_type(function)
        return f"{owner}.{text(name)}" if owner else text(name)
    return text(name)


def is_package_level(spec: Node) -> bool:
    """Whether a ``var_spec`` (or ``const_spec``) is declared at package level."""
    parent = spec.parent
    if parent is not None and parent.type in ("var_spec_list", "const_spec_list"):
        parent = parent.parent
    holder = parent.parent if parent is not None else None
    return holder is not None and holder.type == "source_file"


def initialised_name(spec: Node, node: Node) -> str | None:
    """The name of a ``var_spec`` whose initialiser holds ``node``: ``var a, b = x, y``
    names ``a`` for ``x`` and ``b`` for ``y``; the first name when the values do not pair
    with the names (``var a, b = f()``)."""
    value = spec.child_by_field_name("value")
    if not contains(value, node) or value is None:
        return None
    names = [c for i, c in enumerate(spec.children)
             if spec.field_name_for_child(i) == "name"]
    if not names:
        return None
    values = named_children(value)
    for name, part in zip(names, values):
        if len(names) == len(values) and contains(part, node):
            return text(name)
    return text(names[0])


def enclosing_function(node: Node) -> str | None:
    """The name of the function around ``node`` (see the module docstring), or None
    outside any function and package-level ``var`` initialiser."""
    for current in ancestors(node.parent):
        if current.type in NAMED_FUNCTIONS:
            return function_name(current) if contains(
                current.child_by_field_name("body"), node) else None
        if current.type == "var_spec" and is_package_level(current):
            return initialised_name(current, node)
    return None


def function_of(node: Node) -> Node | None:
    """The innermost function (or function literal) around ``node``."""
    return innermost(node, FUNCTIONS)


def body_statements(block: Node | None) -> list[Node]:
    """The statements of a block (``{ ... }``), comments left out."""
    if block is None:
        return []
    lists = [c for c in block.named_children if c.type == "statement_list"]
    return named_children(lists[0]) if lists else []


def case_statements(case: Node) -> list[Node]:
    """The statements of a ``case`` or ``default`` clause, comments left out."""
    lists = [c for c in case.named_children if c.type == "statement_list"]
    return named_children(lists[0]) if lists else []
