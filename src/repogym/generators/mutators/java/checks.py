"""What the ``java`` family looks at to propose only mutants that still compile.

javac rejects what a Python mutant would leave running, and a mutant that does not
compile fails every test (the judge rejects it). A full compile per mutant is too slow for
thousands of candidates, so each mutator checks, from the syntax tree, the rules its edit
could break, and when the file does not tell, it proposes nothing:

* **types** (:func:`declared_type`, :func:`is_numeric`): ``-`` does not apply to
  strings, two arguments trade places only when they have one type, ``return null``
  only where a reference is returned;
* **definite assignment** (:func:`assigns_blank`, :func:`blank_locals`,
  :func:`condition_is_plain`): a variable declared without a value must be assigned
  before it is read, a ``final`` one at most once, and ``&&``/``||``/``!`` decide what a
  condition assigns when it is true or false; a pattern variable (``o instanceof Foo f``)
  is in scope only where its condition holds;
* **exceptions** (:func:`catch_needs_calls`): a ``catch`` of a checked exception whose
  ``try`` can no longer throw it does not compile, so code holding calls is not taken
  out of such a ``try``;
* **reachability** (:func:`completes_abruptly`, :func:`endless_loop`): a method that
  returns a value must not be able to run off its end, and ``while (false)``'s body is
  unreachable.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import named_children, text
from repogym.generators.mutators.java.scopes import (
    CLASSES,
    FUNCTIONS,
    LOOPS,
    body_statements,
    named_function_of,
)
from repogym.generators.mutators.shared import ancestors, contains, named_descendants

NUMERIC_TYPES = frozenset({"int", "long", "short", "byte", "char", "float", "double",
                           "Integer", "Long", "Short", "Byte", "Character", "Float", "Double"})
_NUMERIC_METHODS = frozenset({"length", "size", "indexOf", "lastIndexOf", "ordinal",
                              "compareTo", "compareToIgnoreCase", "intValue", "longValue",
                              "doubleValue", "floatValue", "shortValue", "byteValue",
                              "charAt", "codePointAt", "digit", "bitCount",
                              "numberOfLeadingZeros", "numberOfTrailingZeros",
                              "getNumericValue", "signum"})
_MATH = frozenset({"Math", "StrictMath", "Integer", "Long", "Short", "Byte", "Character",
                   "Float", "Double"})
_NUMERIC_OPERATORS = frozenset({"-", "*", "/", "%", "<<", ">>", ">>>"})
_LITERAL_KINDS = {"string_literal": "String", "text_block": "String",
                  "character_literal": "char", "true": "boolean", "false": "boolean",
                  "null_literal": "null"}
_INTEGERS = frozenset({"decimal_integer_literal", "hex_integer_literal",
                       "octal_integer_literal", "binary_integer_literal"})
_FLOATS = frozenset({"decimal_floating_point_literal", "hex_floating_point_literal"})
UNCHECKED = frozenset({
    "Exception", "Throwable", "RuntimeException", "Error", "IllegalArgumentException",
    "IllegalStateException", "NullPointerException", "NumberFormatException",
    "ClassCastException", "IndexOutOfBoundsException", "ArrayIndexOutOfBoundsException",
    "StringIndexOutOfBoundsException", "UnsupportedOperationException",
    "ArithmeticException", "NoSuchElementException", "ConcurrentModificationException",
    "UncheckedIOException", "SecurityException", "AssertionError", "OutOfMemoryError",
    "StackOverflowError", "LinkageError", "NoClassDefFoundError",
    "ExceptionInInitializerError", "ArrayStoreException", "NegativeArraySizeException",
    "IllegalMonitorStateException", "DateTimeException", "DateTimeParseException",
    "PatternSyntaxException", "InputMismatchException", "EmptyStackException",
    "MissingResourceException", "IllformedLocaleException", "UnsupportedCharsetException",
    "IllegalCharsetNameException", "CompletionException", "CancellationException",
    "VirtualMachineError", "InternalError", "UnknownError", "ClassFormatError"})
"""Exception types a ``catch`` may name whatever its ``try`` throws (unchecked ones, and
``Exception`` and ``Throwable``, which cover them)."""
_RUNTIME_BASES = re.compile(r"\b(RuntimeException|Error|IllegalArgumentException|"
                            r"IllegalStateException|UnsupportedOperationException)\b")
_CALLS = frozenset({"method_invocation", "object_creation_expression", "throw_statement",
                    "explicit_constructor_invocation"})
_TRIES = frozenset({"try_statement", "try_with_resources_statement"})
_LOGICAL = frozenset({"&&", "||", "!", "?"})


def root_of(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


def _type_text(node: Node | None) -> str | None:
    return "".join(text(node).split()) if node is not None else None


def _declarator_type(declarator: Node) -> str | None:
    """The type of a ``variable_declarator``'s name (``int[] a`` or ``int a[]``)."""
    holder = declarator.parent
    kind = _type_text(holder.child_by_field_name("type")) if holder is not None else None
    if kind is None or kind == "var":
        return None
    dims = declarator.child_by_field_name("dimensions")
    return kind + text(dims).replace(" ", "") if dims is not None else kind


def _declarations(scope: Node) -> Iterator[tuple[str, str | None, Node]]:
    """``(name, type, declaring node)`` for every local, parameter, pattern or field
    declared under ``scope`` (a method, or a class for its fields)."""
    for node in named_descendants(scope):
        kind = node.type
        if kind == "variable_declarator":
            name = node.child_by_field_name("name")
            if name is not None:
                yield text(name), _declarator_type(node), node
        elif kind in ("formal_parameter", "catch_formal_parameter", "resource",
                      "enhanced_for_statement"):
            name = node.child_by_field_name("name")
            declared = node.child_by_field_name("type")
            if name is not None:
                shown = _type_text(declared)
                yield text(name), None if shown == "var" or kind == "catch_formal_parameter" \
                    else shown, node
        elif kind == "spread_parameter":
            parts = named_children(node)
            declarator = next((p for p in parts if p.type == "variable_declarator"), None)
            name = declarator.child_by_field_name("name") if declarator is not None else None
            element = _type_text(parts[0]) if parts and parts[0].type != "modifiers" else None
            if name is not None:
                yield text(name), f"{element}[]" if element is not None else None, node
        elif kind == "instanceof_expression":
            name = node.child_by_field_name("name")
            if name is not None:
                yield text(name), _type_text(node.child_by_field_name("right")), node
        elif kind == "inferred_parameters" or (kind == "identifier" and node.parent is not None
                                               and node.parent.type == "lambda_expression"):
            for ident in [node] if kind == "identifier" else named_children(node):
                yield text(ident), None, ident


@lru_cache(maxsize=64)
def _fields(root: Node) -> dict[str, str | None]:
    """Every field of the file by name (None: declared twice with different types)."""
    found: dict[str, str | None] = {}
    for node in named_descendants(root):
        if node.type == "field_declaration":
            for declarator in named_children(node):
                name = declarator.child_by_field_name("name") \
                    if declarator.type == "variable_declarator" else None
                if name is not None:
                    kind = _declarator_type(declarator)
                    found[text(name)] = kind if found.get(text(name), kind) == kind else None
        elif node.type == "record_declaration":
            params = node.child_by_field_name("parameters")
            for param in named_children(params) if params is not None else []:
                name = param.child_by_field_name("name")
                if name is not None:
                    found[text(name)] = _type_text(param.child_by_field_name("type"))
    return found


def declared_type(name: str, where: Node) -> str | None:
    """The type of the variable ``name`` read at ``where``, as far as the file shows: the
    one type it is declared with in the innermost method around ``where`` that declares it
    (locals, parameters, patterns), else in the file's fields; None when unknown or
    declared with several."""
    function = named_function_of(where)
    while function is not None:  # an anonymous class's method, then the one around it
        types = _scope_types(function).get(name)
        if types:
            return next(iter(types)) if len(types) == 1 else None
        function = named_function_of(function)
    return _fields(root_of(where)).get(name)


@lru_cache(maxsize=256)
def _scope_types(scope: Node) -> dict[str, set[str | None]]:
    """The types every name under ``scope`` is declared with."""
    found: dict[str, set[str | None]] = {}
    for name, kind, _ in _declarations(scope):
        found.setdefault(name, set()).add(kind)
    return found


def literal_type(node: Node) -> str | None:
    """A literal's type: ``int``, ``long``, ``double``, ``float``, ``String``, ``char``,
    ``boolean``, ``null``; None for anything else."""
    if node.type in _LITERAL_KINDS:
        return _LITERAL_KINDS[node.type]
    if node.type in _INTEGERS:
        return "long" if text(node)[-1] in "lL" else "int"
    if node.type in _FLOATS:
        return "float" if text(node)[-1] in "fF" else "double"
    return None


def type_of(node: Node) -> str | None:
    """An expression's type as far as the file shows: a literal's, a variable's or a
    ``this.field``'s declared type, a cast's; None otherwise."""
    node = unparenthesised(node)
    found = literal_type(node)
    if found is not None:
        return found
    if node.type == "identifier":
        return declared_type(text(node), node)
    if node.type == "field_access":
        target, field = node.child_by_field_name("object"), node.child_by_field_name("field")
        if target is not None and field is not None and target.type == "this":
            return _fields(root_of(node)).get(text(field))
    if node.type == "cast_expression":
        return _type_text(node.child_by_field_name("type"))
    return None


def unparenthesised(node: Node) -> Node:
    """The expression inside parentheses: ``((x))`` -> ``x``."""
    while node.type == "parenthesized_expression" and len(named_children(node)) == 1:
        node = named_children(node)[0]
    return node


def operator(node: Node) -> str:
    op = node.child_by_field_name("operator")
    return text(op) if op is not None else ""


def is_numeric(node: Node) -> bool:
    """Whether an expression surely has a numeric (or ``char``) type: what ``+`` may be
    swapped on without meeting a string."""
    node = unparenthesised(node)
    kind = node.type
    if kind in _INTEGERS or kind in _FLOATS or kind == "character_literal":
        return True
    if kind == "update_expression":
        return True
    if kind == "unary_expression":
        operand = node.child_by_field_name("operand")
        return operator(node) in ("-", "+", "~") and operand is not None and is_numeric(operand)
    if kind == "binary_expression":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if operator(node) in _NUMERIC_OPERATORS:
            return True
        return operator(node) in ("+", "&", "|", "^") and left is not None \
            and right is not None and is_numeric(left) and is_numeric(right)
    if kind == "ternary_expression":
        a, b = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
        return a is not None and b is not None and is_numeric(a) and is_numeric(b)
    if kind == "method_invocation":
        name = node.child_by_field_name("name")
        target = node.child_by_field_name("object")
        called = text(name) if name is not None else ""
        if called in _NUMERIC_METHODS:
            return True
        return target is not None and text(target) in _MATH and called in (
            "max", "min", "abs", "round", "floorDiv", "floorMod", "parseInt", "parseLong",
            "toIntExact", "addExact", "multiplyExact", "subtractExact", "compare")
    if kind == "field_access":
        field = node.child_by_field_name("field")
        if field is not None and text(field) == "length":
            return True
    if kind == "array_access":
        array = node.child_by_field_name("array")
        kind_of = type_of(array) if array is not None else None
        return kind_of is not None and kind_of.endswith("[]") \
            and kind_of[:-2] in NUMERIC_TYPES
    return type_of(node) in NUMERIC_TYPES


# --- definite assignment ----------------------------------------------------------------


def _assigned_name(target: Node) -> str | None:
    """The variable or field an assignment writes: ``x``, ``this.x``."""
    target = unparenthesised(target)
    if target.type == "identifier":
        return text(target)
    if target.type == "field_access":
        obj, field = target.child_by_field_name("object"), target.child_by_field_name("field")
        if obj is not None and field is not None and obj.type == "this":
            return text(field)
    return None


def blank_locals(function: Node) -> set[str]:
    """Locals declared without a value in ``function``'s body (lambdas and local classes
    included): they must be assigned before every read."""
    body = function.child_by_field_name("body")
    names = set()
    for node in named_descendants(body) if body is not None else []:
        if node.type == "variable_declarator" and node.child_by_field_name("value") is None \
                and node.parent is not None and node.parent.type == "local_variable_declaration":
            name = node.child_by_field_name("name")
            if name is not None:
                names.add(text(name))
    return names


@lru_cache(maxsize=64)
def final_fields(root: Node) -> frozenset[str]:
    """Fields declared ``final`` anywhere in the file (a constructor must assign the blank
    ones exactly once)."""
    names = set()
    for node in named_descendants(root):
        if node.type == "field_declaration" and "final" in _modifiers(node):
            for declarator in named_children(node):
                name = declarator.child_by_field_name("name") \
                    if declarator.type == "variable_declarator" else None
                if name is not None:
                    names.add(text(name))
    return frozenset(names)


def _modifiers(node: Node) -> set[str]:
    modifiers = next((c for c in node.children if c.type == "modifiers"), None)
    return {c.type for c in modifiers.children} if modifiers is not None else set()


def is_final_local(declarator: Node) -> bool:
    """Whether a ``variable_declarator`` declares a ``final`` local (a constant variable,
    when its value is constant)."""
    holder = declarator.parent
    return holder is not None and holder.type == "local_variable_declaration" \
        and "final" in _modifiers(holder)


def assigns_blank(node: Node) -> bool:
    """Whether ``node`` holds an assignment (``=``) to a local declared without a value or
    to a ``final`` field: taking it away may leave a read before any assignment."""
    writes = [n for n in named_descendants(node) if n.type == "assignment_expression"
              and operator(n) == "="]
    if not writes:
        return False
    function = named_function_of(node)
    blank = blank_locals(function) if function is not None else set()
    finals = final_fields(root_of(node))
    for write in writes:
        left = write.child_by_field_name("left")
        name = _assigned_name(left) if left is not None else None
        if name is not None and (name in blank or name in finals):
            return True
    return False


def has_pattern(node: Node) -> bool:
    """Whether ``node`` declares a pattern variable (``o instanceof Foo f``, a record
    pattern): it is in scope only where its condition holds."""
    return any(n.type in ("record_pattern", "type_pattern") or (
        n.type == "instanceof_expression" and (n.child_by_field_name("name") is not None
                                               or n.child_by_field_name("pattern") is not None))
        for n in named_descendants(node))


def condition_is_plain(cond: Node) -> bool:
    """Whether what a condition assigns, and the pattern variables it declares, do not
    depend on its value: no pattern, and no assignment under ``&&``, ``||``, ``!`` or
    ``?:`` (``(n = read()) < 0`` is plain). Negating a condition that is not, or trading
    the branches it guards, may leave a variable unassigned, or out of scope, where it is
    read."""
    if has_pattern(cond):
        return False
    nodes = list(named_descendants(cond))
    if not any(n.type == "assignment_expression" for n in nodes):
        return True
    return not any(n.type == "ternary_expression" or operator(n) in _LOGICAL
                   for n in nodes if n.type in ("binary_expression", "unary_expression",
                                                "ternary_expression"))


def is_constant(node: Node) -> bool:
    """An expression of literals only (``true``, ``1 < 2``): as a loop condition it
    decides whether the loop's body or the code after it is reachable."""
    node = unparenthesised(node)
    if literal_type(node) is not None:
        return True
    return node.type in ("binary_expression", "unary_expression") and all(
        is_constant(c) for c in named_children(node))


# --- exceptions -------------------------------------------------------------------------


def _checked_types(try_node: Node) -> bool:
    """Whether a ``try`` has a ``catch`` of an exception that may be checked."""
    unchecked = UNCHECKED | _runtime_exceptions(root_of(try_node))
    for clause in named_children(try_node):
        if clause.type != "catch_clause":
            continue
        for param in named_children(clause):
            if param.type != "catch_formal_parameter":
                continue
            for catch_type in (c for c in named_children(param) if c.type == "catch_type"):
                for kind in named_children(catch_type):
                    if text(kind).rsplit(".", 1)[-1] not in unchecked:
                        return True
    return False


@lru_cache(maxsize=64)
def _runtime_exceptions(root: Node) -> frozenset[str]:
    """Classes the file declares as unchecked exceptions (``extends RuntimeException``)."""
    names = set()
    for node in named_descendants(root):
        superclass = node.child_by_field_name("superclass") \
            if node.type == "class_declaration" else None
        name = node.child_by_field_name("name")
        if superclass is not None and name is not None \
                and _RUNTIME_BASES.search(text(superclass)):
            names.add(text(name))
    return frozenset(names)


def catch_needs_calls(node: Node) -> bool:
    """Whether ``node`` holds a call (or ``new``, ``throw``) and lies in the body of a
    ``try`` (of its own function) that catches a checked exception: without the call, that
    ``catch`` may catch what nothing throws, which does not compile."""
    if not any(n.type in _CALLS for n in named_descendants(node)):
        return False
    for current in ancestors(node.parent):
        if current.type in FUNCTIONS or current.type in CLASSES:
            return False
        if current.type in _TRIES and contains(current.child_by_field_name("body"), node) \
                and _checked_types(current):
            return True
    return False


# --- reachability -----------------------------------------------------------------------


def completes_abruptly(stmt: Node | None) -> bool:
    """A ``return`` or ``throw``: what ends a value-returning body for sure."""
    return stmt is not None and stmt.type in ("return_statement", "throw_statement")


def ends_in_return(function: Node) -> bool:
    """Whether the function's body ends in a ``return`` or ``throw`` of its own."""
    statements = body_statements(function.child_by_field_name("body"))
    return bool(statements) and completes_abruptly(statements[-1])


def loop_condition(loop: Node) -> Node | None:
    """A loop's condition (None for ``for (;;)`` and a for-each)."""
    if loop.type == "enhanced_for_statement":
        return None
    return loop.child_by_field_name("condition")


def is_constant_condition(cond: Node) -> bool:
    """A condition that may be a constant expression: literals and ``CONSTANT_CASE``
    names (``while (RUNNING)``: a ``static final`` field is a constant variable)."""
    cond = unparenthesised(cond)
    if literal_type(cond) is not None:
        return True
    if cond.type in ("identifier", "field_access"):
        name = text(cond).rsplit(".", 1)[-1]
        return name.isupper() or (name.replace("_", "").isupper() and "_" in name)
    return cond.type in ("binary_expression", "unary_expression") and all(
        is_constant_condition(c) for c in named_children(cond))


def endless_loop(loop: Node) -> bool:
    """``while (true)``, ``for (;;)``, ``do ... while (true)``: left only by ``break``,
    ``return`` or ``throw``."""
    if loop.type == "enhanced_for_statement":
        return False
    cond = loop_condition(loop)
    return cond is None or is_constant(cond)


def in_loop_condition(node: Node) -> bool:
    """Whether ``node`` lies in the condition of a loop."""
    for current in ancestors(node.parent):
        if current.type in FUNCTIONS:
            return False
        if current.type in LOOPS and contains(loop_condition(current), node):
            return True
    return False


def loop_names(node: Node) -> set[str]:
    """The names read by the conditions of the loops around ``node`` (in its function):
    a statement writing one may be what ends the loop."""
    names: set[str] = set()
    for current in ancestors(node.parent):
        if current.type in FUNCTIONS:
            break
        if current.type in LOOPS:
            cond = loop_condition(current)
            if current.type == "for_statement":
                names.update(text(n) for u in current.children_by_field_name("update")
                             for n in named_descendants(u) if n.type == "identifier")
            names.update(text(n) for n in named_descendants(cond) if n.type == "identifier"
                         ) if cond is not None else None
    return names


def written_names(node: Node) -> set[str]:
    """The variables and fields ``node`` assigns or increments."""
    names = set()
    for current in named_descendants(node):
        target = None
        if current.type == "assignment_expression":
            target = current.child_by_field_name("left")
        elif current.type == "update_expression":
            target = next(iter(named_children(current)), None)
        elif current.type == "method_invocation":
            target = current.child_by_field_name("object")  # it.next(), queue.poll()
        name = _assigned_name(target) if target is not None else None
        if name is not None:
            names.add(name)
    return names
