"""Which parts of a JavaScript or TypeScript file are *runtime code* that a mutator may touch.

Runtime code is the body of a function that has a name (see
:mod:`~repogym.generators.mutators.ecmascript.scopes`): a function declaration or
expression, an arrow function, a method, getter, setter or class constructor. An
anonymous function (a callback) is runtime code when it sits in runtime code: an arrow
passed to ``.map()`` inside a named function belongs to that function. A bug there runs
only when the function is called, so tests can catch it and the judge can select the
tests that cover it. Module-level code, IIFEs, callbacks passed at module level, class
field initializers and ``static {}`` blocks run on import (or class definition): a bug
there breaks every import at once, which makes a blunt task, so they are left alone.

Excluded wherever they appear (the whole subtree is skipped):

* everything type-level: type annotations, type arguments and parameters, interfaces,
  type aliases, enums, ``declare`` statements, overload and abstract signatures, index
  signatures, ``implements`` clauses, and the type operand of ``as``/``satisfies``;
* parameter lists (see below), decorators, comments (JSDoc included), and bare string
  statements (``"use strict"`` and other directives);
* calls to ``console.*`` and loggers (``log.*``, ``logger.*``, ``this.logger.*``, ...),
  ``debug(...)``, ``deprecate(...)`` and ``process.emitWarning(...)``, and statements
  made of them;
* ``throw new Error("not implemented")``-style stubs (and ``NotImplementedError``);
* ``import`` statements and ``export { ... }`` clauses;
* unreachable statements: those after a ``return``, ``throw``, ``continue`` or ``break``
  in the same block or ``case`` (but not function declarations: they are hoisted).

A TypeScript declaration file (``.d.ts``) has no function body, so none of it is runtime
code (:func:`is_declaration_file` tells such a path).

Parameter default values are the one part of a signature a mutator may touch: they run
on every call that leaves the parameter out, so a mutator that says so
(``Mutator.edits_defaults``) may change them (see :func:`in_default_value`), unless the
function is a stub (its body does nothing) or is no runtime code itself.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import named_children, text
from repogym.generators.mutators.ecmascript.scopes import CLASSES, FUNCTIONS, function_name
from repogym.generators.mutators.shared import (
    ancestors,
    contains,
    follows_terminator,
    holds,
    in_body,
    is_output_call,
    reachable,
    runtime_walk,
)

TYPE_LEVEL = frozenset({
    "type_annotation", "type_predicate_annotation", "asserts_annotation",
    "opting_type_annotation", "omitting_type_annotation", "adding_type_annotation",
    "type_arguments", "type_parameters", "interface_declaration", "type_alias_declaration",
    "enum_declaration", "ambient_declaration", "abstract_method_signature",
    "function_signature", "method_signature", "index_signature", "call_signature",
    "construct_signature", "property_signature", "implements_clause"})
"""TypeScript nodes with no runtime behaviour (an enum has some, but is left out too)."""
COMMENTS = frozenset({"comment", "html_comment", "hash_bang_line"})
_ALWAYS_EXCLUDED = TYPE_LEVEL | COMMENTS | {"decorator", "formal_parameters",
                                             "import_statement", "export_clause"}
_INERT = TYPE_LEVEL | COMMENTS | {"formal_parameters"}
_TYPE_CASTS = frozenset({"as_expression", "satisfies_expression"})
_STRINGS = frozenset({"string", "template_string"})
_LOGGER_ROOTS = frozenset({"console", "logger", "log", "loggers", "logging"})
_QUIET_CALLS = frozenset({"debug", "deprecate", "process.emitWarning"})
_NOT_IMPLEMENTED = re.compile(r"not\s+(yet\s+)?implemented|unimplemented", re.IGNORECASE)
TERMINATORS = frozenset({"return_statement", "throw_statement", "continue_statement",
                         "break_statement"})
STATEMENT_LISTS = frozenset({"statement_block", "switch_case", "switch_default", "program"})
HOISTED = frozenset({"function_declaration", "generator_function_declaration"})
DECLARATIONS = HOISTED | (CLASSES - {"class"})  # a class expression is a value
_DEFAULT_HOLDERS = {"assignment_pattern": "right", "object_assignment_pattern": "right",
                    "required_parameter": "value"}
_PATTERNS = frozenset({"object_pattern", "array_pattern", "pair_pattern", "rest_pattern",
                       "assignment_pattern", "object_assignment_pattern",
                       "required_parameter", "optional_parameter"})
_DECLARATION_SUFFIXES = (".d.ts", ".d.mts", ".d.cts")
_CLASS_BODIES = frozenset({"class_body"})


def is_declaration_file(path: str) -> bool:
    """Whether ``path`` is a TypeScript declaration file (``x.d.ts``, ``x.d.mts``, ...)."""
    return PurePosixPath(path).name.endswith(_DECLARATION_SUFFIXES)


def is_type_operand(node: Node) -> bool:
    """The type after ``as`` or ``satisfies`` (``x as T``: ``T``)."""
    parent = node.parent
    if parent is None or parent.type not in _TYPE_CASTS:
        return False
    first = parent.named_children[0] if parent.named_children else None
    return node.is_named and first is not None and node != first


def _callee(call: Node) -> str:
    """A call's callee without whitespace or optional chaining: ``this.log.info``."""
    function = call.child_by_field_name("function")
    return "".join(text(function).split()).replace("?.", ".") if function else ""


def is_quiet_call(node: Node) -> bool:
    """A call to ``console.*``, a logger, ``debug``, ``deprecate`` or
    ``process.emitWarning``: output only, not behaviour."""
    return is_output_call(_callee(node), _QUIET_CALLS, _LOGGER_ROOTS, ("this",))


def _is_stub_throw(node: Node) -> bool:
    """``throw new Error("not implemented")`` (the first argument says so),
    ``throw new NotImplementedError()``."""
    parts = named_children(node)
    if not parts or parts[0].type not in ("new_expression", "call_expression"):
        return False
    made = parts[0]
    kind = made.child_by_field_name("constructor") or made.child_by_field_name("function")
    if kind is not None and text(kind).split(".")[-1] == "NotImplementedError":
        return True
    args = made.child_by_field_name("arguments")
    first = named_children(args)[0] if args is not None and named_children(args) else None
    return first is not None and _NOT_IMPLEMENTED.search(text(first)) is not None


def is_excluded(node: Node) -> bool:
    """Whether ``node`` and everything under it is off limits (see the module docstring).

    Unreachable statements are off limits too, but need their block to tell: see
    :func:`is_off_limits`.
    """
    kind = node.type
    if kind in _ALWAYS_EXCLUDED or is_type_operand(node):
        return True
    if kind == "call_expression":
        return is_quiet_call(node)
    if kind == "expression_statement":
        parts = named_children(node)
        return all(p.type in _STRINGS for p in parts) or any(is_excluded(p) for p in parts)
    if kind == "await_expression":
        return any(is_excluded(p) for p in named_children(node))
    if kind == "throw_statement":
        return _is_stub_throw(node)
    return False


def is_unreachable(node: Node) -> bool:
    """A statement after a return/throw/continue/break in its block (not a hoisted
    function declaration)."""
    if node.parent is None or node.parent.type not in STATEMENT_LISTS or node.type in HOISTED:
        return False
    return follows_terminator(node, TERMINATORS)


def is_off_limits(node: Node) -> bool:
    """Whether ``node`` is excluded (:func:`is_excluded`) or unreachable."""
    return is_excluded(node) or is_unreachable(node)


def reachable_children(node: Node) -> list[Node]:
    """A node's children; for a block, without the statements after its first
    return/throw/continue/break (function declarations, comments and the closing brace
    stay)."""
    return reachable(node, STATEMENT_LISTS, TERMINATORS, _survives)


def _survives(after_terminator: Node) -> bool:
    kind = after_terminator.type
    return not after_terminator.is_named or kind in HOISTED or kind in COMMENTS


def holds_off_limits(node: Node) -> bool:
    """Whether deleting ``node`` would take code with behaviour along that no mutation may
    touch: a logging call, a directive, a stub, unreachable code, a decorator, or a nested
    function or class declaration. Types, comments and parameter lists may go along."""
    return holds(node, _may_not_go, reachable_children, _may_go)


def _may_go(node: Node) -> bool:
    """Code with no behaviour: types, comments, parameter lists."""
    return node.type in _INERT or is_type_operand(node)


def _may_not_go(node: Node) -> bool:
    """A nested function or class declaration, or excluded code."""
    return node.type in DECLARATIONS or is_excluded(node)


def runtime_nodes(root: Node) -> Iterator[Node]:
    """Every node of runtime code under ``root``, in source order (fields and static
    blocks in a class body run when the class is defined: they are not)."""
    return runtime_walk(root, is_excluded, reachable_children, _body_runtime, _CLASS_BODIES)


def _body_runtime(node: Node, runtime: bool) -> bool | None:
    """For a function, whether its body is runtime code: a named function's is, and an
    anonymous one's (a callback) where the function itself is. None for any other node."""
    if node.type not in FUNCTIONS:
        return None
    return runtime or function_name(node) is not None


def in_runtime_code(node: Node, *, defaults: bool = False) -> bool:
    """Whether ``node`` lies in runtime code: checked from the node up to the root.

    With ``defaults``, a node inside a parameter's default value counts too (see
    :func:`in_default_value`).
    """
    return in_function_body(node) or (defaults and in_default_value(node))


def in_function_body(node: Node) -> bool:
    """Whether ``node`` is runtime code of a function body (:func:`runtime_nodes` agrees).

    Going up from the node, the first named function whose body holds it decides, unless
    a class body (a field initializer) or a function's signature comes first.
    """
    return in_body(node, is_off_limits, _scope_verdict)


def _scope_verdict(scope: Node, node: Node) -> bool | None:
    """False for a class body, or a function whose body does not hold ``node`` (it is in
    the signature); True for a named function whose body does. None otherwise."""
    if scope.type == "class_body":
        return False
    if scope.type in FUNCTIONS:
        if not contains(scope.child_by_field_name("body"), node):
            return False
        if function_name(scope) is not None:
            return True
    return None


def _default_holder(node: Node) -> Node | None:
    """The parameter or destructuring default whose value holds ``node`` (the innermost),
    or None if ``node`` is in none, or in an excluded part of one."""
    current: Node | None = node
    while current is not None and current.type not in FUNCTIONS:
        if current.type != "formal_parameters" and is_excluded(current):
            return None
        field = _DEFAULT_HOLDERS.get(current.type)
        if field is not None and current != node and contains(
                current.child_by_field_name(field), node):
            return current
        current = current.parent
    return None


def in_default_value(node: Node) -> bool:
    """Whether ``node`` lies in a parameter's default value of a live function
    (:func:`is_live_function`), destructuring defaults in the parameter list included."""
    current = _default_holder(node)
    while current is not None and current.type in _PATTERNS:
        current = current.parent
    if current is None or current.type != "formal_parameters":
        return False
    function = current.parent
    return function is not None and function.type in FUNCTIONS and is_live_function(function)


def is_live_function(function: Node) -> bool:
    """A function whose defaults matter: its body is runtime code, nothing around it is
    off limits, and it is not a stub (a body that does nothing)."""
    if any(is_off_limits(a) for a in ancestors(function)):
        return False
    body = function.child_by_field_name("body")
    if body is None or _is_stub(body):
        return False
    return function_name(function) is not None or in_function_body(function)


def _is_stub(body: Node) -> bool:
    """A block of nothing live: empty, or only comments, directives, logging and stubs."""
    if body.type != "statement_block":
        return False
    return all(s.type == "empty_statement" or is_off_limits(s) for s in named_children(body))


def enclosing_statement_list(node: Node) -> Node | None:
    """The block (or ``case``) a statement belongs to, if its parent is one."""
    parent = node.parent
    return parent if parent is not None and parent.type in STATEMENT_LISTS else None
