"""Reading Rust source without a parser: module declarations and test code.

Standard library only, and no ``from __future__`` import: the run script
(:mod:`~repogym.toolchains.rust.runner`) is this file's text followed by the runner's,
executed in the sandbox, where repogym is not installed.

:func:`blank` replaces comments and the contents of string and character literals with
spaces (newlines kept), so that braces, ``mod`` and attributes can be found by position
and every offset still names the same line. :func:`scan` then walks the brackets once and
returns what the toolchain needs from a file:

* its **module declarations** (``mod a;``, ``mod a { ... }``, with a ``#[path = "..."]``
  attribute when there is one, and the inline modules they sit in), from which
  :func:`module_map` builds a crate's module tree: module path -> file;
* its **test spans**: the lines of items marked ``#[cfg(test)]`` (or ``cfg(all(test,
  ...))``) and of test functions (``#[test]``, ``#[tokio::test]``...), merged -- test code
  inside a runtime source file, which is never mutated and which a patch may not change;
* whether the file is test code as a whole (an inner ``#![cfg(test)]``) and whether its
  crate is configured out as a whole (an inner ``#![cfg(...)]`` of any kind).

What it gets wrong, it gets wrong conservatively: modules made by macros are not seen
(their tests map to the file the macro was called in).
"""

import posixpath
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

_IDENT = r"(?:r#)?([A-Za-z_][A-Za-z0-9_]*)"
_TOKEN = re.compile(r"#!?\[|\bmod\s+" + _IDENT + r"\s*(?=[;{])|[{}()\[\];]")
_TEST_ATTR = re.compile(r"^(?:[\w:]*::)?test$")
_CFG_TEST = re.compile(r"^cfg\s*\(\s*(?:test|all\s*\((?:.*[\s,(])?test\s*(?:,.*)?\))\s*\)$",
                       re.S)
_PATH_ATTR = re.compile(r'^path\s*=\s*"([^"]*)"$')
_OPEN = {"{": "}", "(": ")", "[": "]"}


@dataclass(frozen=True)
class ModDecl:
    """``mod name;`` (``inline`` False) or ``mod name { ... }`` inside the inline modules
    ``within`` of its file."""

    within: tuple[str, ...]
    name: str
    inline: bool
    path: Optional[str] = None  # its #[path = "..."] attribute
    line: int = 0


@dataclass
class Scan:
    """What :func:`scan` read from one file."""

    mods: list[ModDecl] = field(default_factory=list)
    test_spans: list[tuple[int, int]] = field(default_factory=list)
    all_test: bool = False  # an inner #![cfg(test)]: the whole file is test code
    crate_cfg: bool = False  # an inner #![cfg(...)]: the file may compile to nothing


def blank(text: str) -> str:
    """``text`` with comments and literal contents turned to spaces, newlines kept."""
    out = list(text)
    i, n = 0, len(text)

    def wipe(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            wipe(i, end)
            i = end
        elif text.startswith("/*", i):
            end = _block_comment_end(text, i)
            wipe(i, end)
            i = end
        elif c == '"' or (c in "bcr" and _raw_or_prefixed_string(text, i)):
            start = text.index('"', i)
            end = _string_end(text, i, start)
            wipe(start + 1, end - 1)
            i = end
        elif c == "'":
            end = _char_end(text, i)
            if end:
                wipe(i + 1, end - 1)
                i = end
            else:
                i += 1  # a lifetime
        else:
            i += 1
    return "".join(out)


def _block_comment_end(text: str, i: int) -> int:
    depth, i = 0, i
    while i < len(text):
        if text.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    return len(text)


def _raw_or_prefixed_string(text: str, i: int) -> bool:
    """Whether a ``b"``, ``c"``, ``r"``, ``r#"``, ``br#"``... literal starts at ``i``
    (and not an identifier ending in one of those letters)."""
    if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
        return False
    return re.match(r'(?:b|c|br|cr|r)#*"', text[i:i + 40]) is not None


def _string_end(text: str, i: int, quote: int) -> int:
    """The offset after the string literal whose prefix starts at ``i``, quote at
    ``quote``."""
    prefix = text[i:quote]
    if "r" in prefix:
        closing = '"' + "#" * prefix.count("#")
        end = text.find(closing, quote + 1)
        return len(text) if end < 0 else end + len(closing)
    k = quote + 1
    while k < len(text):
        if text[k] == "\\":
            k += 2
        elif text[k] == '"':
            return k + 1
        else:
            k += 1
    return len(text)


def _char_end(text: str, i: int) -> int:
    """The offset after a character literal at ``i``, or 0 when it is a lifetime."""
    if text.startswith("\\", i + 1):
        end = text.find("'", i + 2)
        return end + 1 if 0 < end < i + 14 else 0
    if i + 2 < len(text) and text[i + 2] == "'" and text[i + 1] != "\n":
        return i + 3
    return 0


def _attr_end(code: str, i: int) -> int:
    """The offset after the attribute whose ``#[`` or ``#![`` starts at ``i``."""
    depth = 0
    for k in range(code.index("[", i), len(code)):
        if code[k] == "[":
            depth += 1
        elif code[k] == "]":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(code)


@dataclass
class _Frame:
    bracket: str
    mod: Optional[str] = None
    test_from: Optional[int] = None  # the line its test item started on


def scan(text: str) -> Scan:
    """Module declarations and test spans of a file's text (module docstring)."""
    code = blank(text)
    starts = [m.start() for m in re.finditer("\n", code)]

    def line(pos: int) -> int:
        lo, hi = 0, len(starts)
        while lo < hi:
            mid = (lo + hi) // 2
            if starts[mid] < pos:
                lo = mid + 1
            else:
                hi = mid
        return lo + 1

    out = Scan()
    stack: list[_Frame] = []
    pending: list[tuple[int, str]] = []  # outer attributes of the next item: (line, text)
    pos = 0
    while True:
        m = _TOKEN.search(code, pos)
        if m is None:
            break
        tok = m.group(0)
        pos = m.end()
        if tok.startswith("#"):
            end = _attr_end(code, m.start())
            body = text[code.index("[", m.start()) + 1:end - 1].strip()
            pos = end
            if tok == "#![":
                if re.match(r"cfg\s*\(", body):
                    out.crate_cfg = out.crate_cfg or not stack
                    out.all_test = out.all_test or (not stack and bool(_CFG_TEST.match(body)))
            else:
                pending.append((line(m.start()), body))
        elif m.group(1):
            _declare(out, stack, pending, m.group(1), code, m.end(), line(m.start()))
            if code[m.end()] == "{":
                pos = m.end() + 1
                stack.append(_Frame("{", m.group(1), _test_start(pending)))
                pending = []
            else:
                pos = m.end() + 1
                start = _test_start(pending)
                if start is not None:
                    out.test_spans.append((start, line(m.end())))
                pending = []
        elif tok in _OPEN:
            start = _test_start(pending) if tok == "{" else None
            stack.append(_Frame(tok, None, start))
            if tok == "{":
                pending = []
        elif tok in ")]}":
            while stack and _OPEN[stack[-1].bracket] != tok:
                stack.pop()  # unbalanced: recover
            if stack:
                frame = stack.pop()
                if frame.test_from is not None:
                    out.test_spans.append((frame.test_from, line(m.start())))
            if tok == "}":
                pending = []
        elif tok == ";" and (not stack or stack[-1].bracket == "{"):
            start = _test_start(pending)
            if start is not None:
                out.test_spans.append((start, line(m.start())))
            pending = []
    out.test_spans = merge_spans(out.test_spans)
    return out


def _declare(out: Scan, stack: list[_Frame], pending: list[tuple[int, str]], name: str,
             code: str, end: int, at: int) -> None:
    if any(f.bracket != "{" or f.mod is None for f in stack):
        return  # inside a function, an impl, a macro call: not a module of the tree
    path = next((p.group(1) for _, body in pending if (p := _PATH_ATTR.match(body))), None)
    out.mods.append(ModDecl(within=tuple(f.mod for f in stack if f.mod),
                            name=name, inline=code[end] == "{", path=path, line=at))


def _test_start(pending: list[tuple[int, str]]) -> Optional[int]:
    """The line the next item starts on when its attributes make it test code."""
    if any(_TEST_ATTR.match(body) or _CFG_TEST.match(body) for _, body in pending):
        return pending[0][0]
    return None


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Line spans sorted, overlapping or touching ones merged."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def module_map(root: str, read: Callable[[str], Optional[str]]) -> dict[str, str]:
    """A crate's module tree: module path (``""`` for the crate root, ``a::b``) -> the
    repo-relative file it is written in, from the crate root file ``root``; ``read``
    returns a file's text, None when there is no such file."""
    out = {"": root}
    todo = [("", root, posixpath.dirname(root))]
    seen = {root}
    while todo:
        prefix, path, moddir = todo.pop()
        text = read(path)
        if text is None:
            continue
        for decl in scan(text).mods:
            modpath = "::".join(p for p in (prefix, *decl.within, decl.name) if p)
            if decl.inline:
                out.setdefault(modpath, path)
                continue
            found = _mod_file(path, moddir, decl, read)
            if found is None or found[0] in seen:
                continue
            child, child_dir = found
            seen.add(child)
            out[modpath] = child
            todo.append((modpath, child, child_dir))
    return out


def _mod_file(path: str, moddir: str, decl: ModDecl,
              read: Callable[[str], Optional[str]]) -> Optional[tuple[str, str]]:
    """(file, the folder its own ``mod x;`` look in) of an out-of-line module."""
    base = posixpath.join(moddir, *decl.within)
    if decl.path is not None:
        start = base if decl.within else posixpath.dirname(path)
        child = posixpath.normpath(posixpath.join(start, decl.path))
        return (child, posixpath.dirname(child)) if read(child) is not None else None
    flat = posixpath.normpath(posixpath.join(base, decl.name + ".rs"))
    if read(flat) is not None:
        return flat, posixpath.normpath(posixpath.join(base, decl.name))
    nested = posixpath.normpath(posixpath.join(base, decl.name, "mod.rs"))
    if read(nested) is not None:
        return nested, posixpath.dirname(nested)
    return None


def test_lines(text: str) -> tuple[tuple[int, int], ...]:
    """The lines (1-based, both ends included) of a source file's text that are test code:
    ``#[cfg(test)]`` items, test functions, or the whole file under an inner
    ``#![cfg(test)]``. Comments are ignored; nested spans are merged."""
    found = scan(text)
    if found.all_test:
        return ((1, max(1, text.count("\n") + (0 if text.endswith("\n") else 1))),)
    return tuple(found.test_spans)


def file_of(mods: dict[str, str], name: str) -> str:
    """The file of the libtest test ``name`` (``parser::tests::parses``) in a crate whose
    module tree is ``mods``: that of its longest module path the tree knows."""
    parts = name.split("::")[:-1]
    for k in range(len(parts), -1, -1):
        found = mods.get("::".join(parts[:k]))
        if found is not None:
            return found
    return mods.get("", "")


__all__ = ["ModDecl", "Scan", "blank", "file_of", "merge_spans", "module_map", "scan",
           "test_lines"]
