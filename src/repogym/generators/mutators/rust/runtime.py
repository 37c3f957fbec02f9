"""Which parts of a Rust file are *runtime code* that a mutator may touch, and the names
of the functions they belong to.

Runtime code is the body of a function: a free ``fn``, a method in an ``impl`` or a
trait's default method, a nested ``fn``, and the closures and ``async`` blocks inside
them. A bug there runs when the function is called, so tests can catch it.

Excluded wherever they appear (the whole subtree is skipped):

* **test code**: an item or statement marked ``#[test]`` (``#[tokio::test]``...),
  ``#[bench]`` or ``#[cfg(...)]`` naming ``test`` (``#[cfg(test)] mod tests { ... }``,
  ``#[cfg(not(test))]`` too: ``cargo test`` does not build it), and a whole file under an
  inner ``#![cfg(test)]``; test files (``tests/``, ``benches/``, ``examples/``,
  ``build.rs``...) have no runtime code at all (see :func:`is_test_file`);
* compile-time code: ``const`` and ``static`` items, ``const fn`` bodies (a changed value
  may be evaluated, and overflow, at compile time), ``const { ... }`` blocks, array
  lengths;
* macros: ``macro_rules!`` definitions and every macro invocation (``println!``,
  ``debug!``, ``assert!``, ``format!``...): tree-sitter does not parse inside their token
  trees reliably, and most of them are output or checks;
* ``unsafe`` blocks and ``unsafe fn`` bodies: a bug there is undefined behaviour, not a
  test failure;
* everything type-level: types, generic arguments and parameters, ``where`` clauses,
  parameter lists, patterns (``let`` and ``match`` patterns, closure parameters: a change
  there makes a match non-exhaustive or a binding unused), attributes, ``use``
  declarations, struct, enum, trait and type definitions;
* logging calls that are no macro (``log::logger().log(...)``, ``tracing::...``);
* unreachable statements: those after a ``return``, ``break``, ``continue`` or
  ``panic!()``/``unreachable!()``/``todo!()`` in the same block.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import text
from repogym.generators.mutators.shared import ancestors, contains, holds, is_output_call

NAMED_FUNCTIONS = frozenset({"function_item"})
FUNCTIONS = NAMED_FUNCTIONS | {"closure_expression"}
LOOPS = frozenset({"for_expression", "while_expression", "loop_expression"})
BLOCKS = frozenset({"block"})
COMMENTS = frozenset({"line_comment", "block_comment"})
TYPES = frozenset({
    "abstract_type", "array_type", "bounded_type", "bracketed_type", "dynamic_type",
    "function_type", "generic_type", "generic_type_with_turbofish", "never_type",
    "pointer_type", "primitive_type", "qualified_type", "reference_type",
    "scoped_type_identifier", "tuple_type", "type_identifier", "unit_type",
    "type_arguments", "type_parameters", "where_clause", "trait_bounds", "lifetime"})
_ALWAYS_EXCLUDED = TYPES | COMMENTS | {
    "attribute_item", "inner_attribute_item", "use_declaration", "extern_crate_declaration",
    "const_item", "static_item", "macro_definition", "macro_invocation", "unsafe_block",
    "const_block", "struct_item", "enum_item", "union_item", "type_item",
    "foreign_mod_item", "function_signature_item", "parameters", "closure_parameters",
    "match_pattern", "label"}
_INERT = TYPES | COMMENTS | {"attribute_item", "parameters", "closure_parameters", "label"}
_EXCLUDED_FIELDS = frozenset({"type", "return_type", "type_parameters", "type_arguments",
                              "pattern", "parameters", "trait", "bounds", "length"})
"""Fields of a node that hold no runtime code (``let`` patterns, array lengths...)."""
_DIVERGING_MACROS = frozenset({"panic", "unreachable", "todo", "unimplemented"})
TERMINATORS = frozenset({"return_expression", "break_expression", "continue_expression"})
_LOGGERS = frozenset({"log", "logger", "logging", "tracing", "slog", "env_logger"})
_QUIET_MACROS = frozenset({
    "print", "println", "eprint", "eprintln", "dbg", "trace", "debug", "info", "warn",
    "error", "log", "event", "span", "debug_assert", "debug_assert_eq", "debug_assert_ne"})
_TEST_ATTRIBUTE = re.compile(r"^(?:[\w:]*::)?(?:test|bench)$")
_CFG_TEST = re.compile(r"^cfg\s*\(.*\btest\b", re.S)
_TEST_DIRS = frozenset({"tests", "benches", "examples", "fuzz", "testdata", "test_data"})
_CONTAINERS = frozenset({"source_file", "declaration_list", "block"})


def is_test_file(path: str) -> bool:
    """Whether ``path`` holds no runtime code: tests, benchmarks, examples, fuzz targets,
    build scripts (``tests/``, ``benches/``, ``examples/``, ``build.rs``, ``tests.rs``,
    ``x_test.rs``...)."""
    p = PurePosixPath(path)
    return (bool(_TEST_DIRS.intersection(p.parts[:-1])) or p.name in ("build.rs", "tests.rs")
            or p.name.endswith(("_test.rs", "_tests.rs")))


def attributes(item: Node) -> list[Node]:
    """The outer attributes (``#[...]``) right before ``item``, comments skipped."""
    found: list[Node] = []
    sibling = item.prev_sibling
    while sibling is not None and (sibling.type == "attribute_item"
                                   or sibling.type in COMMENTS):
        if sibling.type == "attribute_item":
            found.append(sibling)
        sibling = sibling.prev_sibling
    return found


def _attribute_text(attribute_item: Node) -> str:
    inner = [c for c in attribute_item.named_children if c.type == "attribute"]
    return "".join(text(inner[0]).split()) if inner else ""


def is_test_attribute(body: str) -> bool:
    """``test``, ``tokio::test``, ``bench``, ``cfg(test)``, ``cfg(all(test, ...))``,
    ``cfg(not(test))`` (the text inside ``#[...]``, blanks removed)."""
    return bool(_TEST_ATTRIBUTE.match(body) or _CFG_TEST.match(body))


def is_test_marked(node: Node) -> bool:
    """Whether ``node``, an item or statement, carries a test attribute."""
    parent = node.parent
    if parent is None or parent.type not in _CONTAINERS or node.type in _INERT:
        return False
    return any(is_test_attribute(_attribute_text(a)) for a in attributes(node))


def is_test_only_file(root: Node) -> bool:
    """An inner ``#![cfg(test)]`` at the top of the file: all of it is test code."""
    for child in root.children:
        if child.type == "inner_attribute_item":
            inner = [c for c in child.named_children if c.type == "attribute"]
            if inner and _CFG_TEST.match("".join(text(inner[0]).split())):
                return True
    return False


def function_modifiers(function: Node) -> set[str]:
    """The keywords before ``fn``: ``const``, ``unsafe``, ``async``, ``extern``."""
    found: set[str] = set()
    for child in function.children:
        if child.type == "function_modifiers":
            found.update(c.type for c in child.children)
    return found


def is_compile_time_or_unsafe(function: Node) -> bool:
    """A ``const fn`` or ``unsafe fn``: its body is not runtime code."""
    return bool(function_modifiers(function) & {"const", "unsafe"})


def callee(call: Node) -> str:
    """A call's callee without whitespace: ``self.parse``, ``std::mem::take``."""
    function = call.child_by_field_name("function")
    if function is not None and function.type == "generic_function":
        function = function.child_by_field_name("function")
    return "".join(text(function).split()) if function is not None else ""


def macro_name(node: Node) -> str:
    """The name of a macro invocation, its path left out: ``log::debug!`` -> ``debug``."""
    macro = node.child_by_field_name("macro")
    return text(macro).split("::")[-1] if macro is not None else ""


def is_quiet_call(call: Node) -> bool:
    """A call to a logger (``log::logger().log(..)``, ``tracing::event(...)``)."""
    name = callee(call).replace("::", ".")
    return is_output_call(name, (), _LOGGERS, ("self",)) or \
        name.split(".")[0].lower() in _LOGGERS


def _in_excluded_field(node: Node) -> bool:
    """Whether ``node`` is a ``type``, ``pattern``, ``length``... of its parent."""
    parent = node.parent
    if parent is None:
        return False
    for i, child in enumerate(parent.children):
        if child == node:
            return parent.field_name_for_child(i) in _EXCLUDED_FIELDS
    return False


def is_excluded(node: Node, *, marks: bool = True) -> bool:
    """Whether ``node`` and everything under it is off limits (module docstring).
    Unreachable statements are too, but need their block to tell: see
    :func:`is_unreachable`. Without ``marks``, test attributes are left to the caller."""
    kind = node.type
    if kind in _ALWAYS_EXCLUDED:
        return True
    if kind == "function_item" and is_compile_time_or_unsafe(node):
        return True
    if kind == "call_expression" and is_quiet_call(node):
        return True
    return marks and is_test_marked(node)


def statement_expression(stmt: Node) -> Node | None:
    """The expression of an expression statement (``x;``), or the node itself."""
    if stmt.type == "expression_statement":
        parts = [c for c in stmt.named_children if c.type not in COMMENTS]
        return parts[0] if len(parts) == 1 else None
    return stmt


def terminates(stmt: Node) -> bool:
    """A ``return``, ``break``, ``continue`` or ``panic!()``-like statement: what follows
    it in its block does not run."""
    expression = statement_expression(stmt)
    if expression is None:
        return False
    if expression.type in TERMINATORS:
        return True
    return expression.type == "macro_invocation" and macro_name(expression) in _DIVERGING_MACROS


def reachable_children(node: Node) -> list[Node]:
    """A node's children; for a block, without the statements after its first
    terminator."""
    children = node.children
    if node.type not in BLOCKS:
        return children
    for i, child in enumerate(children):
        if child.is_named and terminates(child):
            return children[:i + 1] + [c for c in children[i + 1:] if not c.is_named]
    return children


def is_unreachable(node: Node) -> bool:
    """A statement after a terminator in its block."""
    parent = node.parent
    if parent is None or parent.type not in BLOCKS or not node.is_named:
        return False
    sibling = node.prev_named_sibling
    while sibling is not None:
        if terminates(sibling):
            return True
        sibling = sibling.prev_named_sibling
    return False


def is_off_limits(node: Node) -> bool:
    """Excluded (:func:`is_excluded`), in an excluded field, or unreachable."""
    return is_excluded(node) or _in_excluded_field(node) or is_unreachable(node)


def is_quiet_macro(node: Node) -> bool:
    """A macro invocation that only writes output or checks in debug builds:
    ``println!``, ``log::debug!``, ``dbg!``, ``debug_assert!``..."""
    return node.type == "macro_invocation" and macro_name(node) in _QUIET_MACROS


def _forbidden(node: Node) -> bool:
    if node.type == "macro_invocation":
        return is_quiet_macro(node)
    return node.type not in _INERT and is_excluded(node)


def holds_off_limits(node: Node) -> bool:
    """Whether deleting ``node`` would take code along that no mutation may touch: a
    logging or debug macro, a logging call, an ``unsafe`` block, test code, unreachable
    code. Types, patterns, comments and other macros (``format!``, ``panic!``) may go
    along."""
    return holds(node, _forbidden, reachable_children,
                 lambda n: n.type in _INERT or n.type == "match_pattern"
                 or (n.type == "macro_invocation" and not is_quiet_macro(n)))


def _unreachable_from(children: list[Node]) -> int:
    """The index of the first child of a block after its first terminator (the length
    when there is none)."""
    for i, child in enumerate(children):
        if child.is_named and terminates(child):
            return i + 1
    return len(children)


def runtime_nodes(root: Node) -> Iterator[Node]:
    """Every node of runtime code under ``root``, in source order."""
    if is_test_only_file(root):
        return
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, runtime = stack.pop()
        if node.type in NAMED_FUNCTIONS:  # its body only, nested in a body or not
            body = node.child_by_field_name("body")
            if body is not None:
                stack.append((body, True))
            continue
        if runtime:
            yield node
        children = node.children
        cut = _unreachable_from(children) if node.type in BLOCKS else len(children)
        container = node.type in _CONTAINERS
        marked = False
        pushed = []
        for i, child in enumerate(children):
            if container and child.type == "attribute_item":
                marked = marked or is_test_attribute(_attribute_text(child))
                continue
            if child.type in COMMENTS:
                continue
            test, marked = marked, marked and not child.is_named
            if test or (i >= cut and child.is_named) or is_excluded(child, marks=False):
                continue
            if runtime and node.field_name_for_child(i) in _EXCLUDED_FIELDS:
                continue
            pushed.append((child, runtime))
        stack.extend(reversed(pushed))


def in_runtime_code(node: Node, *, defaults: bool = False) -> bool:
    """Whether ``node`` is runtime code (checked from the node up to the root). Rust has
    no default values: ``defaults`` changes nothing."""
    for current in ancestors(node):
        if current.type == "source_file":
            return False
        if is_off_limits(current):
            return False
        if current.type in NAMED_FUNCTIONS:
            return current != node and contains(current.child_by_field_name("body"), node) \
                and _runtime_item(current)
    return False


def _runtime_item(function: Node) -> bool:
    """Whether the items around ``function`` are neither test code nor excluded, and its
    file is no test-only file."""
    for current in ancestors(function.parent):
        if current.type == "source_file":
            return not is_test_only_file(current)
        if is_excluded(current):
            return False
    return True


# --- names -----------------------------------------------------------------------------


def impl_type(impl: Node) -> str | None:
    """The type an ``impl`` block is for, without generics: ``impl<T> Foo<T>`` ->
    ``Foo``, ``impl fmt::Display for Bar`` -> ``Bar``."""
    kind = impl.child_by_field_name("type")
    while kind is not None and kind.type in ("generic_type", "reference_type"):
        kind = kind.child_by_field_name("type")
    if kind is None:
        return None
    return text(kind).split("::")[-1]


def enclosing_function(node: Node) -> str | None:
    """The path of the named function around ``node`` within its file: ``parse``,
    ``Parser::parse`` for a method (of an ``impl`` or a trait), ``outer::inner`` for a
    ``fn`` nested in another; None outside any function body."""
    names: list[str] = []
    inside = False
    for current in ancestors(node.parent):
        if current.type in NAMED_FUNCTIONS:
            name = current.child_by_field_name("name")
            if not names and not contains(current.child_by_field_name("body"), node):
                return None
            names.append(text(name) if name is not None else "")
            inside = True
        elif current.type == "impl_item":
            owner = impl_type(current)
            if owner:
                names.append(owner)
        elif current.type == "trait_item":
            name = current.child_by_field_name("name")
            if name is not None:
                names.append(text(name))
        elif current.type == "mod_item":
            name = current.child_by_field_name("name")
            if name is not None:
                names.append(text(name))
    return "::".join(reversed(names)) if inside else None


def function_of(node: Node) -> Node | None:
    """The innermost function or closure around ``node``."""
    return next((a for a in ancestors(node.parent) if a.type in FUNCTIONS), None)


def named_function_of(node: Node) -> Node | None:
    """The innermost named ``fn`` around ``node``."""
    return next((a for a in ancestors(node.parent) if a.type in NAMED_FUNCTIONS), None)
