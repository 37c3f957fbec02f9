"""Types of Go expressions, as far as one file tells without a type checker.

Some mutations build only for some types: ``a + b`` -> ``a - b`` does not when ``a`` is a
string; ``f(a, b)`` -> ``f(b, a)`` does not when they differ; ``return x`` -> ``return 0``
needs ``x``'s type. :func:`type_of` gives an expression's type as text (``"string"``,
``"[]byte"``, ``"untyped int"``) when the file shows it, None when it does not:

* literals (untyped), ``len``/``cap`` (``int``), conversions (``uint32(x)``,
  ``[]byte(s)``), composite literals, ``&x``, ``*p``, indexing and slicing;
* names: the function's parameters, results and receiver, and its locals declared with a
  type or from a value whose type is known (a name declared twice with different types in
  one function is not known);
* package-level variables, struct fields (a field name declared with one type across the
  file's structs), functions and methods of the file with one result;
* well-known library calls: ``fmt.Sprintf``, ``strconv.Itoa``, ``strings.ToLower``,
  ``x.String()``, ``errors.New``...
"""

from __future__ import annotations

from functools import lru_cache

from tree_sitter import Node

from repogym.generators.mutators.base import named_children, text
from repogym.generators.mutators.golang.scopes import FUNCTIONS, function_of

NUMERIC = frozenset({"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16",
                     "uint32", "uint64", "uintptr", "float32", "float64", "complex64",
                     "complex128", "byte", "rune"})
BASIC = NUMERIC | {"string", "bool"}
NILABLE = frozenset({"error", "any"})
_UNTYPED = {"int_literal": "untyped int", "float_literal": "untyped float",
            "rune_literal": "untyped rune", "imaginary_literal": "untyped complex",
            "interpreted_string_literal": "string", "raw_string_literal": "string",
            "true": "bool", "false": "bool"}
_STRING_FUNCS = {
    "fmt": {"Sprint", "Sprintf", "Sprintln"},
    "strconv": {"Itoa", "FormatInt", "FormatUint", "FormatFloat", "FormatBool", "Quote",
                "QuoteRune", "QuoteToASCII", "AppendQuote"},
    "strings": {"ToLower", "ToUpper", "ToTitle", "Title", "TrimSpace", "Trim", "TrimLeft",
                "TrimRight", "TrimPrefix", "TrimSuffix", "TrimFunc", "Replace", "ReplaceAll",
                "Repeat", "Join", "Map", "Clone"},
    "hex": {"EncodeToString"}, "filepath": {"Join", "Base", "Dir", "Ext", "Clean"},
    "path": {"Join", "Base", "Dir", "Ext", "Clean"}}
_STRING_METHODS = frozenset({"String", "Error"})
_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "&&", "||"})
_SHIFTS = frozenset({"<<", ">>"})
_PARAMETERS = frozenset({"parameter_declaration", "variadic_parameter_declaration"})


def _names(node: Node) -> list[Node]:
    return [c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "name"]


def _type_text(node: Node) -> str:
    return "".join(text(node).split())


class FileTypes:
    """What one file declares: struct fields, package variables, function results and
    named types, by name (None for a name declared with different types)."""

    def __init__(self, root: Node) -> None:
        self.fields: dict[str, str | None] = {}
        self.values: dict[str, str | None] = {}
        self.results: dict[str, str | None] = {}
        self.types: dict[str, Node] = {}
        for decl in root.named_children:
            if decl.type in ("function_declaration", "method_declaration"):
                self._function(decl)
            elif decl.type == "type_declaration":
                self._types(decl)
            elif decl.type == "var_declaration":
                for spec in _specs(decl):
                    self.record_spec(spec, self.values, None)

    def _function(self, decl: Node) -> None:
        name = decl.child_by_field_name("name")
        result = decl.child_by_field_name("result")
        if name is None or result is None:
            return
        kinds = result_types(result)
        _record(self.results, text(name), _type_text(kinds[0]) if len(kinds) == 1 else None)

    def _types(self, decl: Node) -> None:
        for spec in decl.named_children:
            name, kind = spec.child_by_field_name("name"), spec.child_by_field_name("type")
            if name is None or kind is None or spec.child_by_field_name("type_parameters"):
                continue
            self.types[text(name)] = kind
            stack = [kind]
            while stack:
                current = stack.pop()
                stack.extend(current.named_children)
                field_type = current.child_by_field_name("type")
                if current.type == "field_declaration" and field_type is not None:
                    for field in _names(current):
                        _record(self.fields, text(field), _type_text(field_type))

    def record_spec(self, spec: Node, into: dict[str, str | None],
                    scope: dict[str, str | None] | None) -> None:
        """Record in ``into`` the types of the names a ``var`` spec or ``:=`` declares: the
        declared type, or the type of each value (read with the locals in ``scope``)."""
        kind = spec.child_by_field_name("type")
        names = _names(spec) or [c for c in named_children(
            spec.child_by_field_name("left") or spec) if c.type == "identifier"]
        value = spec.child_by_field_name("value") or spec.child_by_field_name("right")
        values = named_children(value) if value is not None else []
        for i, name in enumerate(names):
            if kind is not None:
                found: str | None = _type_text(kind)
            elif len(values) == len(names):
                found = _typed(type_of(values[i], self, scope))
            else:
                found = None
            _record(into, text(name), found)


def _typed(kind: str | None) -> str | None:
    """The type a variable gets from a value of type ``kind``: ``int`` from an untyped
    integer, ``float64`` from an untyped float, ``rune`` from a rune."""
    defaults = {"untyped int": "int", "untyped float": "float64", "untyped rune": "rune",
                "untyped complex": "complex128"}
    return defaults.get(kind, kind) if kind is not None else None


def _record(into: dict[str, str | None], name: str, kind: str | None) -> None:
    if name == "_":
        return
    if name in into and into[name] != kind:
        into[name] = None
    else:
        into[name] = kind


def _specs(decl: Node) -> list[Node]:
    out: list[Node] = []
    for part in named_children(decl):
        out.extend(named_children(part) if part.type == "var_spec_list" else [part])
    return [s for s in out if s.type == "var_spec"]


def result_types(result: Node) -> list[Node]:
    """A function's result types, one per value it returns: ``(a, b int, err error)`` ->
    ``int, int, error``; a bare ``T`` -> ``T``."""
    if result.type != "parameter_list":
        return [result]
    kinds: list[Node] = []
    for declaration in named_children(result):
        kind = declaration.child_by_field_name("type")
        if declaration.type in _PARAMETERS and kind is not None:
            kinds.extend([kind] * max(1, len(_names(declaration))))
    return kinds


@lru_cache(maxsize=8)
def file_types(root: Node) -> FileTypes:
    """The :class:`FileTypes` of a file (by its root node)."""
    return FileTypes(root)


@lru_cache(maxsize=64)
def local_types(function: Node) -> dict[str, str | None]:
    """The types of a function's parameters, results, receiver and locals, by name."""
    root = function
    while root.parent is not None:
        root = root.parent
    found: dict[str, str | None] = {}
    outer = function_of(function)
    if outer is not None:
        found.update(local_types(outer))
    for part in ("receiver", "parameters", "result"):
        signature = function.child_by_field_name(part)
        for declaration in named_children(signature) if signature is not None else []:
            kind = declaration.child_by_field_name("type")
            if declaration.type not in _PARAMETERS or kind is None:
                continue
            prefix = "[]" if declaration.type == "variadic_parameter_declaration" else ""
            for name in _names(declaration):
                _record(found, text(name), prefix + _type_text(kind))
    types = file_types(root)
    stack = [function.child_by_field_name("body")]
    while stack:
        current = stack.pop()
        if current is None or current.type in FUNCTIONS:
            continue
        if current.type in ("var_spec", "short_var_declaration"):
            types.record_spec(current, found, found)
        elif current.type == "range_clause":
            for name in named_children(current.child_by_field_name("left") or current):
                _record(found, text(name), None)
        stack.extend(current.named_children)
    return found


def _scope_types(node: Node) -> dict[str, str | None]:
    function = function_of(node)
    return local_types(function) if function is not None else {}


def type_of(node: Node, types: FileTypes | None = None,
            scope: dict[str, str | None] | None = None) -> str | None:
    """The type of expression ``node`` as text, or None when the file does not show it."""
    if types is None:
        root = node
        while root.parent is not None:
            root = root.parent
        types = file_types(root)
    if scope is None:
        scope = _scope_types(node)
    kind = node.type
    if kind in _UNTYPED:
        return _UNTYPED[kind]
    if kind == "parenthesized_expression":
        inner = named_children(node)
        return type_of(inner[0], types, scope) if len(inner) == 1 else None
    if kind == "identifier":
        name = text(node)
        return scope[name] if name in scope else types.values.get(name)
    if kind in ("composite_literal", "type_conversion_expression"):
        made = node.child_by_field_name("type")
        return _type_text(made) if made is not None else None
    if kind == "selector_expression":
        field = node.child_by_field_name("field")
        return types.fields.get(text(field)) if field is not None else None
    if kind == "call_expression":
        return _call_type(node, types, scope)
    if kind == "binary_expression":
        return _binary_type(node, types, scope)
    if kind == "unary_expression":
        return _unary_type(node, types, scope)
    if kind in ("index_expression", "slice_expression"):
        return _element_type(node, types, scope)
    return None


def _call_type(call: Node, types: FileTypes, scope: dict[str, str | None]) -> str | None:
    function = call.child_by_field_name("function")
    if function is None:
        return None
    if function.type == "identifier":
        name = text(function)
        if name in ("len", "cap", "copy"):
            return "int"
        if name in BASIC and name not in scope:
            return name
        return types.results.get(name)
    if function.type == "selector_expression":
        owner = function.child_by_field_name("operand")
        method = function.child_by_field_name("field")
        if owner is None or method is None:
            return None
        if method is not None and text(method) in _STRING_METHODS:
            return "string"
        if owner.type == "identifier" and text(method) in _STRING_FUNCS.get(text(owner), ()) \
                and text(owner) not in scope:
            return "string"
        if text(owner) in ("errors", "fmt") and text(method) in ("New", "Errorf"):
            return "error"
        return types.results.get(text(method))
    if function.type in ("slice_type", "array_type", "qualified_type", "pointer_type"):
        return _type_text(function)
    return None


def _binary_type(node: Node, types: FileTypes, scope: dict[str, str | None]) -> str | None:
    op = node.child_by_field_name("operator")
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if op is None or left is None or right is None:
        return None
    if text(op) in _COMPARISONS:
        return "bool"
    a = type_of(left, types, scope)
    if text(op) in _SHIFTS:
        return a
    b = type_of(right, types, scope)
    if "string" in (a, b):
        return "string"
    if a is None or b is None:
        return None
    if a.startswith("untyped"):
        return b
    return a


def _unary_type(node: Node, types: FileTypes, scope: dict[str, str | None]) -> str | None:
    op = node.child_by_field_name("operator")
    operand = node.child_by_field_name("operand")
    if op is None or operand is None:
        return None
    inner = type_of(operand, types, scope)
    if text(op) == "!":
        return "bool"
    if text(op) == "&":
        return f"*{inner}" if inner else None
    if text(op) == "*":
        return inner[1:] if inner and inner.startswith("*") else None
    return inner if text(op) in ("-", "+", "^") else None


def _element_type(node: Node, types: FileTypes, scope: dict[str, str | None]) -> str | None:
    operand = node.child_by_field_name("operand")
    whole = type_of(operand, types, scope) if operand is not None else None
    if whole is None:
        return None
    if node.type == "slice_expression":
        if whole.startswith("[") and not whole.startswith("[]"):
            return "[]" + whole[whole.index("]") + 1:]
        return whole
    if whole == "string":
        return "byte"
    if whole.startswith("map["):
        depth = 0
        for i, char in enumerate(whole):
            depth += char == "["
            depth -= char == "]"
            if depth == 0 and char == "]":
                return whole[i + 1:]
        return None
    if whole.startswith("["):
        return whole[whole.index("]") + 1:]
    return None


def is_string(node: Node) -> bool:
    """Whether expression ``node`` is a string, as far as the file shows."""
    return type_of(node) == "string"
