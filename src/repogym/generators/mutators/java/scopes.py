"""Functions and classes in a Java syntax tree, and the names they go by.

A method is ``Class.method`` (nested classes joined with dots: ``Outer.Inner.method``), a
constructor ``Class.<init>`` (as the JVM names it). A lambda has no name: it belongs to
the method around it, as do the methods of an anonymous class declared in a method
(``Outer.run.compare``: the anonymous class adds no name).
"""

from __future__ import annotations

from tree_sitter import Node

from repogym.generators.mutators.base import named_children, text
from repogym.generators.mutators.shared import ancestors, contains, innermost

NAMED_FUNCTIONS = frozenset({"method_declaration", "constructor_declaration",
                             "compact_constructor_declaration"})
CONSTRUCTORS = frozenset({"constructor_declaration", "compact_constructor_declaration"})
FUNCTIONS = NAMED_FUNCTIONS | {"lambda_expression"}
"""Every node type with a body of code that runs when it is called."""
CLASSES = frozenset({"class_declaration", "interface_declaration", "enum_declaration",
                     "record_declaration", "annotation_type_declaration"})
LOOPS = frozenset({"for_statement", "enhanced_for_statement", "while_statement",
                   "do_statement"})
BLOCKS = frozenset({"block", "constructor_body", "switch_block_statement_group"})
"""Nodes whose children are a list of statements."""


def _scope(node: Node) -> tuple[bool, str] | None:
    name = node.child_by_field_name("name")
    if node.type in CLASSES and name is not None:
        return False, text(name)
    if node.type in CONSTRUCTORS:
        return True, "<init>"
    if node.type == "method_declaration" and name is not None:
        return True, text(name)
    return None


def enclosing_function(node: Node) -> str | None:
    """The name of the method or constructor whose body holds ``node`` (see the module
    docstring), or None outside every body."""
    function = next((a for a in ancestors(node.parent) if a.type in NAMED_FUNCTIONS), None)
    if function is None or not contains(function.child_by_field_name("body"), node):
        return None
    names: list[str] = []
    for current in ancestors(node.parent):
        found = _scope(current)
        if found is not None:
            names.append(found[1])
    return ".".join(reversed(names))


def function_of(node: Node) -> Node | None:
    """The innermost method, constructor or lambda around ``node``."""
    return innermost(node, FUNCTIONS)


def named_function_of(node: Node) -> Node | None:
    """The innermost method or constructor around ``node`` (lambdas seen through)."""
    return innermost(node, NAMED_FUNCTIONS)


def body_statements(block: Node | None) -> list[Node]:
    """The statements of a block, comments left out (a lone statement for a brace-less
    body)."""
    if block is None:
        return []
    if block.type not in BLOCKS:
        return [block]
    return [c for c in named_children(block) if c.type not in ("switch_label",)]


def is_void(function: Node) -> bool | None:
    """Whether a method returns nothing; None for a lambda (the file does not say)."""
    if function.type in CONSTRUCTORS:
        return True
    if function.type != "method_declaration":
        return None
    kind = function.child_by_field_name("type")
    return kind is not None and kind.type == "void_type"
