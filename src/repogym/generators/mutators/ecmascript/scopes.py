"""Functions and classes in a JavaScript/TypeScript syntax tree, and the names they go by.

A JavaScript function often has no name of its own: it is assigned to one. The name of a
function (:func:`function_name`) is, in order of preference,

* its own name: ``function parse() {}``, ``function* gen() {}``, a method ``m() {}``
  (getters, setters and ``constructor`` included);
* the variable, property or field it is assigned to: ``const parse = (s) => ...`` ->
  ``parse``; ``exports.format = function () {}`` -> ``format``;
  ``Klass.prototype.m = function () {}`` -> ``Klass.m``; ``{ lookup: function () {} }``
  -> ``lookup``; a class field ``handle = () => {}`` -> ``handle``;
  ``module.exports = function () {}`` -> ``module.exports``;
  ``export default function () {}`` -> ``default``;
* none: a callback passed to a call, an IIFE, a function in an array.

Parentheses and TypeScript's ``as``/``satisfies``/``!`` around the function do not hide
where it is assigned.
"""

from __future__ import annotations

from tree_sitter import Node

from repogym.generators.mutators.base import text
from repogym.generators.mutators.shared import innermost, qualified_name

FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration",
                       "function_expression", "generator_function", "arrow_function",
                       "method_definition"})
"""Every node type with a body of code that runs when it is called."""
CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "class"})
GENERATORS = frozenset({"generator_function_declaration", "generator_function"})
LOOPS = frozenset({"for_statement", "for_in_statement", "while_statement", "do_statement"})

_WRAPPERS = frozenset({"parenthesized_expression", "as_expression", "satisfies_expression",
                       "non_null_expression"})
_FIELDS = frozenset({"field_definition", "public_field_definition"})
_MODULE_OBJECTS = frozenset({"module.exports", "exports"})


def key_text(key: Node) -> str:
    """A property key as a name: ``a``, ``#a``, ``"a b"`` -> ``a b``, ``[Symbol.iterator]``."""
    if key.type == "string":
        return "".join(text(c) for c in key.named_children)
    return " ".join(text(key).split())


def _target_name(left: Node) -> str | None:
    """The name an assignment gives: ``x``, ``exports.x`` -> ``x``, ``A.prototype.m`` ->
    ``A.m``, ``module.exports`` as it is; None for destructuring and computed targets."""
    if left.type == "identifier":
        return text(left)
    if left.type != "member_expression":
        return None
    flat = "".join(text(left).split())
    if flat == "module.exports":
        return flat
    owner = left.child_by_field_name("object")
    prop = left.child_by_field_name("property")
    if prop is None or prop.type not in ("property_identifier", "private_property_identifier"):
        return None
    if owner is not None and owner.type == "member_expression" and text(
            owner.child_by_field_name("property") or owner) == "prototype":
        base = owner.child_by_field_name("object")
        if base is not None and base.type == "identifier":
            return f"{text(base)}.{text(prop)}"
    return text(prop)


def _field_value(parent: Node, field: str, value: Node) -> bool:
    child = parent.child_by_field_name(field)
    return child is not None and child == value


def assigned_name(node: Node) -> str | None:
    """The variable, property or field an expression (a function, class or object) is
    assigned to, or ``default`` when it is a module's default export."""
    value, parent = node, node.parent
    while parent is not None and parent.type in _WRAPPERS:
        value, parent = parent, parent.parent
    if parent is None:
        return None
    kind = parent.type
    if kind == "variable_declarator" and _field_value(parent, "value", value):
        name = parent.child_by_field_name("name")
        return text(name) if name is not None and name.type == "identifier" else None
    if kind == "assignment_expression" and _field_value(parent, "right", value):
        left = parent.child_by_field_name("left")
        return _target_name(left) if left is not None else None
    if kind == "pair" and _field_value(parent, "value", value):
        key = parent.child_by_field_name("key")
        return key_text(key) if key is not None else None
    if kind in _FIELDS and _field_value(parent, "value", value):
        key = parent.child_by_field_name("name") or parent.child_by_field_name("property")
        return key_text(key) if key is not None else None
    if kind == "export_statement" and any(c.type == "default" for c in parent.children):
        return "default"
    return None


def function_name(function: Node) -> str | None:
    """The name a function goes by (see the module docstring), or None if anonymous."""
    own = function.child_by_field_name("name")
    if own is not None:
        return key_text(own)
    return assigned_name(function)


def class_name(cls: Node) -> str | None:
    """A class's own name, or the one it is assigned to."""
    own = cls.child_by_field_name("name")
    return text(own) if own is not None else assigned_name(cls)


def _scope_name(node: Node) -> tuple[bool, str] | None:
    """Whether ``node`` is a function, and the name it adds to a qualified name (None when
    it adds none)."""
    if node.type in FUNCTIONS:
        is_function, name = True, function_name(node)
    elif node.type in CLASSES:
        is_function, name = False, class_name(node)
    elif node.type == "object":
        is_function, name = False, assigned_name(node)
        name = None if name in _MODULE_OBJECTS else name
    else:
        return None
    return (is_function, name) if name else None


def enclosing_function(node: Node) -> str | None:
    """The qualified name of the function around ``node``: ``Klass.method``,
    ``outer.inner``, ``utils.parse`` (a method of ``const utils = {...}``).

    Anonymous functions add nothing: a callback belongs to the named function around it.
    None when no named function is around ``node`` (module-level code, a class field, a
    callback passed at module level).
    """
    return qualified_name(node, _scope_name)


def is_generator(function: Node) -> bool:
    """``function*``, or a ``*method()``."""
    return function.type in GENERATORS or (
        function.type == "method_definition" and any(c.type == "*" for c in function.children))


def function_of(node: Node) -> Node | None:
    """The innermost function around ``node``."""
    return innermost(node, FUNCTIONS)
