"""Put a model's version of a function back into its file.

See :mod:`repogym.generators.llm.functions` for what is replaced: the body after the
docstring, re-indented; decorators, signature and docstring stay the file's own.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Iterator

from tree_sitter import Node

from repogym import pyast
from repogym.generators.llm.functions import FunctionTarget, RejectedAnswer, body_rows, extract_code
from repogym.generators.procedural import parse_python, parses_cleanly
from repogym.patches import split_lines

_FUNCTION_AST = (ast.FunctionDef, ast.AsyncFunctionDef)


def splice_answer(target: FunctionTarget, answer: str, *, strip_new_comments: bool = False) -> str:
    """The file's text with the function's body replaced by the answer's.

    Args:
        target: the function the model was asked about.
        answer: the model's reply (a fenced ```python block, or bare code).
        strip_new_comments: drop every comment that was not already in the function
            (a planted bug must not be pointed at).

    Raises:
        RejectedAnswer: the answer is unusable; the message says why.
    """
    code = textwrap.dedent(extract_code(answer))
    if strip_new_comments:
        code = strip_comments(code, keep=target.comments)
    module = _parse(code)
    fn = _find_function(module, target)
    _check_signature(fn, target)
    body = _new_body(code, fn, target)
    lines = split_lines(target.text)
    if body and lines[target.end_row].endswith("\n") and not body[-1].endswith("\n"):
        body[-1] += "\n"
    new_text = "".join(lines[:target.body_row] + body + lines[target.end_row + 1:])
    _check_result(target, new_text)
    return new_text


def _parse(code: str) -> ast.Module:
    if not code.strip():
        raise RejectedAnswer("empty answer")
    try:
        return pyast.parse(code)
    except (SyntaxError, ValueError) as exc:
        raise RejectedAnswer(f"answer does not parse: {exc}") from None


def _class_name(target: FunctionTarget) -> str | None:
    if target.class_header is None:
        return None
    return target.class_header.removeprefix("class ").split("(")[0].rstrip(":").strip()


def _known_imports(target: FunctionTarget) -> set[str]:
    known: set[str] = set()
    for text in target.imports:
        try:
            known.update(ast.dump(s) for s in pyast.parse(text).body)
        except SyntaxError:
            continue
    return known


def _find_function(module: ast.Module, target: FunctionTarget) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The answer's definition of the target; only known imports may come with it."""
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    known = _known_imports(target)
    for stmt in module.body:
        if isinstance(stmt, _FUNCTION_AST) and stmt.name == target.name:
            found.append(stmt)
        elif isinstance(stmt, ast.ClassDef) and stmt.name == _class_name(target):
            found.extend(s for s in stmt.body
                         if isinstance(s, _FUNCTION_AST) and s.name == target.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)) and ast.dump(stmt) in known:
            continue
        else:
            raise RejectedAnswer(f"answer has other top-level code (line {stmt.lineno})")
    if len(found) != 1:
        raise RejectedAnswer(f"answer defines {target.name!r} {len(found)} times")
    return found[0]


def _check_signature(fn: ast.FunctionDef | ast.AsyncFunctionDef, target: FunctionTarget) -> None:
    try:
        original = pyast.parse(target.code).body[0]
    except (SyntaxError, ValueError, IndexError):
        return  # the original does not compile with this Python: the name had to do
    if not isinstance(original, _FUNCTION_AST):
        return
    same = (type(fn) is type(original) and ast.dump(fn.args) == ast.dump(original.args)
            and ast.dump(fn.returns or ast.Constant(None))
            == ast.dump(original.returns or ast.Constant(None)))
    if not same:
        raise RejectedAnswer(f"answer changes the signature of {target.qualname}")


def _ts_function(code: str, row: int, name: str) -> Node:
    """The tree-sitter node of the function whose ``def`` is on ``row``."""
    stack = [parse_python(code.encode("utf-8")).root_node]
    while stack:
        node = stack.pop()
        if node.type == "function_definition" and node.start_point.row == row:
            name_node = node.child_by_field_name("name")
            if name_node is not None and (name_node.text or b"").decode() == name:
                return node
        stack.extend(node.named_children)
    raise RejectedAnswer("answer's function not found by the parser")


def _new_body(code: str, fn: ast.FunctionDef | ast.AsyncFunctionDef,
              target: FunctionTarget) -> list[str]:
    """The answer's body lines after its docstring, at the target's indentation."""
    rows = body_rows(_ts_function(code, fn.lineno - 1, target.name))
    if rows is None:
        raise RejectedAnswer("answer's body shares a line with its header or docstring")
    start, end, _ = rows
    body = split_lines(code)[start:end + 1]
    if not "".join(body).strip():
        raise RejectedAnswer("answer's function has no body")
    return _reindent(body, target.indent)


def _reindent(lines: list[str], indent: str) -> list[str]:
    """``lines`` moved to ``indent`` (left alone when already there)."""
    current = min((ln[:len(ln) - len(ln.lstrip())] for ln in lines if ln.strip()), key=len)
    if current == indent:
        return list(lines)
    dedented = split_lines(textwrap.dedent("".join(lines)))
    return [indent + ln if ln.strip() else ln for ln in dedented]


def _compiles(text: str) -> ast.Module | None:
    try:
        module = pyast.parse(text)
        pyast.compile_tree(module, "<llm>")
    except (SyntaxError, ValueError):
        return None
    return module


def _check_result(target: FunctionTarget, new_text: str) -> None:
    if new_text == target.text:
        raise RejectedAnswer("answer is identical to the original")
    if not parses_cleanly(new_text.encode("utf-8")):
        raise RejectedAnswer("the spliced file does not parse")
    before = _compiles(target.text)
    if before is None:
        return
    after = _compiles(new_text)
    if after is None:
        raise RejectedAnswer("the spliced file does not compile")
    if ast.dump(before) == ast.dump(after):
        raise RejectedAnswer("answer is the original code (layout or comments aside)")


def strip_comments(code: str, keep: frozenset[str] | set[str] = frozenset()) -> str:
    """``code`` without the comments not in ``keep``; lines left empty are removed.

    Code that does not parse is returned unchanged.
    """
    tree = parse_python(code.encode("utf-8"))
    if tree.root_node.has_error:
        return code
    lines = [ln.encode("utf-8") for ln in split_lines(code)]
    drop: set[int] = set()
    for node in _comment_nodes(tree.root_node):
        if (node.text or b"").decode("utf-8", "replace").strip() in keep:
            continue
        row, (_, start), (_, end) = node.start_point.row, node.start_point, node.end_point
        line = lines[row]
        lines[row] = line[:start].rstrip() + line[end:]
        if not lines[row].strip():
            drop.add(row)
    return b"".join(ln for i, ln in enumerate(lines) if i not in drop).decode("utf-8")


def _comment_nodes(root: Node) -> Iterator[Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            yield node
        stack.extend(node.children)
