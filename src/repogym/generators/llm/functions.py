"""Functions an LLM may rewrite, what it is shown of them, and how its answer goes back in.

    runtime files ──tree-sitter──▶ FunctionTarget (signature, docstring, imports, class)
    model answer ──first ```python block──▶ same signature? ──▶ new body spliced in

Only the *body after the docstring* is replaced: the file keeps its own decorators,
signature (with its layout) and docstring, so a patch touches behaviour only. The new
body is re-indented to the original's indentation. An answer is rejected
(:class:`RejectedAnswer`, with the reason) when it does not parse, defines another
signature or other top-level code, leaves the file unparseable or changes nothing.

A target is a function (or method) with at least ``MIN_STATEMENTS`` statements in its
body, not counting the docstring, not nested in another function, whose body starts on
a line of its own. Choice is deterministic: sorted, then shuffled by
``random.Random(f"{seed}:{salt}")``.
"""

from __future__ import annotations

import logging
import random
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from tree_sitter import Node

from repogym.generators.procedural import parse_python
from repogym.patches import split_lines

log = logging.getLogger(__name__)

MIN_STATEMENTS = 3
_FENCE_RE = re.compile(r"```[ \t]*(python3?|py)?[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)
_IMPORTS = frozenset({"import_statement", "import_from_statement", "future_import_statement"})


class RejectedAnswer(ValueError):
    """A model's answer that cannot be used; the message says why."""


@dataclass(frozen=True)
class FunctionTarget:
    """One function in one file, with what the model is shown of it.

    Attributes:
        path: the file, repository-relative (POSIX).
        qualname: ``"func"`` or ``"Klass.method"``.
        text: the whole file.
        def_row: 0-based row of the ``def`` (after decorators).
        body_row: 0-based first row that is replaced (after the docstring).
        end_row: 0-based last row of the function.
        indent: the body's indentation.
        code: the whole function with its decorators, dedented.
        stub: decorators, signature and docstring with ``...`` as the body, dedented.
        imports: the module-level import statements.
        class_header: ``"class Klass(Base):"`` for a method, else None.
        comments: the comments in the function (stripped), to tell added ones apart.
    """

    path: str
    qualname: str
    text: str
    def_row: int
    body_row: int
    end_row: int
    indent: str
    code: str
    stub: str
    imports: tuple[str, ...]
    class_header: str | None
    comments: frozenset[str]

    @property
    def name(self) -> str:
        """The function's own name."""
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def line(self) -> int:
        """The 1-based line of the ``def``."""
        return self.def_row + 1


def _text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def _is_docstring(node: Node) -> bool:
    parts = [c for c in node.named_children if c.type != "comment"]
    return (node.type == "expression_statement" and len(parts) == 1
            and parts[0].type in ("string", "concatenated_string"))


def _statements(func: Node) -> list[Node]:
    body = func.child_by_field_name("body")
    return [] if body is None else [c for c in body.named_children if c.type != "comment"]


def _header_end(node: Node) -> Node | None:
    """The ``:`` token that ends a ``def`` or ``class`` header."""
    return next((c for c in node.children if c.type == ":"), None)


def _scopes(node: Node) -> list[Node]:
    """The class and function definitions around ``node``, innermost first."""
    out, current = [], node.parent
    while current is not None:
        if current.type in ("function_definition", "class_definition"):
            out.append(current)
        current = current.parent
    return out


def _walk_functions(root: Node) -> Iterator[Node]:
    """Every function definition not nested in another function, in source order."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            yield node
            continue
        stack.extend(reversed(node.named_children))


def body_rows(func: Node) -> tuple[int, int, Node | None] | None:
    """(first replaced row, last row, docstring node) of a function, 0-based.

    None when the body starts on the header's line or shares the docstring's line.
    """
    body, colon, stmts = func.child_by_field_name("body"), _header_end(func), _statements(func)
    if body is None or colon is None or not stmts:
        return None
    doc = stmts[0] if _is_docstring(stmts[0]) else None
    if body.start_point.row <= colon.end_point.row:
        return None
    start = doc.end_point.row + 1 if doc is not None else body.start_point.row
    rest = stmts[1:] if doc is not None else stmts
    if rest and rest[0].start_point.row < start:
        return None  # a statement shares the docstring's line
    return start, func.end_point.row, doc


def _leading_ws(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def _target(path: str, text: str, lines: list[str], imports: tuple[str, ...],
            func: Node) -> FunctionTarget | None:
    """The target for one function node, or None when it is not a candidate."""
    rows = body_rows(func)
    stmts = _statements(func)
    if rows is None or len(stmts) - (rows[2] is not None) < MIN_STATEMENTS:
        return None
    body_row, end_row, doc = rows
    def_row = func.start_point.row
    scopes = _scopes(func)
    names = [_text(s.child_by_field_name("name")) for s in reversed(scopes)]
    qualname = ".".join([*names, _text(func.child_by_field_name("name"))])
    klass = scopes[0] if scopes and scopes[0].type == "class_definition" else None
    indent = _leading_ws(lines[stmts[0].start_point.row])
    parent = func.parent
    top = parent if parent is not None and parent.type == "decorated_definition" else func
    head = "".join(lines[top.start_point.row:body_row])
    stub = textwrap.dedent(head + f"{indent}...\n")
    return FunctionTarget(
        path=path, qualname=qualname, text=text, def_row=def_row, body_row=body_row,
        end_row=end_row, indent=indent,
        code=textwrap.dedent("".join(lines[top.start_point.row:end_row + 1])),
        stub=stub, imports=imports, class_header=_class_header(klass),
        comments=frozenset(comments_in(func)))


def _class_header(klass: Node | None) -> str | None:
    colon = _header_end(klass) if klass is not None else None
    if klass is None or colon is None:
        return None
    return " ".join((klass.text or b"")[:colon.end_byte - klass.start_byte].decode().split())


def comments_in(node: Node) -> Iterator[str]:
    """The stripped text of every comment under ``node``."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "comment":
            yield _text(current).strip()
        stack.extend(current.children)


def file_targets(path: str, text: str,
                 wanted: set[int] | None = None) -> list[FunctionTarget]:
    """The targets in one file's text; with ``wanted``, only functions covering those lines."""
    tree = parse_python(text.encode("utf-8"))
    if tree.root_node.has_error:
        return []
    lines = split_lines(text)
    imports = tuple(_text(c) for c in tree.root_node.named_children if c.type in _IMPORTS)
    out = []
    for func in _walk_functions(tree.root_node):
        target = _target(path, text, lines, imports, func)
        if target is None:
            continue
        if wanted is not None and not any(target.line <= n <= target.end_row + 1 for n in wanted):
            continue
        out.append(target)
    return out


def select_targets(root: Path, files: Sequence[str], *, seed: int, salt: str,
                   lines: Mapping[str, set[int]] | None = None) -> list[FunctionTarget]:
    """Every target in ``files`` (under ``root``), in a seed-determined order.

    Files that cannot be read, decoded or parsed are skipped. With ``lines``, only
    functions that cover one of the given 1-based lines of their file are kept.
    """
    targets: list[FunctionTarget] = []
    for path in sorted(set(files)):
        wanted = None if lines is None else lines.get(path, set())
        if wanted is not None and not wanted:
            continue
        try:
            text = (root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            log.debug("skipping %s: %s", path, exc)
            continue
        targets.extend(file_targets(path, text, wanted))
    random.Random(f"{seed}:{salt}").shuffle(targets)
    return targets


def extract_code(answer: str) -> str:
    """The first ```python fenced block of an answer (else the first fenced block, else all)."""
    blocks: list[tuple[str, str]] = _FENCE_RE.findall(answer)
    tagged = [code for lang, code in blocks if lang]
    untagged = [code for _, code in blocks]
    return (tagged or untagged or [answer])[0]
