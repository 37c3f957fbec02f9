"""Code that serves every mutator family: Python, ``ecmascript`` (JavaScript, TypeScript), ``go``.

Each helper is the language-neutral part of a rule. What differs between the languages
(node types, tokens, comment markers, the predicates of runtime code) is a parameter, and
each family's module binds it: :mod:`repogym.generators.mutators.runtime` and
:mod:`repogym.generators.mutators.ecmascript.runtime` walk runtime code with
:func:`runtime_walk`, both ``edits`` modules re-indent with :func:`reindented`, and so on.
What only looks alike but means something else in each language (deleting a statement,
unwrapping a ``try``, what makes a ``return`` early...) stays in the family's module.
"""

from __future__ import annotations

from typing import Callable, ClassVar, Collection, Iterator, Mapping, Sequence

from tree_sitter import Node

from repogym.generators.mutators.base import NodeMutator, Site, named_children, replace_node, text

_FORMATS = {"0x": hex, "0o": oct, "0b": bin}

# --- walking a tree --------------------------------------------------------------------


def _code_children(node: Node) -> list[Node]:
    return [c for c in node.children if "comment" not in c.type]


def same_code(a: Node, b: Node) -> bool:
    """Whether two syntax trees have the same node types and leaf texts, comments left out
    (layout-insensitive). Subtrees of identical text are taken as equal unvisited."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x.type != y.type:
            return False
        if x.text == y.text:
            continue
        xs, ys = _code_children(x), _code_children(y)
        if len(xs) != len(ys) or not xs:
            return False
        stack.extend(zip(xs, ys))
    return True



def ancestors(node: Node | None) -> Iterator[Node]:
    """``node`` itself, then its parent, and so on up to the root (nothing for None)."""
    current = node
    while current is not None:
        yield current
        current = current.parent


def innermost(node: Node, types: Collection[str]) -> Node | None:
    """The closest ancestor of ``node`` (not ``node`` itself) of one of ``types``."""
    return next((a for a in ancestors(node.parent) if a.type in types), None)


def named_descendants(node: Node) -> Iterator[Node]:
    """``node`` and every named node under it."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.named_children)


def contains(outer: Node | None, node: Node) -> bool:
    """Whether ``node``'s bytes lie within ``outer``'s."""
    return outer is not None and outer.start_byte <= node.start_byte \
        and node.end_byte <= outer.end_byte


# --- runtime code ----------------------------------------------------------------------


def follows_terminator(stmt: Node, terminators: Collection[str]) -> bool:
    """Whether a statement before ``stmt`` among its siblings is one of ``terminators``
    (a ``return``, ``raise``/``throw``, ``continue`` or ``break``)."""
    sibling = stmt.prev_named_sibling
    while sibling is not None:
        if sibling.type in terminators:
            return True
        sibling = sibling.prev_named_sibling
    return False


def reachable(node: Node, blocks: Collection[str], terminators: Collection[str],
              survives: Callable[[Node], bool] | None = None) -> list[Node]:
    """A node's children; for a block (a type in ``blocks``), only up to its first
    terminator, and after it those that ``survives`` keeps (none without it)."""
    children = node.children
    if node.type not in blocks:
        return children
    for i, child in enumerate(children):
        if child.type in terminators:
            kept = children[:i + 1]
            return kept if survives is None else kept + [c for c in children[i + 1:]
                                                         if survives(c)]
    return children


def holds(node: Node, forbidden: Callable[[Node], bool],
          reachable_children: Callable[[Node], list[Node]],
          inert: Callable[[Node], bool] | None = None) -> bool:
    """Whether a node under ``node`` is ``forbidden``, or has unreachable children: what
    deleting ``node`` must not take along. Subtrees that are ``inert`` are not looked in."""
    stack = list(node.children)
    while stack:
        current = stack.pop()
        if inert is not None and inert(current):
            continue
        if forbidden(current):
            return True
        children = reachable_children(current)
        if len(children) < len(current.children):
            return True
        stack.extend(children)
    return False


def runtime_walk(root: Node, excluded: Callable[[Node], bool],
                 reachable_children: Callable[[Node], list[Node]],
                 body_runtime: Callable[[Node, bool], bool | None],
                 resets: Collection[str] = ()) -> Iterator[Node]:
    """Every node of runtime code under ``root``, in source order.

    Excluded subtrees are skipped. For a scope (a function or class), ``body_runtime``
    says whether its body is runtime code, given whether the scope itself is (None for a
    node that is no scope); only that body is walked. The children of a node of a type in
    ``resets`` are not runtime code, whatever is around it.
    """
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, runtime = stack.pop()
        if excluded(node):
            continue
        if runtime:
            yield node
        inner = body_runtime(node, runtime)
        if inner is not None:
            body = node.child_by_field_name("body")
            if body is not None:
                stack.append((body, inner))
            continue
        if node.type in resets:
            runtime = False
        stack.extend((child, runtime) for child in reversed(reachable_children(node)))


def in_body(node: Node, off_limits: Callable[[Node], bool],
            verdict: Callable[[Node, Node], bool | None]) -> bool:
    """Whether ``node`` is runtime code of a function body, going up from it: not when it
    or an ancestor is ``off_limits``; otherwise as the first ancestor for which
    ``verdict(ancestor, node)`` is not None says (not when none does)."""
    decided: bool | None = None
    for current in ancestors(node):
        if off_limits(current):
            return False
        if decided is None and current != node:
            decided = verdict(current, node)
    return bool(decided)


def qualified_name(node: Node, scope: Callable[[Node], tuple[bool, str] | None]) -> str | None:
    """The names of the scopes around ``node``, outermost first, joined with dots; None
    when none of them is a function. ``scope`` tells whether a node is a function and
    the name it adds (None: it adds none)."""
    names: list[str] = []
    in_function = False
    for current in ancestors(node.parent):
        found = scope(current)
        if found is not None:
            names.append(found[1])
            in_function = in_function or found[0]
    return ".".join(reversed(names)) if in_function else None


def is_output_call(callee: str, quiet: Collection[str], loggers: Collection[str],
                   receivers: Collection[str]) -> bool:
    """Whether a call to ``callee`` (its dotted text) only writes output: one of ``quiet``,
    or a method of a logger (``logger.info``, ``self.log.debug``: the first name, after a
    receiver such as ``self`` or ``this``, is one of ``loggers``)."""
    if callee in quiet:
        return True
    parts = [p.split("(")[0].strip().lstrip("_").lower() for p in callee.split(".")]
    if parts and parts[0] in receivers:
        parts = parts[1:]
    return len(parts) >= 2 and parts[0] in loggers


# --- text edits ------------------------------------------------------------------------


def summary(node: Node, limit: int = 60) -> str:
    """The node's text on one line, cut to ``limit`` characters."""
    flat = " ".join(text(node).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def indentation(node: Node, source: bytes) -> bytes | None:
    """The blanks before ``node`` on its line; None when code comes before it there."""
    before = source[source.rfind(b"\n", 0, node.start_byte) + 1:node.start_byte]
    return None if before.strip() else before


def whole_lines(stmt: Node, source: bytes,
                comments: tuple[bytes, ...]) -> tuple[int, int] | None:
    """The byte range of the lines ``stmt`` fills alone (a trailing comment, starting with
    one of ``comments``, goes too)."""
    indent = indentation(stmt, source)
    if indent is None:
        return None
    newline = source.find(b"\n", stmt.end_byte)
    line_end = len(source) if newline < 0 else newline + 1
    rest = source[stmt.end_byte:line_end].strip()
    if rest and not rest.startswith(comments):
        return None
    return stmt.start_byte - len(indent), line_end


def string_rows(node: Node, strings: Collection[str]) -> set[int]:
    """Rows that begin inside a multi-line string (a node of a type in ``strings``) under
    ``node``: their indentation is the string's text."""
    rows: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in strings and current.end_point[0] > current.start_point[0]:
            rows.update(range(current.start_point[0] + 1, current.end_point[0] + 1))
        else:
            stack.extend(current.children)
    return rows


def reindented(first: Node, last: Node, indent: bytes, source: bytes,
               verbatim: set[int]) -> bytes:
    """The text from ``first`` to ``last`` (one node twice, or the ends of a run of
    siblings) with its indentation replaced by ``indent``, the first line unindented and
    the rows in ``verbatim`` (see :func:`string_rows`) untouched.

    Text that does not start its line (``try: x()``, ``{ a(); b() }``) is returned as it is.
    """
    own_indent = indentation(first, source)
    if own_indent is None:
        return source[first.start_byte:last.end_byte]
    lines = source[first.start_byte - len(own_indent):last.end_byte].split(b"\n")
    out = [lines[0][len(own_indent):]]
    for row, line in enumerate(lines[1:], start=first.start_point[0] + 1):
        keep = row in verbatim or not line.startswith(own_indent)
        out.append(line if keep else indent + line[len(own_indent):])
    return b"\n".join(out)


def stacked(pieces: Sequence[bytes], indent: bytes) -> str:
    """Pieces of code one after another, each from a new line at ``indent``."""
    return (b"\n" + indent).join(pieces).decode("utf-8", "replace")


# --- sites -----------------------------------------------------------------------------


def swapped(first: Node, second: Node, source: bytes, line: int, description: str) -> Site:
    """A site making ``first`` and ``second`` (in this order) trade places, the text
    between them kept."""
    middle = source[first.end_byte:second.start_byte].decode("utf-8", "replace")
    return Site(first.start_byte, second.end_byte, text(second) + middle + text(first),
                line, description)


def arguments_swapped(call: Node, callee: Node, first: Node, second: Node,
                      source: bytes) -> Site:
    """The site swapping two arguments of ``call`` (to ``callee``)."""
    return swapped(first, second, source, call.start_point[0] + 1,
                   f"arguments `{summary(first, 25)}` and `{summary(second, 25)}` "
                   f"of `{summary(callee, 30)}()` swapped")


def statements_swapped(first: Node, second: Node, source: bytes) -> Site:
    """The site swapping two adjacent statements."""
    return swapped(first, second, source, first.start_point[0] + 1,
                   f"`{summary(first, 30)}` and `{summary(second, 30)}` swapped")


def method_receiver(call: Node, member: str) -> Node | None:
    """The object whose method ``call`` calls (``out.append(x)``: ``out``), its callee
    being a node of type ``member``."""
    callee = call.child_by_field_name("function")
    return callee.child_by_field_name("object") if callee is not None \
        and callee.type == member else None


def chain_link_dropped(call: Node, member: str, method_field: str,
                       droppable: Callable[[Node], bool]) -> Iterator[Site]:
    """The site dropping ``call`` from a method chain: ``a.b().c()`` -> ``a.b()``.

    ``call``'s callee must be a node of type ``member`` (``x.c``, the method's name in
    its ``method_field``) on a call of ``call``'s own type, and ``droppable`` must accept
    that inner call's callee (``a.b``).
    """
    callee = call.child_by_field_name("function")
    if callee is None or callee.type != member:
        return
    receiver = callee.child_by_field_name("object")
    method = callee.child_by_field_name(method_field)
    if receiver is None or method is None or receiver.type != call.type:
        return
    inner = receiver.child_by_field_name("function")
    if inner is None or not droppable(inner):
        return
    yield replace_node(call, text(receiver),
                       f"`.{text(method)}()` dropped from `{summary(call, 40)}`")


def operator_key(op: Node) -> str:
    """An operator's text with inner whitespace normalised (``not  in`` -> ``not in``)."""
    return " ".join(text(op).split())


def operator_swapped(op: Node, table: Mapping[str, str]) -> Iterator[Site]:
    """A site replacing operator ``op`` by its entry in ``table``, if it has one."""
    key = operator_key(op)
    if key in table:
        yield replace_node(op, table[key], f"`{key}` replaced by `{table[key]}`", op)


def negated(cond: Node, prefix: str, *, negation: bool, bare: bool) -> str:
    """``cond`` negated with the prefix operator ``prefix`` (``not ``, ``!``).

    A ``cond`` that already is a ``negation`` becomes its argument; otherwise it is
    parenthesised unless it may stand ``bare`` after the operator (binds tighter).
    """
    if negation:
        argument = cond.child_by_field_name("argument")
        if argument is not None:
            return text(argument)
    return f"{prefix}{text(cond)}" if bare else f"{prefix}({text(cond)})"


def format_like(value: int, literal: str) -> str:
    """``value`` written in the base of ``literal`` (hex stays hex); negatives in decimal."""
    formatter = _FORMATS.get(literal[:2].lower())
    return formatter(value) if formatter and value >= 0 else str(value)


def off_by_one(literal: Node, value: int | None, minus: Callable[[Node], bool],
               context: Callable[[Node], str | None],
               written: Callable[[int, Node], str]) -> Iterator[Site]:
    """Two sites: integer ``literal`` (worth ``value``; None when it is no integer) becomes
    ``value + 1`` and ``value - 1``, as ``written`` spells a value in place of a node.

    A minus before it (its parent, when ``minus`` says so) counts as part of it; only
    where ``context`` names the place of the (signed) literal, e.g. ``"comparison"``.
    """
    if value is None:
        return
    target = literal
    parent = literal.parent
    if parent is not None and minus(parent):
        target, value = parent, -value
    where = context(target)
    if where is None:
        return
    old = text(target)
    for new in (value + 1, value - 1):
        new_text = written(new, target)
        yield replace_node(target, new_text, f"{where} `{old}` changed to `{new_text.strip()}`")


def branches_swapped(statement: Node, then: Node, other: Node, source: bytes,
                      ended: Callable[[bytes, bytes], bytes] | None = None) -> Iterator[Site]:
    """The site making the ``then`` and ``other`` (``else``) branches of an ``if``
    ``statement`` trade places, unless they hold the same code.

    ``ended``, given the ``else`` branch's text and what separates the branches, returns
    that text as it must be to stand first (the language may need a terminator).
    """
    first = source[then.start_byte:then.end_byte]
    second = source[other.start_byte:other.end_byte]
    if first.strip() == second.strip():
        return
    middle = source[then.end_byte:other.start_byte]
    if ended is not None:
        second = ended(second, middle)
    swapped_text = (second + middle + first).decode("utf-8", "replace")
    yield Site(then.start_byte, other.end_byte, swapped_text, statement.start_point[0] + 1,
               "if and else branches swapped")


def statement_expression(stmt: Node, await_type: str,
                         awaited: Collection[str] | None = None) -> Node | None:
    """The one expression an expression statement is made of, seen through ``await`` (a
    node of ``await_type``) when it awaits one expression (of a type in ``awaited``, if
    given)."""
    parts = named_children(stmt) if stmt.type == "expression_statement" else []
    part = parts[0] if len(parts) == 1 else None
    if part is not None and part.type == await_type:
        inner = named_children(part)
        part = inner[0] if len(inner) == 1 and (
            awaited is None or inner[0].type in awaited) else None
    return part


class BooleanLiteralSwap(NodeMutator):
    """``true``↔``false``: the boolean literal replaced by the other one, spelled as
    :attr:`other` says for the node's type."""

    node_types = frozenset({"true", "false"})
    other: ClassVar[Mapping[str, str]]

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the other boolean."""
        new = self.other[node.type]
        yield replace_node(node, new, f"`{text(node)}` changed to `{new}`")
