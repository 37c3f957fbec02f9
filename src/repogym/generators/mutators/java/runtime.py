"""Which parts of a Java file are *runtime code* that a mutator may touch.

Runtime code is the body of a method or constructor (lambdas, local and anonymous classes
inside it included, and the methods of an anonymous class wherever it is). Field
initialisers, static and instance initialiser blocks are not: the former are mostly
constants, and neither is what a test of a method exercises.

Excluded wherever they appear (the whole subtree is skipped):

* annotations, ``assert`` statements and ``case`` labels (constant expressions: a
  changed one may repeat another);
* output and logging: ``System.out``/``System.err``, ``printStackTrace()``, loggers
  (``log.debug``, ``LOG.info``, ``this.logger.warn``...), and statements made of them;
* the arguments of an exception's construction (``new IllegalArgumentException("bad " +
  n)``: a message, rarely tested);
* ``static final`` fields of local and anonymous classes;
* the bodies of ``toString()`` and ``hashCode()``: bugs there are rarely tested.

A generated file (a ``// Generated``/``DO NOT EDIT`` comment in its header, or a
``@Generated`` type) has no runtime code. Test files (under a module's ``src/test`` or
``src/it``, or a class named ``*Test``, ``*Tests``, ``*IT``, ``*TestCase``) are never
offered as runtime sources, and no change to one counts (see :mod:`.grammar`); nor has
``package-info.java`` or ``module-info.java`` any code.

javac rejects unreachable statements, so, unlike Go, a Java file that builds has none.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import named_children, text
from repogym.generators.mutators.java.scopes import NAMED_FUNCTIONS
from repogym.generators.mutators.shared import contains, holds, in_body, is_output_call

_ALWAYS_EXCLUDED = frozenset({"annotation", "marker_annotation", "assert_statement",
                              "switch_label", "line_comment", "block_comment",
                              "package_declaration", "import_declaration"})
_QUIET = frozenset({"System.out.println", "System.out.print", "System.out.printf",
                    "System.out.format", "System.err.println", "System.err.print",
                    "System.err.printf", "System.err.format", "System.out.flush",
                    "System.err.flush"})
_LOGGERS = frozenset({"log", "logger", "logging", "slf4j", "log4j", "jul"})
_RECEIVERS = frozenset({"this"})
_SKIPPED_METHODS = frozenset({"toString", "hashCode"})
_TEST_CLASS = re.compile(r"(Test|Tests|IT|TestCase)$")
_GENERATED = re.compile(r"^\W*generated\b|\bDO NOT (EDIT|MODIFY)\b|@generated\b|"
                        r"\b(auto-?generated|generated (by|from|code|file|automatically))\b",
                        re.IGNORECASE | re.MULTILINE)
_THROWABLE = re.compile(r"(Exception|Error|Throwable)$")
_TYPES = frozenset({"class_declaration", "interface_declaration", "enum_declaration",
                    "record_declaration", "annotation_type_declaration"})


def is_test_file(path: str) -> bool:
    """Whether ``path`` is test code: under a module's ``src/test`` or ``src/it``, or a
    class named like a test (``FooTest.java``, ``FooTests``, ``FooIT``, ``FooTestCase``)."""
    p = PurePosixPath(path)
    parts = p.parts[:-1]
    if any(parts[i] == "src" and parts[i + 1] in ("test", "it") for i in range(len(parts) - 1)):
        return True
    return bool(_TEST_CLASS.search(p.stem))


def _annotation_name(node: Node) -> str:
    name = node.child_by_field_name("name")
    return text(name).rsplit(".", 1)[-1] if name is not None else ""


def is_generated(root: Node) -> bool:
    """Whether the file says it is generated: a header comment (before the first type)
    saying so, or a ``@Generated`` annotation on a top-level type."""
    for child in root.children:
        if "comment" in child.type:
            if _GENERATED.search(text(child)):
                return True
        elif child.type in _TYPES:
            modifiers = next((c for c in child.children if c.type == "modifiers"), None)
            if modifiers is not None and any(
                    c.type in ("annotation", "marker_annotation")
                    and _annotation_name(c) == "Generated" for c in modifiers.children):
                return True
    return False


def callee(call: Node) -> str:
    """A method call's callee without whitespace or arguments: ``this.log.debug``,
    ``System.out.println``, ``foo``."""
    name = call.child_by_field_name("name")
    target = call.child_by_field_name("object")
    own = text(name) if name is not None else ""
    return ("".join(text(target).split()) + "." + own) if target is not None else own


def is_quiet_call(call: Node) -> bool:
    """A call that only writes output or logs."""
    name = callee(call)
    return is_output_call(name, _QUIET, _LOGGERS, _RECEIVERS) \
        or name.endswith(".printStackTrace") or name == "printStackTrace"


def _is_output(node: Node) -> bool:
    if node.type == "method_invocation":
        return is_quiet_call(node)
    if node.type == "expression_statement":
        parts = named_children(node)
        return len(parts) == 1 and parts[0].type == "method_invocation" \
            and is_quiet_call(parts[0])
    return False


def _is_static_final(field: Node) -> bool:
    modifiers = next((c for c in field.children if c.type == "modifiers"), None)
    words = {c.type for c in modifiers.children} if modifiers is not None else set()
    return {"static", "final"} <= words


def is_skipped_method(node: Node) -> bool:
    """``toString()`` or ``hashCode()``: a method whose bugs tests rarely see."""
    name = node.child_by_field_name("name")
    params = node.child_by_field_name("parameters")
    return node.type == "method_declaration" and name is not None \
        and text(name) in _SKIPPED_METHODS and params is not None \
        and not named_children(params)


def is_exception_creation(node: Node) -> bool:
    """``new FooException(...)``: its arguments are a message."""
    kind = node.child_by_field_name("type")
    return node.type == "object_creation_expression" and kind is not None \
        and _THROWABLE.search(text(kind).split("<")[0]) is not None


def is_excluded(node: Node) -> bool:
    """Whether ``node`` and everything under it is off limits (see the module docstring)."""
    kind = node.type
    if kind in _ALWAYS_EXCLUDED:
        return True
    if kind == "method_invocation" or kind == "expression_statement":
        return _is_output(node)
    if kind == "argument_list":
        return node.parent is not None and is_exception_creation(node.parent)
    if kind == "field_declaration":
        return _is_static_final(node)
    return kind == "method_declaration" and is_skipped_method(node)


def is_off_limits(node: Node) -> bool:
    """Whether ``node`` is excluded, or the root of a generated file."""
    if node.type == "program":
        return is_generated(node)
    return is_excluded(node)


def holds_off_limits(node: Node) -> bool:
    """Whether deleting ``node`` would take a logging or output call along."""
    return holds(node, _is_output, lambda n: n.children)


def runtime_nodes(root: Node) -> Iterator[Node]:
    """Every node of runtime code under ``root``, in source order."""
    return iter(_runtime_nodes(root))


@lru_cache(maxsize=8)
def _runtime_nodes(root: Node) -> tuple[Node, ...]:
    """The walk, once per tree: every mutator of the family asks for it."""
    return tuple(_walk(root))


def _walk(root: Node) -> Iterator[Node]:
    if is_generated(root):
        return
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, runtime = stack.pop()
        if is_excluded(node):
            continue
        if runtime:
            yield node
        if node.type in NAMED_FUNCTIONS or node.type == "lambda_expression":
            body = node.child_by_field_name("body")
            if body is not None:
                stack.append((body, runtime or node.type in NAMED_FUNCTIONS))
            continue
        stack.extend((child, runtime) for child in reversed(node.children))


def _verdict(scope: Node, node: Node) -> bool | None:
    """True for a method or constructor whose body holds ``node``; False for the other
    parts of a function; None for any other node."""
    if scope.type in NAMED_FUNCTIONS:
        return contains(scope.child_by_field_name("body"), node)
    if scope.type == "lambda_expression" and not contains(scope.child_by_field_name("body"),
                                                          node):
        return False
    return False if scope.type == "program" else None


def in_runtime_code(node: Node, *, defaults: bool = False) -> bool:
    """Whether ``node`` is runtime code (checked from the node up to the root). Java has
    no default values: ``defaults`` changes nothing."""
    return in_body(node, is_off_limits, _verdict)


def enclosing_block(node: Node) -> Node | None:
    """The block (or ``case`` group) a statement belongs to, if its parent is one."""
    parent = node.parent
    return parent if parent is not None and parent.type in (
        "block", "constructor_body", "switch_block_statement_group") else None
