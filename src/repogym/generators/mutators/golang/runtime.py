"""Which parts of a Go file are *runtime code* that a mutator may touch.

Runtime code is the body of a function or method (function literals inside it included)
and the initialiser of a package-level ``var`` (``var ErrBad = errors.New(...)``,
``var table = map[string]int{...}``). A bug there runs when the function is called, or
when the package is loaded, so tests can catch it. Package-level ``const``\\ s are
compile-time values (an array length or a shift may depend on one), so they are not.

Excluded wherever they appear (the whole subtree is skipped):

* everything type-level: types (in conversions, composite literals, ``make``...), type
  and ``const`` declarations (local ones too), parameter and result lists, type
  parameters and arguments, struct fields and their tags;
* ``package`` and ``import`` clauses, comments (``//go:`` directives included);
* output and logging: ``fmt.Print*``, ``print``, ``println``, the ``log`` package and
  loggers (``logger.*``, ``s.log.Debugf``, ``klog``, ``slog``...), and statements made of
  them (``defer log.Println(...)`` too);
* stubs: ``panic("not implemented")``, ``panic("unreachable")``;
* unreachable statements: those after a ``return``, ``goto``, ``break``, ``continue`` or
  ``panic(...)`` in the same statement list (a labelled statement, which a ``goto`` may
  reach, is kept).

A generated file (``// Code generated ... DO NOT EDIT.`` before the package clause) has
no runtime code: its fix is to regenerate it. Nor has a file built only on request
(``//go:build ignore``: a generator script), which no test runs. Test files (``_test.go``) are never offered
as runtime sources, and no change to one counts (see :mod:`.grammar`).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import named_children, text
from repogym.generators.mutators.golang.scopes import FUNCTIONS, NAMED_FUNCTIONS, is_package_level
from repogym.generators.mutators.shared import ancestors, contains, holds, in_body

TYPES = frozenset({
    "array_type", "implicit_length_array_type", "slice_type", "map_type", "pointer_type",
    "channel_type", "function_type", "struct_type", "interface_type", "type_identifier",
    "qualified_type", "generic_type", "parenthesized_type", "negated_type",
    "type_constraint", "type_elem", "type_arguments", "type_parameter_list",
    "field_declaration_list"})
"""Type nodes: no behaviour of their own."""
TYPE_LEVEL = TYPES | {"parameter_list", "type_declaration", "const_declaration"}
COMMENTS = frozenset({"comment"})
_ALWAYS_EXCLUDED = TYPE_LEVEL | COMMENTS | {"package_clause", "import_declaration"}
_INERT = TYPES | COMMENTS | {"parameter_list", "type_declaration"}
TERMINATORS = frozenset({"return_statement", "goto_statement", "break_statement",
                         "continue_statement"})
STATEMENT_LISTS = frozenset({"statement_list"})
_SURVIVORS = frozenset({"labeled_statement", "comment"})
_QUIET_CALLS = frozenset({"fmt.Print", "fmt.Printf", "fmt.Println", "print", "println"})
_LOGGERS = frozenset({"log", "logger", "logging", "klog", "glog", "slog", "logrus", "zap",
                      "zerolog"})
_STUB = re.compile(r"not\s+(yet\s+)?implemented|unimplemented|unreachable", re.IGNORECASE)
_GENERATED = re.compile(rb"^// Code generated .* DO NOT EDIT\.$", re.MULTILINE)
_IGNORED = re.compile(rb"^//go:build ignore\s*$|^// \+build ignore\s*$", re.MULTILINE)
_HOLDERS = frozenset({"expression_statement", "defer_statement", "go_statement"})


def is_test_file(path: str) -> bool:
    """Whether ``path`` is a Go test file (``x_test.go``)."""
    return PurePosixPath(path).name.endswith("_test.go")


def is_generated(root: Node) -> bool:
    """Whether the file says it is generated (``// Code generated ... DO NOT EDIT.`` in a
    comment before the package clause) or is built only on request (``//go:build
    ignore``): it has no runtime code."""
    for child in root.children:
        if child.type != "comment":
            return False
        if _GENERATED.search(child.text or b"") or _IGNORED.search(child.text or b""):
            return True
    return False


def callee(call: Node) -> str:
    """A call's callee without whitespace: ``s.log.Debugf``."""
    function = call.child_by_field_name("function")
    return "".join(text(function).split()) if function is not None else ""


def is_quiet_call(call: Node) -> bool:
    """A call that only writes output: ``fmt.Println``, ``log.Printf``, ``s.logger.Info``."""
    name = callee(call)
    if name in _QUIET_CALLS:
        return True
    parts = [p.lstrip("_").lower() for p in name.split(".")]
    return any(p in _LOGGERS for p in parts[:-1])


def panic_call(stmt: Node) -> Node | None:
    """The ``panic(...)`` call an expression statement is made of, if it is one."""
    parts = named_children(stmt) if stmt.type == "expression_statement" else []
    call = parts[0] if len(parts) == 1 and parts[0].type == "call_expression" else None
    return call if call is not None and callee(call) == "panic" else None


def _is_stub(stmt: Node) -> bool:
    """``panic("not implemented")``, ``panic("unreachable: " + x)``."""
    call = panic_call(stmt)
    args = call.child_by_field_name("arguments") if call is not None else None
    return args is not None and _STUB.search(text(args)) is not None


def is_excluded(node: Node) -> bool:
    """Whether ``node`` and everything under it is off limits (see the module docstring).

    Unreachable statements are off limits too, but need their list to tell: see
    :func:`is_off_limits`.
    """
    kind = node.type
    if kind in _ALWAYS_EXCLUDED:
        return True
    if kind == "call_expression":
        return is_quiet_call(node)
    if kind in _HOLDERS:
        parts = named_children(node)
        return _is_stub(node) or (len(parts) == 1 and parts[0].type == "call_expression"
                                  and is_quiet_call(parts[0]))
    return False


def terminates(stmt: Node) -> bool:
    """A ``return``, ``goto``, ``break``, ``continue`` or ``panic(...)`` statement: what
    follows it in its list does not run."""
    return stmt.type in TERMINATORS or panic_call(stmt) is not None


def reachable_children(node: Node) -> list[Node]:
    """A node's children; for a statement list, without the statements after its first
    terminator (labelled statements and comments stay)."""
    children = node.children
    if node.type not in STATEMENT_LISTS:
        return children
    for i, child in enumerate(children):
        if terminates(child):
            return children[:i + 1] + [c for c in children[i + 1:]
                                       if c.type in _SURVIVORS or not c.is_named]
    return children


def is_unreachable(node: Node) -> bool:
    """A statement after a terminator in its list (not a labelled statement)."""
    parent = node.parent
    if parent is None or parent.type not in STATEMENT_LISTS or node.type in _SURVIVORS:
        return False
    sibling = node.prev_named_sibling
    while sibling is not None:
        if terminates(sibling):
            return True
        sibling = sibling.prev_named_sibling
    return False


def is_off_limits(node: Node) -> bool:
    """Whether ``node`` is excluded (:func:`is_excluded`), unreachable, or a generated
    file."""
    if node.type == "source_file":
        return is_generated(node)
    return is_excluded(node) or is_unreachable(node)


def holds_off_limits(node: Node) -> bool:
    """Whether deleting ``node`` would take code along that no mutation may touch: a
    logging call, a stub or unreachable code. Types and comments may go along."""
    return holds(node, is_excluded, reachable_children, lambda n: n.type in _INERT)


def runtime_nodes(root: Node) -> Iterator[Node]:
    """Every node of runtime code under ``root``, in source order."""
    if is_generated(root):
        return
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, runtime = stack.pop()
        if is_excluded(node):
            continue
        if runtime:
            yield node
        elif node.type in NAMED_FUNCTIONS:
            body = node.child_by_field_name("body")
            if body is not None:
                stack.append((body, True))
            continue
        elif node.type == "var_spec" and is_package_level(node):
            value = node.child_by_field_name("value")
            if value is not None:
                stack.append((value, True))
            continue
        stack.extend((child, runtime) for child in reversed(reachable_children(node)))


def _verdict(scope: Node, node: Node) -> bool | None:
    """True for a named function whose body holds ``node``, or a package-level ``var``
    whose value does; False for their other parts; None for any other node."""
    if scope.type in NAMED_FUNCTIONS:
        return contains(scope.child_by_field_name("body"), node)
    if scope.type == "func_literal" and not contains(scope.child_by_field_name("body"), node):
        return False
    if scope.type == "var_spec" and is_package_level(scope):
        return contains(scope.child_by_field_name("value"), node)
    return False if scope.type == "source_file" else None


def in_runtime_code(node: Node, *, defaults: bool = False) -> bool:
    """Whether ``node`` is runtime code (checked from the node up to the root). Go has no
    default values: ``defaults`` changes nothing."""
    return in_body(node, is_off_limits, _verdict)


def in_function_body(node: Node) -> bool:
    """Whether ``node`` lies in the body of a function or function literal."""
    return any(a.type in FUNCTIONS and contains(a.child_by_field_name("body"), node)
               for a in ancestors(node.parent))


def enclosing_statement_list(node: Node) -> Node | None:
    """The statement list a statement belongs to, if its parent is one."""
    parent = node.parent
    return parent if parent is not None and parent.type in STATEMENT_LISTS else None
