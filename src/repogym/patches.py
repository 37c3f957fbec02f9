"""Git-style unified diffs: make them, read them, reverse them.

Every candidate carries its changes as patches that ``git apply`` accepts, so this module
writes exactly that format::

    diff --git a/pkg/mod.py b/pkg/mod.py
    --- a/pkg/mod.py
    +++ b/pkg/mod.py
    @@ -10,7 +10,7 @@ optional section text
     context line
    -removed line
    +added line
    \\ No newline at end of file        <- follows a line that has no trailing newline

Hunks have three lines of context; a range of length one is written without its length
(``-10``), an empty range as the line before it (``-9,0``), as GNU diff and git do.

Reading (``changed_lines``, ``diff_text_lines``, ``reverse_diff``) follows the hunk line
counts, so a removed line whose text happens to start with ``-- a/`` is never taken for a
file header. Only lines are split on ``"\\n"``; a ``"\\r"`` stays part of its line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

NO_NEWLINE = "\\ No newline at end of file"
DEV_NULL = "/dev/null"
_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


def unified_diff(path: str, before: str, after: str, *, context: int = 3) -> str:
    """A git-style diff that turns ``before`` into ``after`` for the file at ``path``.

    Args:
        path: the file's repository-relative path (POSIX separators).
        before: the file's text before the change.
        after: the file's text after the change.
        context: lines of context around each change.

    Returns:
        The diff, ending with a newline; the empty string when the texts are equal.
    """
    if before == after:
        return ""
    out = [f"diff --git a/{path} b/{path}\n"]
    body = difflib.unified_diff(split_lines(before), split_lines(after),
                                f"a/{path}", f"b/{path}", n=context)
    for line in body:
        out.append(line if line.endswith("\n") else f"{line}\n{NO_NEWLINE}\n")
    return "".join(out)


def new_file_diff(path: str, text: str) -> str:
    """A git-style diff creating ``path`` with ``text`` (``git apply`` needs /dev/null here)."""
    body = unified_diff(path, "", text)
    if not body:
        return ""
    head, _, hunks = body.partition("@@")
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/{path}\n@@{hunks}")


def split_lines(text: str) -> list[str]:
    """``text`` cut after every ``"\\n"`` (and nowhere else), keeping the newlines."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


@dataclass
class _Line:
    """One line of a hunk: its prefix (`` ``, ``-`` or ``+``) and text, without newline."""

    prefix: str
    text: str
    no_newline: bool = False


@dataclass
class _Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str = ""
    lines: list[_Line] = field(default_factory=list)


@dataclass
class _FileDiff:
    header: list[str] = field(default_factory=list)  # "diff --git", "index", mode lines
    old: str | None = None  # raw name after "--- ", e.g. "a/x.py" or "/dev/null"
    new: str | None = None  # raw name after "+++ "
    hunks: list[_Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The file's path without its ``a/``/``b/`` prefix (the new one unless deleted)."""
        for raw in (self.new, self.old):
            if raw is not None and raw != DEV_NULL:
                return _strip_prefix(raw)
        return _paths_from_git_line(self.header[0])[1] if self.header else ""


def _strip_prefix(raw: str) -> str:
    name = _unquote(raw.split("\t")[0])
    return name[2:] if name[:2] in ("a/", "b/") else name


def _unquote(name: str) -> str:
    """Undo git's C-style quoting of unusual path names (``"a/caf\\303\\251.py"``)."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    raw = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return raw.encode("latin-1").decode("utf-8", "replace")


def _paths_from_git_line(line: str) -> tuple[str, str]:
    rest = line[len("diff --git "):]
    cut = rest.rfind(" b/")
    if rest.startswith("a/") and cut > 0:
        return rest[2:cut], rest[cut + 3:]
    old, _, new = rest.partition(" ")
    return _strip_prefix(old), _strip_prefix(new)


def _parse(diff: str) -> list[_FileDiff]:
    """Split a (multi-file) diff into files and hunks, following the hunk counts."""
    files: list[_FileDiff] = []
    hunk: _Hunk | None = None
    need_old = need_new = 0
    for line in diff.split("\n"):
        if need_old > 0 or need_new > 0:
            assert hunk is not None
            prefix = line[:1] if line[:1] in ("-", "+", " ", "\\") else " "
            if prefix == "\\":
                _mark_no_newline(hunk)
                continue
            hunk.lines.append(_Line(prefix, line[1:]))
            need_old -= prefix != "+"
            need_new -= prefix != "-"
        elif line.startswith("\\") and hunk is not None:
            _mark_no_newline(hunk)
        elif line.startswith("diff --git "):
            files.append(_FileDiff(header=[line]))
            hunk = None
        elif line.startswith("--- ") and (not files or files[-1].hunks or files[-1].old):
            files.append(_FileDiff(old=line[4:]))
            hunk = None
        elif line.startswith("--- ") and files:
            files[-1].old = line[4:]
        elif line.startswith("+++ ") and files:
            files[-1].new = line[4:]
        elif (match := _HUNK_RE.match(line)) and files:
            hunk = _new_hunk(match)
            files[-1].hunks.append(hunk)
            need_old, need_new = hunk.old_len, hunk.new_len
        elif files and not files[-1].hunks and line:
            files[-1].header.append(line)
    return files


def _new_hunk(match: re.Match[str]) -> _Hunk:
    a, b, c, d, section = match.groups()
    return _Hunk(int(a), 1 if b is None else int(b), int(c), 1 if d is None else int(d),
                 section)


def _mark_no_newline(hunk: _Hunk) -> None:
    if hunk.lines:
        hunk.lines[-1].no_newline = True


def changed_lines(diff: str) -> dict[str, list[int]]:
    """Old-side line numbers each file's hunks remove or change, sorted, per file path.

    A pure insertion (added lines with nothing removed) is attributed to the old line it
    follows (line 1 when it comes first), so coverage of that spot can still be looked
    up. A new file has no old lines and maps to an empty list.
    """
    result: dict[str, list[int]] = {}
    for fd in _parse(diff):
        lines: set[int] = set()
        if fd.old != DEV_NULL:
            for hunk in fd.hunks:
                lines |= _hunk_old_lines(hunk)
        result[fd.path] = sorted(lines)
    return result


def carried_lines(diff: str, path: str, lines: Iterable[int]) -> dict[int, int | None]:
    """Where old-side ``lines`` of ``path`` are on the new side of ``diff`` (a diff between
    two versions of the tree): shifted past the hunks before them, or None for a line a
    hunk removes or changes. A file the diff does not name keeps its numbers."""
    hunks = next((fd.hunks for fd in _parse(diff) if fd.path == path), [])
    return {line: _carried(hunks, line) for line in lines}


def _carried(hunks: list[_Hunk], line: int) -> int | None:
    shift = 0
    for hunk in hunks:
        start = hunk.old_start if hunk.old_len else hunk.old_start + 1
        if line < start:
            break
        if line < start + hunk.old_len:
            return _within(hunk, line)
        shift += hunk.new_len - hunk.old_len
    return line + shift


def _within(hunk: _Hunk, line: int) -> int | None:
    """A line inside a hunk's old range: its new number when it is context, else None."""
    old_no = hunk.old_start if hunk.old_len else hunk.old_start + 1
    new_no = hunk.new_start if hunk.new_len else hunk.new_start + 1
    for ln in hunk.lines:
        if ln.prefix == "+":
            new_no += 1
            continue
        if old_no == line:
            return new_no if ln.prefix == " " else None
        old_no += 1
        new_no += ln.prefix == " "
    return None


def patch_paths(diff: str) -> set[str]:
    """Every path a diff names: both sides of each file, renames and copies included."""
    paths: set[str] = set()
    for fd in _parse(diff):
        for raw in (fd.old, fd.new):
            if raw is not None and raw.split("\t")[0] != DEV_NULL:
                paths.add(_strip_prefix(raw))
        for line in fd.header:
            if line.startswith("diff --git "):
                paths.update(_paths_from_git_line(line))
            for key in ("rename from ", "rename to ", "copy from ", "copy to "):
                if line.startswith(key):
                    paths.add(_unquote(line[len(key):]))
    paths.discard("")
    return paths


def _hunk_old_lines(hunk: _Hunk) -> set[int]:
    lines: set[int] = set()
    old_no = hunk.old_start if hunk.old_len else hunk.old_start + 1
    removed_in_run = False
    for line in hunk.lines:
        if line.prefix == "-":
            lines.add(old_no)
            old_no += 1
            removed_in_run = True
        elif line.prefix == "+":
            if not removed_in_run:
                lines.add(max(1, old_no - 1))
        else:
            old_no += 1
            removed_in_run = False
    return lines


def diff_text_lines(diff: str) -> list[str]:
    """The stripped text of every added and removed line, in order (blank ones dropped).

    Meant for leak checks: does a statement or a hint quote the patch?
    """
    out: list[str] = []
    for fd in _parse(diff):
        for hunk in fd.hunks:
            out.extend(s for ln in hunk.lines if ln.prefix != " " and (s := ln.text.strip()))
    return out


def reverse_diff(diff: str) -> str:
    """The diff that undoes ``diff``: ``git apply`` of one then the other is a no-op.

    Old and new sides swap in file names, ``index`` lines, modes, hunk ranges and line
    prefixes; within each changed run the (new) removals come before the additions.
    """
    if not diff.strip():
        return ""
    return "".join(_format_file(_reverse_file(fd)) for fd in _parse(diff))


def _reverse_file(fd: _FileDiff) -> _FileDiff:
    old = _swap_side(fd.new, "a/")
    new = _swap_side(fd.old, "b/")
    header = [_reverse_header_line(h) for h in fd.header]
    header = _swap_pairs(header, "old mode ", "new mode ")
    header = _swap_pairs(header, "rename from ", "rename to ")
    hunks = [_reverse_hunk(h) for h in fd.hunks]
    return _FileDiff(header=header, old=old, new=new, hunks=hunks)


def _swap_side(raw: str | None, prefix: str) -> str | None:
    if raw is None or raw == DEV_NULL:
        return raw
    name, tab, rest = raw.partition("\t")
    if name[:2] in ("a/", "b/"):
        name = prefix + name[2:]
    return name + tab + rest


def _reverse_header_line(line: str) -> str:
    if line.startswith("diff --git "):
        old, new = _paths_from_git_line(line)
        return f"diff --git a/{new} b/{old}"
    if match := re.match(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)(.*)$", line):
        return f"index {match[2]}..{match[1]}{match[3]}"
    if line.startswith("new file mode "):
        return "deleted file mode " + line[len("new file mode "):]
    if line.startswith("deleted file mode "):
        return "new file mode " + line[len("deleted file mode "):]
    return line


def _swap_pairs(header: list[str], first: str, second: str) -> list[str]:
    """Swap the values of two header lines such as ``old mode X`` / ``new mode Y``."""
    a = next((i for i, h in enumerate(header) if h.startswith(first)), None)
    b = next((i for i, h in enumerate(header) if h.startswith(second)), None)
    if a is None or b is None:
        return header
    out = list(header)
    out[a] = first + header[b][len(second):]
    out[b] = second + header[a][len(first):]
    return out


def _reverse_hunk(hunk: _Hunk) -> _Hunk:
    flip = {"-": "+", "+": "-", " ": " "}
    lines: list[_Line] = []
    run: list[_Line] = []
    for line in [*hunk.lines, _Line(" ", "", False)]:  # a sentinel flushes the last run
        if line.prefix == " ":
            run.sort(key=lambda ln: ln.prefix != "+")  # old "+" become the new "-" lines
            lines.extend(_Line(flip[ln.prefix], ln.text, ln.no_newline) for ln in run)
            lines.append(line)
            run = []
        else:
            run.append(line)
    return _Hunk(hunk.new_start, hunk.new_len, hunk.old_start, hunk.old_len,
                 hunk.section, lines[:-1])


def _format_file(fd: _FileDiff) -> str:
    out = [h + "\n" for h in fd.header]
    if fd.old is not None or fd.new is not None:
        out.append(f"--- {fd.old}\n+++ {fd.new}\n")
    for hunk in fd.hunks:
        out.append(f"@@ -{_range(hunk.old_start, hunk.old_len)} "
                   f"+{_range(hunk.new_start, hunk.new_len)} @@{hunk.section}\n")
        for line in hunk.lines:
            out.append(f"{line.prefix}{line.text}\n")
            if line.no_newline:
                out.append(NO_NEWLINE + "\n")
    return "".join(out)


def _range(start: int, length: int) -> str:
    return str(start) if length == 1 else f"{start},{length}"
