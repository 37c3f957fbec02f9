"""A static guard against mutations that stop a Rust crate from building, and the few
types the mutators need, read from the file.

A full type check (``cargo check``) takes seconds a mutant, too slow for thousands of
candidates, so the mutators that take code away or depend on types ask this module
what the syntax tree tells:

* **block types**: removing a statement may change the type of its block. The last
  statement of a block without a tail expression may be what makes it diverge (``return
  x;``, ``process::exit(1);``), which a block of any type may do; :func:`removable` lets
  it go only where the block's value is unit anyway (:func:`unit_block`: the body of a
  function returning ``()``, a loop body, the branches of an ``if``/``match`` whose value
  is dropped), and never takes the tail expression itself from a block that needs it;
* **locals**: a removed or replaced piece of code must not hold the last use of a local
  variable or parameter (rustc's ``unused`` warnings are errors where a crate denies
  warnings, ``#![cfg_attr(test, deny(warnings))]``), the only mutation of a ``let mut``
  (``unused_mut``), the assignment a ``let x;`` declared without value waits for (E0381),
  nor a use that fixes the type of a local made by a generic constructor
  (``let mut v = Vec::new(); v.push(1u8);``: E0282 once the push is gone);
* **numeric operands**: ``+``↔``-`` and ``*``↔``/`` build on numbers, not on
  ``String + &str`` or ``Instant - Instant``; :func:`is_numeric` says when the file shows
  a number (literals, casts, ``.len()``, typed parameters, locals and struct fields).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import text
from repogym.generators.mutators.rust.runtime import (
    COMMENTS,
    FUNCTIONS,
    LOOPS,
    TERMINATORS,
    function_of,
    is_quiet_macro,
    macro_name,
    terminates,
)
from repogym.generators.mutators.shared import ancestors

NUMERIC_TYPES = frozenset({"i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32",
                           "u64", "u128", "usize", "f32", "f64"})
_NUMERIC_METHODS = frozenset({
    "len", "count", "capacity", "count_ones", "count_zeros", "leading_zeros",
    "trailing_zeros", "as_secs", "as_millis", "as_micros", "as_nanos", "subsec_nanos",
    "subsec_millis", "subsec_micros", "wrapping_add", "wrapping_sub", "wrapping_mul",
    "saturating_add", "saturating_sub", "saturating_mul", "pow", "abs", "len_utf8",
    "to_digit_value"})
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"})
_GENERIC_VALUE = re.compile(
    r"(?:^|::)(?:new|with_capacity|default)\s*\(|^vec!\s*[\[(]\s*[\])]$|^None$"
    r"|\.(?:collect|into|parse|sum|product)\s*(?:::<\s*_?\s*>)?\s*\(\s*\)$")
_CONCRETE = re.compile(r"^(?:String|PathBuf|OsString)::(?:new|with_capacity)\s*\(")
_DIVERGING = frozenset({"panic", "unreachable", "todo", "unimplemented"})
_FORMAT_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)[}:]")
_BINDING_PARENTS = frozenset({"let_declaration", "parameter", "for_expression", "let_condition",
                              "closure_parameters", "match_pattern"})


# --- block types -----------------------------------------------------------------------


def block_items(block: Node) -> list[Node]:
    """A block's statements and tail expression, comments and attributes left out."""
    return [c for c in block.named_children
            if c.type not in COMMENTS and c.type != "attribute_item" and c.type != "label"]


def has_semicolon(stmt: Node) -> bool:
    """Whether an expression statement ends with ``;``."""
    return stmt.type == "expression_statement" and any(
        c.type == ";" for c in stmt.children)


def tail(block: Node) -> Node | None:
    """The tail expression of a block (what it evaluates to), or None: its last item
    when that is an expression, or a block-like expression statement without ``;``."""
    items = block_items(block)
    if not items:
        return None
    last = items[-1]
    if last.type == "expression_statement":
        return last if not has_semicolon(last) else None
    if last.type in ("let_declaration", "empty_statement") or last.type.endswith("_item"):
        return None
    return last


def _outermost_if(node: Node) -> Node:
    """The ``if`` an ``else if`` belongs to."""
    while node.parent is not None and node.parent.type == "else_clause" \
            and node.parent.parent is not None and node.parent.parent.type == "if_expression":
        node = node.parent.parent
    return node


def unit_position(expression: Node) -> bool:
    """Whether a block-like expression (``if``, ``match``, a block) stands where its
    value must be ``()``: a statement without ``;`` that is not its block's tail, or the
    tail of a unit block."""
    stmt = expression.parent
    if stmt is None or stmt.type != "expression_statement" or has_semicolon(stmt):
        return False
    block = stmt.parent
    if block is None or block.type != "block":
        return False
    return tail(block) != stmt or unit_block(block)


def _returns_unit(function: Node) -> bool:
    result = function.child_by_field_name("return_type")
    return result is None or "".join(text(result).split()) == "()"


def unit_block(block: Node) -> bool:
    """Whether the value of ``block`` is ``()`` wherever it comes from: the body of a
    function returning ``()``, a loop body, an ``if`` branch or ``match`` arm whose
    ``if``/``match`` is in :func:`unit_position`, a bare block there."""
    parent = block.parent
    if parent is None:
        return False
    kind = parent.type
    if kind == "function_item":
        return parent.child_by_field_name("body") == block and _returns_unit(parent)
    if kind == "closure_expression":
        result = parent.child_by_field_name("return_type")
        return result is not None and "".join(text(result).split()) == "()"
    if kind in LOOPS:
        return parent.child_by_field_name("body") == block
    if kind == "if_expression":
        return unit_position(_outermost_if(parent))
    if kind == "else_clause" and parent.parent is not None:
        return unit_position(_outermost_if(parent.parent))
    if kind == "match_arm":
        match = parent.parent.parent if parent.parent is not None else None
        return match is not None and match.type == "match_expression" and unit_position(match)
    if kind == "expression_statement":
        return unit_position(block)
    return False


def diverges(node: Node) -> bool:
    """Whether ``node`` holds a ``return``, ``break``, ``continue`` or ``panic!()``-like
    macro (outside closures and nested functions)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in TERMINATORS:
            return True
        if current.type == "macro_invocation" and macro_name(current) in _DIVERGING:
            return True
        if current.type in FUNCTIONS and current != node:
            continue
        stack.extend(current.named_children)
    return False


def removable(stmt: Node) -> bool:
    """Whether the statement (or tail expression) ``stmt`` can leave its block without
    changing the block's type (module docstring)."""
    block = stmt.parent
    if block is None or block.type != "block":
        return False
    items = block_items(block)
    if stmt not in items:
        return False
    end = tail(block)
    if end == stmt or (end is None and items[-1] == stmt):
        return unit_block(block)
    if end is None and not unit_block(block):
        return not diverges(stmt)
    return True


def loops_forever_without(node: Node) -> bool:
    """Whether ``node`` holds a ``break`` or ``return`` out of a ``loop { ... }`` around
    it (its only way out, maybe: removing it may hang the tests)."""
    loop = next((a for a in ancestors(node.parent)
                 if a.type in LOOPS or a.type in FUNCTIONS), None)
    if loop is None or loop.type != "loop_expression":
        return False
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("break_expression", "return_expression"):
            return True
        if current.type in LOOPS or current.type in FUNCTIONS:
            continue
        stack.extend(current.named_children)
    return False


def breaks_with_value(node: Node) -> bool:
    """Whether ``node`` holds a ``break value`` (the value of a ``loop``)."""
    return any(n.type == "break_expression" and any(
        c.type not in ("label", "break") and c.is_named for c in n.children)
        for n in _descendants(node))


# --- locals ----------------------------------------------------------------------------


def _descendants(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _binding_identifiers(pattern: Node) -> Iterator[Node]:
    """The names a pattern binds (not the paths of enum variants in it)."""
    for node in _descendants(pattern):
        if node.type != "identifier":
            continue
        parent = node.parent
        if parent is not None and parent.type in ("scoped_identifier", "tuple_struct_pattern",
                                                  "struct_pattern") and \
                parent.child_by_field_name("type") == node:
            continue
        if parent is not None and parent.type == "scoped_identifier":
            continue
        if text(node)[:1].isupper():
            continue  # a variant or constant (None, MAX)
        yield node


_FACTS: dict[tuple[int, int, bytes], _Facts] = {}


def _function_facts(function: Node) -> _Facts:
    """The facts of a function, once per function text (every site asks)."""
    key = (function.start_byte, function.end_byte, function.text or b"")
    found = _FACTS.get(key)
    if found is None:
        if len(_FACTS) > 256:
            _FACTS.clear()
        found = _FACTS[key] = _Facts(function)
    return found


class _Facts:
    """The locals of a function: where they are bound, used and maybe mutated."""

    def __init__(self, function: Node) -> None:
        self.bindings: dict[str, list[Node]] = {}
        self.lets: dict[str, list[Node]] = {}
        self.uses: dict[str, list[int]] = {}
        self.mutations: dict[str, list[int]] = {}
        macros: list[Node] = []
        for node in _descendants(function):
            kind = node.type
            if kind == "let_declaration":
                pattern = node.child_by_field_name("pattern")
                for name in _binding_identifiers(pattern) if pattern is not None else ():
                    self.bindings.setdefault(text(name), []).append(name)
                    self.lets.setdefault(text(name), []).append(node)
            elif kind in ("parameter", "for_expression", "let_condition", "match_arm"):
                pattern = node.child_by_field_name("pattern")
                for name in _binding_identifiers(pattern) if pattern is not None else ():
                    self.bindings.setdefault(text(name), []).append(name)
            elif kind == "closure_parameters":
                for name in _binding_identifiers(node):
                    self.bindings.setdefault(text(name), []).append(name)
            elif kind in ("assignment_expression", "compound_assignment_expr"):
                left = node.child_by_field_name("left")
                target = _root_name(left) if left is not None else None
                if target is not None:
                    self.mutations.setdefault(target, []).append(node.start_byte)
            elif kind == "reference_expression" and any(
                    c.type == "mutable_specifier" for c in node.children):
                value = node.child_by_field_name("value")
                target = _root_name(value) if value is not None else None
                if target is not None:
                    self.mutations.setdefault(target, []).append(node.start_byte)
            elif kind == "field_expression":
                value = node.child_by_field_name("value")
                if value is not None and value.type == "identifier":
                    self.mutations.setdefault(text(value), []).append(node.start_byte)
            elif kind == "macro_invocation" and not is_quiet_macro(node):
                macros.append(node)
            elif kind == "identifier":
                self.uses.setdefault(text(node), []).append(node.start_byte)
            elif kind == "string_content" and node.parent is not None \
                    and node.parent.parent is not None \
                    and node.parent.parent.type == "token_tree":
                for found in _FORMAT_NAME.finditer(text(node)):
                    self.uses.setdefault(found.group(1), []).append(node.start_byte)
        self.binding_bytes = {name: {n.start_byte for n in nodes}
                              for name, nodes in self.bindings.items()}
        for used, positions in self.uses.items():
            bound = self.binding_bytes.get(used)
            if bound:
                self.uses[used] = [p for p in positions if p not in bound]
        for macro in macros:  # write!(name, ...), or anything a macro may do
            words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text(macro)))
            for word in words & self.bindings.keys():
                self.mutations.setdefault(word, []).append(macro.start_byte)


def _outside(positions: list[int], start: int, end: int) -> int:
    return sum(1 for p in positions if not start <= p < end)


def _root_name(node: Node) -> str | None:
    """``x`` of ``x``, ``x.a.b``, ``x[i]``, ``*x``."""
    while node.type in ("field_expression", "index_expression", "unary_expression",
                        "parenthesized_expression"):
        inner = node.child_by_field_name("value") if node.type == "field_expression" \
            else node.named_children[0] if node.named_children else None
        if inner is None:
            return None
        node = inner
    return text(node) if node.type == "identifier" else None


def _is_mut_let(let: Node) -> bool:
    pattern = let.child_by_field_name("pattern")
    return pattern is not None and pattern.type == "mut_pattern" or any(
        c.type == "mutable_specifier" for c in let.children) or (
        pattern is not None and "mut " in text(pattern))


def keeps_locals(node: Node, start: int, end: int) -> bool:
    """Whether taking bytes ``start:end`` (under ``node``) out of the function around
    ``node`` leaves every local it mentions used, mutated if ``mut``, initialised if
    declared without value, and of a type still inferred (module docstring)."""
    function = function_of(node)
    while function is not None and function.type != "function_item":
        function = function_of(function)
    if function is None:
        return False
    facts = _function_facts(function)
    root = node
    while root.parent is not None and not (root.start_byte <= start and end <= root.end_byte):
        root = root.parent
    removed = [n for n in _descendants(root)
               if start <= n.start_byte and n.end_byte <= end]
    names = {text(n) for n in removed if n.type == "identifier" and text(n) in facts.bindings}
    for n in removed:
        if n.type == "string_content":
            names.update(m.group(1) for m in _FORMAT_NAME.finditer(text(n))
                         if m.group(1) in facts.bindings)
    for name in names:
        if _outside(facts.uses.get(name, []), start, end) == 0:
            return False
        for let in facts.lets.get(name, []):
            value = let.child_by_field_name("value")
            if let.child_by_field_name("type") is None and (value is None or (
                    _GENERIC_VALUE.search(text(value).strip())
                    and not _CONCRETE.match(text(value)))):
                return False  # declared without a value, or of a type inferred from uses
            if _is_mut_let(let) and _outside(facts.mutations.get(name, []), start, end) == 0:
                return False
    return True


def node_removable(node: Node) -> bool:
    """:func:`keeps_locals` for the whole of ``node``."""
    return keeps_locals(node, node.start_byte, node.end_byte)


# --- types -----------------------------------------------------------------------------


def _file_root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


@lru_cache(maxsize=16)
def _field_types(root: Node) -> dict[str, set[str]]:
    """The declared types of every struct field of the file, by field name."""
    found: dict[str, set[str]] = {}
    for node in _descendants(root):
        if node.type == "field_declaration":
            name = node.child_by_field_name("name")
            kind = node.child_by_field_name("type")
            if name is not None and kind is not None:
                found.setdefault(text(name), set()).add("".join(text(kind).split()))
    return found


def declared_type(node: Node) -> str | None:
    """The type the file declares for an identifier (the nearest ``let x: T`` or
    parameter ``x: T`` before it in its function) or a field (``self.x``, when every
    struct field of that name has one type); None when it does not show one."""
    if node.type == "field_expression":
        field = node.child_by_field_name("field")
        kinds = _field_types(_file_root(node)).get(text(field)) if field is not None else None
        return next(iter(kinds)) if kinds and len(kinds) == 1 else None
    if node.type != "identifier":
        return None
    function = function_of(node)
    while function is not None and function.type != "function_item":
        function = function_of(function)
    if function is None:
        return None
    facts = _function_facts(function)
    name = text(node)
    best: Node | None = None
    for binding in facts.bindings.get(name, []):
        if binding.start_byte < node.start_byte and (best is None
                                                    or binding.start_byte > best.start_byte):
            best = binding
    if best is None:
        return None
    holder = next((a for a in ancestors(best.parent)
                   if a.type in ("let_declaration", "parameter") or a.type in _BINDING_PARENTS),
                  None)
    if holder is None or holder.type not in ("let_declaration", "parameter"):
        return None
    pattern = holder.child_by_field_name("pattern")
    kind = holder.child_by_field_name("type")
    if pattern is None or kind is None or pattern.type not in ("identifier", "mut_pattern"):
        return None
    return "".join(text(kind).split())


def _let_value(node: Node) -> Node | None:
    """The value of the ``let`` binding an identifier reads, if it is a plain
    ``let [mut] x = value;``."""
    if node.type != "identifier":
        return None
    function = function_of(node)
    while function is not None and function.type != "function_item":
        function = function_of(function)
    if function is None:
        return None
    facts = _function_facts(function)
    lets = [let for let in facts.lets.get(text(node), []) if let.end_byte <= node.start_byte]
    if not lets:
        return None
    let = lets[-1]
    pattern = let.child_by_field_name("pattern")
    if pattern is None or pattern.type not in ("identifier", "mut_pattern"):
        return None
    return let.child_by_field_name("value")


def is_numeric(node: Node, depth: int = 0) -> bool:
    """Whether ``node`` is a number (an integer or float primitive) as far as the file
    shows (module docstring)."""
    if depth > 4:
        return False
    kind = node.type
    if kind in ("integer_literal", "float_literal"):
        return True
    if kind == "char_literal":
        return text(node).startswith("b'")
    if kind == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type not in COMMENTS]
        return len(inner) == 1 and is_numeric(inner[0], depth + 1)
    if kind == "unary_expression":
        return text(node).startswith("-") and bool(node.named_children) and is_numeric(
            node.named_children[-1], depth + 1)
    if kind == "type_cast_expression":
        target = node.child_by_field_name("type")
        return target is not None and text(target) in NUMERIC_TYPES
    if kind == "binary_expression":
        op = node.child_by_field_name("operator")
        if op is None or text(op) not in _ARITHMETIC:
            return False
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        return any(c is not None and is_numeric(c, depth + 1) for c in (left, right))
    if kind == "call_expression":
        function = node.child_by_field_name("function")
        if function is not None and function.type == "field_expression":
            method = function.child_by_field_name("field")
            return method is not None and text(method) in _NUMERIC_METHODS
        return False
    if kind in ("identifier", "field_expression"):
        declared = declared_type(node)
        if declared is not None:
            return declared.lstrip("&") in NUMERIC_TYPES
        value = _let_value(node)
        return value is not None and is_numeric(value, depth + 1)
    return False


def is_constant(node: Node) -> bool:
    """An expression of literals only (``1 << 3``, ``60 * 60``)."""
    kind = node.type
    if kind in ("integer_literal", "float_literal", "char_literal", "boolean_literal"):
        return True
    if kind in ("parenthesized_expression", "unary_expression", "binary_expression",
                "type_cast_expression"):
        parts = [c for c in node.named_children
                 if c.type not in COMMENTS and c.type not in NUMERIC_TYPES
                 and c.type != "primitive_type"]
        return bool(parts) and all(is_constant(c) for c in parts)
    return False


__all__ = ["NUMERIC_TYPES", "block_items", "breaks_with_value", "declared_type", "diverges",
           "has_semicolon", "is_constant", "is_numeric", "keeps_locals",
           "loops_forever_without", "node_removable", "removable", "tail", "terminates",
           "unit_block", "unit_position"]
