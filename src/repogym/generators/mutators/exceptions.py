"""Exception mutators: unwrap a ``try``, catch or raise a different builtin exception."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import (
    MUTATORS,
    NodeMutator,
    Site,
    named_children,
    replace_node,
    text,
)
from repogym.generators.mutators.edits import unwrapped
from repogym.generators.mutators.runtime import holds_off_limits

EXCEPTION_SWAPS: dict[str, str] = {
    "Exception": "ValueError",
    "ValueError": "TypeError", "TypeError": "ValueError",
    "KeyError": "IndexError", "IndexError": "KeyError", "LookupError": "ValueError",
    "AttributeError": "TypeError", "NameError": "AttributeError",
    "RuntimeError": "ValueError", "AssertionError": "ValueError",
    "ArithmeticError": "ValueError", "ZeroDivisionError": "ValueError",
    "OverflowError": "ValueError", "RecursionError": "ValueError",
    "StopIteration": "ValueError", "EOFError": "ValueError",
    "UnicodeError": "TypeError",
    "UnicodeDecodeError": "UnicodeEncodeError", "UnicodeEncodeError": "UnicodeDecodeError",
    "OSError": "ValueError", "IOError": "ValueError", "EnvironmentError": "ValueError",
    "FileNotFoundError": "PermissionError", "PermissionError": "FileNotFoundError",
    "FileExistsError": "FileNotFoundError", "IsADirectoryError": "FileNotFoundError",
    "NotADirectoryError": "FileNotFoundError",
    "ConnectionError": "TimeoutError", "TimeoutError": "ConnectionError",
    "ImportError": "AttributeError", "ModuleNotFoundError": "AttributeError",
}
"""Each builtin exception and a sibling that catches a different set of errors."""
_HANDLERS = frozenset({"except_clause", "except_group_clause"})


@MUTATORS.register("remove_try")
class RemoveTry(NodeMutator):
    """A ``try`` with handlers is unwrapped: its body, ``else`` and ``finally`` run in turn,
    dedented, and no exception is caught.

    Not when the statement holds off-limits code (a logging call, a nested definition...).
    """

    node_types = frozenset({"try_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site replacing the statement by the code its success path runs."""
        body = node.child_by_field_name("body")
        clauses = named_children(node)
        if body is None or not any(c.type in _HANDLERS for c in clauses):
            return
        if holds_off_limits(node):
            return
        blocks = [body, *(c.child_by_field_name("body") or named_children(c)[-1]
                          for c in clauses if c.type in ("else_clause", "finally_clause"))]
        replacement = unwrapped(node, blocks, source)
        if replacement is not None:
            yield Site(node.start_byte, node.end_byte, replacement, node.start_point[0] + 1,
                       "`try` unwrapped: its exception handlers are gone")


def _caught(clause: Node) -> Node | None:
    """The expression naming what an ``except`` clause catches (``as`` name aside)."""
    parts = [c for c in named_children(clause) if c.type != "block"]
    if not parts:
        return None
    if parts[0].type == "as_pattern":
        inner = named_children(parts[0])
        return inner[0] if inner else None
    return parts[0]


def _raised(stmt: Node) -> Node | None:
    """The exception class name of ``raise Name`` or ``raise Name(...)``."""
    parts = named_children(stmt)
    if not parts:
        return None
    exc = parts[0]
    if exc.type == "call":
        exc = exc.child_by_field_name("function") or exc
    return exc if exc.type == "identifier" else None


def _narrowed(group: Node) -> Iterator[Site]:
    """One site per member of ``(A, B, ...)``: that member is no longer caught."""
    members = named_children(group)
    if len(members) < 2:
        return
    for i, member in enumerate(members):
        rest = [text(m) for j, m in enumerate(members) if j != i]
        new = rest[0] if len(rest) == 1 else f"({', '.join(rest)})"
        yield replace_node(group, new, f"`{text(member)}` no longer caught")


@MUTATORS.register("exception_swap")
class ExceptionSwap(NodeMutator):
    """A handler catches, or a ``raise`` raises, a different builtin exception.

    ``except ValueError:`` -> ``except TypeError:``; ``except (A, B):`` -> ``except B:``
    (one site per member); ``raise KeyError(k)`` -> ``raise IndexError(k)``.
    """

    node_types = frozenset({*_HANDLERS, "raise_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """Sites for the exception the clause catches or the statement raises."""
        if node.type == "raise_statement":
            name = _raised(node)
            verb = "raised"
        else:
            name = _caught(node)
            verb = "caught"
        if name is not None and name.type == "tuple":
            yield from _narrowed(name)
        elif name is not None and text(name) in EXCEPTION_SWAPS:
            new = EXCEPTION_SWAPS[text(name)]
            yield replace_node(name, new, f"{verb} `{text(name)}` changed to `{new}`")
