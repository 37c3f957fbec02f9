"""A static guard against mutations that stop a Go package from building (or from being
tested: ``go test`` runs some ``go vet`` checks first, and a failed one fails every test).

Go rejects code that a Python or JavaScript mutation would leave running: a local variable
declared and not used, an import or a label not used, a function with results that can
end without ``return``. A mutant that does not build is a waste: every test fails, and
the judge rejects it. A full type check (``go build``) takes a second a mutant, too slow
for thousands of candidates, so :func:`still_builds` compares what this module can see in
the syntax tree of the original file and of the mutated one, declaration by declaration,
and refuses a mutation that makes any of it worse:

* **unused**: local variables declared and never read (``x = 1`` is no read; ``x++``,
  ``x += 1``, ``&x``, ``x.f = 1`` are), by scope: blocks, ``if``/``for``/``switch``
  headers, ``case`` clauses, function literals, and ``:=`` redeclaring in its own scope;
* **undefined**: names read that nothing in scope in this file declares (a package-level
  name of another file, an import, a builtin): a count that grows means a declaration
  was taken away from a use;
* **imports** no longer read anywhere in the file; **labels** no longer used;
* **missing returns**: a function with results whose body does not end in a terminating
  statement (the Go spec's rules: ``return``, ``goto``, ``panic``, an ``if`` with an
  ``else`` both terminating, a ``for`` without condition or ``break``, a ``switch`` or
  ``select`` with a ``default`` whose clauses all terminate, ...);
* **vet**: ``x != a || x != b`` and ``x == a && x == b`` (vet's ``bool`` check, which
  ``go test`` runs), the same operand twice in one ``&&``/``||`` chain;
* **constant errors**: a constant division by zero, the same constant twice among a
  ``switch``'s cases or a composite literal's keys, an expression statement that is no
  call or receive (``s`` alone after a call is unwrapped).

What it cannot see (types: ``string - string``, a constant that overflows its type) the
mutators avoid by looking at the code around a site (:mod:`.hints`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import named_children, text
from repogym.generators.mutators.golang.runtime import TYPES, panic_call
from repogym.generators.mutators.golang.scopes import (
    LOOPS,
    SWITCHES,
    body_statements,
    case_statements,
)

_CASES = frozenset({"expression_case", "type_case", "default_case", "communication_case"})
_LITERALS = frozenset({"int_literal", "float_literal", "imaginary_literal", "rune_literal",
                       "interpreted_string_literal", "raw_string_literal", "true", "false"})
_PARAMETERS = frozenset({"parameter_declaration", "variadic_parameter_declaration"})
_VERSION = re.compile(r"^v[0-9]+$")
_SUSPECT = {"||": "!=", "&&": "=="}
_STATEMENT_EXPRESSIONS = frozenset({"call_expression", "unary_expression"})


@dataclass
class _Binding:
    """A declared name: a local variable (``checked``: it must be read) or a parameter,
    constant or result (never checked)."""

    name: str
    checked: bool
    reads: int = 0


class _Scope:
    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.names: dict[str, _Binding] = {}

    def lookup(self, name: str) -> _Binding | None:
        scope: _Scope | None = self
        while scope is not None:
            found = scope.names.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None


@dataclass
class Problems:
    """What would stop one declaration (or a whole file) from building, by kind."""

    unused: Counter[str] = field(default_factory=Counter)
    undefined: Counter[str] = field(default_factory=Counter)
    unused_labels: Counter[str] = field(default_factory=Counter)
    missing_returns: int = 0
    vet: int = 0
    constant_errors: int = 0

    def worse_than(self, before: Problems) -> bool:
        """Whether this has a problem of any kind more often than ``before``."""
        return bool(self.unused - before.unused or self.undefined - before.undefined
                    or self.unused_labels - before.unused_labels
                    or self.missing_returns > before.missing_returns
                    or self.vet > before.vet or self.constant_errors > before.constant_errors)


class _Analysis:
    """One walk over a top-level declaration, resolving names scope by scope."""

    def __init__(self, package: frozenset[str]) -> None:
        self.package = package
        self.bindings: list[_Binding] = []
        self.problems = Problems()
        self.labels: list[dict[str, int]] = []

    # --- names ------------------------------------------------------------------------

    def declare(self, ident: Node, scope: _Scope, *, checked: bool) -> None:
        name = text(ident)
        if name == "_" or ident.type != "identifier":
            return
        binding = _Binding(name, checked)
        scope.names[name] = binding
        self.bindings.append(binding)

    def read(self, ident: Node, scope: _Scope, *, maybe_field: bool = False) -> None:
        name = text(ident)
        if name == "_":
            return
        binding = scope.lookup(name)
        if binding is not None:
            binding.reads += 1
        elif name not in self.package and not maybe_field:
            self.problems.undefined[name] += 1

    def write(self, target: Node, scope: _Scope) -> None:
        """The left side of ``=``: a bare name is written, anything else read."""
        while target.type == "parenthesized_expression" and named_children(target):
            target = named_children(target)[0]
        if target.type != "identifier":
            self.expression(target, scope)
        elif text(target) != "_" and scope.lookup(text(target)) is None \
                and text(target) not in self.package:
            self.problems.undefined[text(target)] += 1

    def declare_short(self, left: Node | None, scope: _Scope) -> None:
        """``a, err := ...``: names new to this scope are declared, the others assigned."""
        for ident in named_children(left) if left is not None else []:
            if ident.type == "identifier" and text(ident) not in scope.names:
                self.declare(ident, scope, checked=True)

    # --- expressions ------------------------------------------------------------------

    def expression(self, node: Node | None, scope: _Scope) -> None:
        stack = [node] if node is not None else []
        while stack:
            current = stack.pop()
            kind = current.type
            if kind == "identifier":
                self.read(current, scope)
            elif kind in TYPES:
                self.type_uses(current)
            elif kind == "func_literal":
                self.function(current, scope)
            elif kind == "keyed_element":
                key = current.child_by_field_name("key")
                inner = named_children(key) if key is not None else []
                if len(inner) == 1 and inner[0].type == "identifier":
                    self.read(inner[0], scope, maybe_field=True)  # a field or a variable
                elif key is not None:
                    stack.append(key)
                value = current.child_by_field_name("value")
                stack.extend([value] if value is not None else [])
            elif kind != "comment":
                stack.extend(reversed(current.named_children))

    def type_uses(self, node: Node) -> None:
        """Packages named in a type (``[]strings.Builder``): uses of their imports."""
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "package_identifier":
                self.problems.undefined[text(current)] += 1
            stack.extend(current.named_children)

    # --- statements -------------------------------------------------------------------

    def statements(self, nodes: list[Node], scope: _Scope) -> None:
        for stmt in nodes:
            self.statement(stmt, scope)

    def statement(self, node: Node | None, scope: _Scope) -> None:
        if node is None:
            return
        kind = node.type
        field_ = node.child_by_field_name
        if kind == "block":
            self.statements(body_statements(node), _Scope(scope))
        elif kind == "statement_list":
            self.statements(named_children(node), scope)
        elif kind == "short_var_declaration":
            self.expression(field_("right"), scope)
            self.declare_short(field_("left"), scope)
        elif kind in ("var_declaration", "const_declaration"):
            self.specs(node, scope, checked=kind == "var_declaration")
        elif kind == "assignment_statement":
            self.assignment(node, scope)
        elif kind in ("if_statement", "for_statement", "expression_switch_statement",
                      "type_switch_statement", "select_statement"):
            self.compound(node, scope)
        elif kind == "labeled_statement":
            label = field_("label")
            if label is not None and self.labels:
                self.labels[-1].setdefault(text(label), 0)
            self.statements(named_children(node)[1:], scope)
        elif kind in ("break_statement", "continue_statement", "goto_statement"):
            for label in named_children(node):
                if self.labels:
                    counts = self.labels[-1]
                    counts[text(label)] = counts.get(text(label), 0) + 1
        elif kind == "type_declaration":
            self.type_uses(node)
        elif kind == "expression_statement":
            parts = named_children(node)
            if len(parts) == 1 and parts[0].type not in _STATEMENT_EXPRESSIONS:
                self.problems.constant_errors += 1  # "x (variable) is not used"
            self.expression(node, scope)
        else:
            self.expression(node, scope)

    def specs(self, node: Node, scope: _Scope, *, checked: bool) -> None:
        stack = list(named_children(node))
        while stack:
            spec = stack.pop(0)
            if spec.type in ("var_spec_list", "const_spec_list"):
                stack[:0] = named_children(spec)
                continue
            value = spec.child_by_field_name("value")
            kind = spec.child_by_field_name("type")
            self.expression(value, scope)
            if kind is not None:
                self.type_uses(kind)
            for i, child in enumerate(spec.children):
                if spec.field_name_for_child(i) == "name":
                    self.declare(child, scope, checked=checked)

    def assignment(self, node: Node, scope: _Scope) -> None:
        operator = node.child_by_field_name("operator")
        left = node.child_by_field_name("left")
        self.expression(node.child_by_field_name("right"), scope)
        if operator is not None and text(operator) == "=" and left is not None:
            for target in named_children(left):
                self.write(target, scope)
        else:
            self.expression(left, scope)  # x += 1 reads x
        if operator is not None and text(operator) in ("/=", "%="):
            right = named_children(node.child_by_field_name("right") or node)
            if right and is_zero_constant(right[0]):
                self.problems.constant_errors += 1

    def compound(self, node: Node, scope: _Scope) -> None:
        """``if``, ``for``, ``switch`` and ``select``: a scope for the header, and one per
        clause."""
        inner = _Scope(scope)
        kind = node.type
        field_ = node.child_by_field_name
        if kind == "if_statement":
            self.statement(field_("initializer"), inner)
            self.expression(field_("condition"), inner)
            self.statement(field_("consequence"), inner)
            self.statement(field_("alternative"), inner)
        elif kind == "for_statement":
            self.loop(node, inner)
        elif kind == "select_statement":
            for case in named_children(node):
                self.communication(case, inner)
        else:
            self.switch(node, inner)

    def loop(self, node: Node, scope: _Scope) -> None:
        for part in named_children(node):
            if part.type == "for_clause":
                self.statement(part.child_by_field_name("initializer"), scope)
                self.expression(part.child_by_field_name("condition"), scope)
                self.statement(part.child_by_field_name("update"), scope)
            elif part.type == "range_clause":
                self.expression(part.child_by_field_name("right"), scope)
                left = part.child_by_field_name("left")
                if any(c.type == ":=" for c in part.children):
                    for ident in named_children(left) if left is not None else []:
                        self.declare(ident, scope, checked=True)
                else:
                    for target in named_children(left) if left is not None else []:
                        self.write(target, scope)
            elif part.type == "block":
                self.statement(part, scope)
            else:
                self.expression(part, scope)

    def switch(self, node: Node, scope: _Scope) -> None:
        self.statement(node.child_by_field_name("initializer"), scope)
        self.expression(node.child_by_field_name("value"), scope)
        alias = node.child_by_field_name("alias")
        names = [c for c in named_children(alias) if c.type == "identifier"] \
            if alias is not None else []
        shared = _Binding(text(names[0]), True) if names and text(names[0]) != "_" else None
        if shared is not None:
            self.bindings.append(shared)
        for case in (c for c in named_children(node) if c.type in _CASES):
            clause = _Scope(scope)
            if shared is not None:
                clause.names[shared.name] = shared
            for i, child in enumerate(case.children):
                if case.field_name_for_child(i) == "value" and node.type != "type_switch_statement":
                    self.expression(child, scope)
                elif case.field_name_for_child(i) == "type":
                    self.type_uses(child)
            self.statements(case_statements(case), clause)
        self.problems.constant_errors += _duplicates(_case_literals(node))

    def communication(self, case: Node, scope: _Scope) -> None:
        clause = _Scope(scope)
        comm = case.child_by_field_name("communication")
        if comm is not None and comm.type == "receive_statement":
            self.expression(comm.child_by_field_name("right"), clause)
            left = comm.child_by_field_name("left")
            if any(c.type == ":=" for c in comm.children):
                self.declare_short(left, clause)
            else:
                for target in named_children(left) if left is not None else []:
                    self.write(target, clause)
        elif comm is not None:
            self.expression(comm, clause)
        self.statements(case_statements(case), clause)

    # --- functions --------------------------------------------------------------------

    def function(self, node: Node, outer: _Scope) -> None:
        scope = _Scope(outer)
        for part in ("receiver", "parameters", "result", "type_parameters"):
            signature = node.child_by_field_name(part)
            if signature is None:
                continue
            self.type_uses(signature)
            for declaration in named_children(signature):
                if declaration.type in _PARAMETERS:
                    for i, child in enumerate(declaration.children):
                        if declaration.field_name_for_child(i) == "name":
                            self.declare(child, scope, checked=False)
        body = node.child_by_field_name("body")
        if body is None:
            return
        self.labels.append({})
        self.statements(body_statements(body), scope)  # the body shares the parameters' block
        self.problems.unused_labels.update(
            name for name, uses in self.labels.pop().items() if uses == 0)
        if node.child_by_field_name("result") is not None and not terminating(body):
            self.problems.missing_returns += 1

    def declaration(self, node: Node) -> Problems:
        """The problems of one top-level declaration."""
        root = _Scope(None)
        if node.type in ("function_declaration", "method_declaration"):
            self.function(node, root)
        elif node.type in ("var_declaration", "const_declaration"):
            self.specs(node, root, checked=False)
        elif node.type == "type_declaration":
            self.type_uses(node)
        self.problems.unused.update(b.name for b in self.bindings if b.checked and not b.reads)
        self.problems.vet += vet_count(node)
        self.problems.constant_errors += _constant_errors(node)
        return self.problems


# --- terminating statements (the Go spec) ----------------------------------------------


def _last(statements: list[Node]) -> Node | None:
    real = [s for s in statements if s.type != "empty_statement"]
    return real[-1] if real else None


def _ends_terminating(statements: list[Node], *, fallthrough: bool = False) -> bool:
    last = _last(statements)
    if last is None:
        return False
    return terminating(last) or (fallthrough and last.type == "fallthrough_statement")


def terminating(stmt: Node, label: str | None = None) -> bool:
    """Whether ``stmt`` is a terminating statement (Go spec, "Terminating statements")."""
    kind = stmt.type
    if kind in ("return_statement", "goto_statement") or panic_call(stmt) is not None:
        return True
    if kind == "block":
        return _ends_terminating(body_statements(stmt))
    if kind == "labeled_statement":
        label_node = stmt.child_by_field_name("label")
        inner = named_children(stmt)[1:]
        return bool(inner) and terminating(inner[0], text(label_node) if label_node else None)
    if kind == "if_statement":
        then, other = stmt.child_by_field_name("consequence"), stmt.child_by_field_name(
            "alternative")
        return then is not None and other is not None and terminating(then) \
            and terminating(other)
    if kind == "for_statement":
        return not _has_condition(stmt) and not _breaks(stmt, label)
    if kind in SWITCHES:
        cases = [c for c in named_children(stmt) if c.type in _CASES]
        return (any(c.type == "default_case" for c in cases) and not _breaks(stmt, label)
                and all(_ends_terminating(case_statements(c), fallthrough=True)
                        for c in cases))
    return False


def _has_condition(loop: Node) -> bool:
    for part in named_children(loop):
        if part.type == "range_clause":
            return True
        if part.type == "for_clause":
            return part.child_by_field_name("condition") is not None
        if part.type != "block":
            return True
    return False


def _breaks(stmt: Node, label: str | None) -> bool:
    """Whether a ``break`` in ``stmt`` leaves it: an unlabelled one not inside an inner
    loop, switch or select, or one with ``stmt``'s label."""
    stack = [(c, False) for c in stmt.named_children]
    while stack:
        current, nested = stack.pop()
        if current.type == "func_literal":
            continue
        if current.type == "break_statement":
            labels = named_children(current)
            if (not labels and not nested) or (labels and text(labels[0]) == label):
                return True
        inner = nested or current.type in LOOPS or current.type in SWITCHES
        stack.extend((c, inner) for c in current.named_children)
    return False


# --- vet and constants -----------------------------------------------------------------


def _operator(node: Node) -> str:
    op = node.child_by_field_name("operator")
    return text(op) if op is not None else ""


def _unparen(node: Node) -> Node:
    while node.type == "parenthesized_expression" and len(named_children(node)) == 1:
        node = named_children(node)[0]
    return node


def chain(node: Node) -> list[Node]:
    """The operands of the ``&&`` or ``||`` chain ``node`` heads (parentheses seen
    through): ``a || (b || c)`` -> ``a, b, c``."""
    op = _operator(node)
    out: list[Node] = []
    stack = [node]
    while stack:
        current = _unparen(stack.pop())
        if current.type == "binary_expression" and _operator(current) == op:
            stack.extend(reversed([c for c in (current.child_by_field_name("left"),
                                               current.child_by_field_name("right"))
                                   if c is not None]))
        else:
            out.append(current)
    return out


def _flat(node: Node) -> str:
    return " ".join(text(node).split())


def suspect_pairs(op: str, operands: list[Node]) -> int:
    """vet's ``bool`` findings in one chain: an operand twice, or ``x != a || x != b``
    (``x == a && x == b``) with ``a`` and ``b`` what may be constants (vet knows; this
    counts every literal, name and qualified name)."""
    found = sum(n - 1 for n in Counter(_flat(o) for o in operands).values() if n > 1)
    sides: Counter[str] = Counter()
    for operand in operands:
        if operand.type != "binary_expression" or _operator(operand) != _SUSPECT[op]:
            continue
        left, right = operand.child_by_field_name("left"), operand.child_by_field_name("right")
        if left is None or right is None:
            continue
        sides.update({_flat(shared) for shared, other in ((left, right), (right, left))
                      if _maybe_constant(other)})
    return found + sum(n - 1 for n in sides.values() if n > 1)


def _maybe_constant(node: Node) -> bool:
    """A literal, a name or a qualified name (``reflect.Slice``): what may be a constant."""
    node = _unparen(node)
    if node.type == "selector_expression":
        operand = node.child_by_field_name("operand")
        return operand is not None and operand.type == "identifier"
    return node.type in _LITERALS or node.type == "identifier"


def _heads(node: Node) -> Iterator[Node]:
    """Every ``&&``/``||`` chain's head under ``node``."""
    stack = [node]
    while stack:
        current = stack.pop()
        stack.extend(current.named_children)
        if current.type != "binary_expression" or _operator(current) not in _SUSPECT:
            continue
        parent = current.parent
        while parent is not None and parent.type == "parenthesized_expression":
            parent = parent.parent
        if parent is None or parent.type != "binary_expression" \
                or _operator(parent) != _operator(current):
            yield current


def vet_count(node: Node) -> int:
    """vet's ``bool`` findings (see :func:`suspect_pairs`) in every chain under ``node``."""
    return sum(suspect_pairs(_operator(head), chain(head)) for head in _heads(node))


def literal_key(node: Node) -> str | None:
    """A constant's value as a comparable text (``0x10`` and ``16`` alike), or None."""
    node = _unparen(node)
    if node.type == "int_literal":
        value = int_value(text(node))
        return None if value is None else f"int:{value}"
    return f"{node.type}:{text(node)}" if node.type in _LITERALS else None


def _duplicates(keys: list[str | None]) -> int:
    counts = Counter(k for k in keys if k is not None)
    return sum(n - 1 for n in counts.values() if n > 1)


def _case_literals(switch: Node) -> list[str | None]:
    if switch.type != "expression_switch_statement":
        return []
    keys: list[str | None] = []
    for case in named_children(switch):
        values = case.child_by_field_name("value") if case.type == "expression_case" else None
        if values is not None:
            keys.extend(literal_key(v) for v in named_children(values))
    return keys


def is_zero_constant(node: Node) -> bool:
    """``0``, ``0x0``, ``0.0``: a constant zero."""
    node = _unparen(node)
    if node.type == "int_literal":
        return int_value(text(node)) == 0
    if node.type == "float_literal":
        try:
            return float(text(node).replace("_", "")) == 0.0
        except ValueError:
            return False
    return False


def _constant_errors(node: Node) -> int:
    """Constant divisions by zero and duplicate literal keys in composite literals."""
    found = 0
    stack = [node]
    while stack:
        current = stack.pop()
        stack.extend(current.named_children)
        if current.type == "binary_expression" and _operator(current) in ("/", "%"):
            right = current.child_by_field_name("right")
            found += right is not None and is_zero_constant(right)
        elif current.type == "literal_value":
            keys = [c.child_by_field_name("key") for c in named_children(current)
                    if c.type == "keyed_element"]
            found += _duplicates([literal_key(named_children(k)[0])
                                  if k is not None and len(named_children(k)) == 1 else None
                                  for k in keys])
    return found


_INT = re.compile(r"0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*")


def int_value(literal: str) -> int | None:
    """The value of a Go integer literal (``0x1f``, ``0o17``, ``017``, ``1_000``), or None
    for anything else (``1.5``, ``1e3``, ``2i``)."""
    if _INT.fullmatch(literal) is None:
        return None
    digits = literal.replace("_", "")
    if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
        return int(digits, 8)
    return int(digits, 0)


# --- files -----------------------------------------------------------------------------


def package_names(root: Node) -> frozenset[str]:
    """The names a file declares at package level (functions, variables, constants,
    types; not methods)."""
    names: set[str] = set()
    for decl in root.named_children:
        if decl.type == "function_declaration":
            name = decl.child_by_field_name("name")
            names.update([text(name)] if name is not None else [])
            continue
        stack = list(named_children(decl)) if decl.type in (
            "var_declaration", "const_declaration", "type_declaration") else []
        while stack:
            spec = stack.pop()
            if spec.type.endswith("_list"):
                stack.extend(named_children(spec))
            for i, child in enumerate(spec.children):
                if spec.field_name_for_child(i) == "name":
                    names.add(text(child))
    return frozenset(names)


def import_names(root: Node) -> frozenset[str]:
    """The names a file's imports go by (``_`` and ``.`` imports left out): the alias, or
    the path's last element (a ``/v2`` or ``.v3`` major version and a ``go-`` prefix
    dropped: a guess where the package's own name differs, which only hides a use)."""
    names: set[str] = set()
    for decl in (d for d in root.named_children if d.type == "import_declaration"):
        stack = list(decl.named_children)
        while stack:
            spec = stack.pop()
            if spec.type == "import_spec_list":
                stack.extend(spec.named_children)
                continue
            if spec.type != "import_spec":
                continue
            alias = spec.child_by_field_name("name")
            path = spec.child_by_field_name("path")
            if alias is not None:
                if alias.type == "package_identifier":
                    names.add(text(alias))
            elif path is not None:
                names.add(_package_of(text(path).strip("\"`")))
    return frozenset(names)


def _package_of(path: str) -> str:
    parts = path.split("/")
    last = parts[-1]
    if _VERSION.match(last) and len(parts) > 1:
        last = parts[-2]
    last = re.sub(r"\.v[0-9]+$", "", last)
    return last.removeprefix("go-").replace("-", "_").replace(".", "_")


def declaration_problems(node: Node, package: frozenset[str]) -> Problems:
    """The problems of one top-level declaration of a file whose package-level names are
    ``package``."""
    return _Analysis(package).declaration(node)


@dataclass(frozen=True)
class FileFacts:
    """What a whole original file tells, computed once for all its mutants."""

    package: frozenset[str]
    imports: frozenset[str]
    reads: Counter[str]  # reads of names no declaration in the file gives, over the file
    problems: tuple[Problems, ...]  # per top-level declaration


def file_facts(root: Node) -> FileFacts:
    """The :class:`FileFacts` of a parsed file."""
    package = package_names(root)
    problems = tuple(declaration_problems(d, package) for d in root.named_children)
    reads: Counter[str] = Counter()
    for found in problems:
        reads.update(found.undefined)
    return FileFacts(package, import_names(root), reads, problems)


def still_builds(before: Node, after: Node, facts: FileFacts | None = None) -> bool:
    """Whether the file ``after`` (a mutant of ``before``) has no problem ``before`` did
    not have (see the module docstring), comparing the top-level declarations that
    changed."""
    facts = facts or file_facts(before)
    old, new = before.named_children, after.named_children
    if len(old) != len(new) or len(facts.problems) != len(old):
        return False
    reads = Counter(facts.reads)
    for i, (a, b) in enumerate(zip(old, new)):
        if a.type != b.type:
            return False
        if a.text == b.text:
            continue
        was = facts.problems[i]
        now = declaration_problems(b, facts.package)
        if now.worse_than(was):
            return False
        reads.subtract(was.undefined)
        reads.update(now.undefined)
    return all(reads[name] > 0 for name in facts.imports if facts.reads[name] > 0)
