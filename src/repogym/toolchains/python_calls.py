"""Call evidence for Python tasks: which functions a patch changes, and what tests call.

    changed_functions(patch, read) -> [Target]        (host, Python ``ast``)
    call_tracer(tests, targets)    -> RunPlugin        (pass to ``run_tests(plugins=[...])``)
    parse_calls(run.extras[...])   -> CallTrace

The tracer is the pytest plugin ``plugins/repogym_calls.py`` (its docstring has the
format). Run it once in the broken state and once in the gold state over the F2P tests,
with the targets of the patch between them; a statement writer compares the two traces
(:class:`~repogym.schemas.calls.StatementEvidence`). Its output is written beside code
under test, so it is parsed defensively and never graded on.
"""

from __future__ import annotations

import ast
import json
import re
from importlib import resources
from typing import Any, Callable, Iterable, Iterator, Sequence

from pydantic import ValidationError

from repogym import pyast
from repogym.patches import changed_lines, split_lines
from repogym.schemas.calls import CallKind, CallRecord, CallTrace, Target, TargetKind
from repogym.toolchains.base import RunPlugin

PLUGIN_NAME = "calls"
PLUGIN_FILE = "repogym_calls.py"
MAX_CALLS = 40  # recorded calls per test
MAX_REPR = 80  # characters of an argument's or a result's repr
MAX_EVENTS = 1_000_000  # calls watched per test (about a second) before the tracer steps aside
MAX_FIELD = 400  # what the host keeps of any text field, whatever the sandbox wrote
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

Reader = Callable[[str], "str | None"]


def changed_functions(patch: str, read: Reader) -> list[Target]:
    """The functions (and scopes) whose body holds a line the patch changes, on both sides.

    Args:
        patch: a unified diff (several files allowed); only ``.py`` files count.
        read: ``path -> text`` of a file *before* the patch (its old side), None if absent;
            the new side is the patch applied to it.

    Returns:
        Old-side targets, then new-side ones (each located in its own side's lines), without
        duplicates: the innermost function holding a changed line; a changed line outside
        every function gives its class (``TargetKind.klass``) or the module.
    """
    targets: list[Target] = []
    for path in changed_lines(patch):
        if not path.endswith(".py"):
            continue
        old = read(path)
        new = apply_file_patch(old or "", patch, path)
        removed, added = _changed_sides(patch, path)
        for text, lines in ((old, removed), (new, added)):
            for target in _targets_in(path, text, lines):
                if target not in targets:
                    targets.append(target)
    return targets


def _changed_sides(patch: str, path: str) -> tuple[list[int], list[int]]:
    """The old-side line numbers the patch removes and the new-side ones it adds."""
    removed: list[int] = []
    added: list[int] = []
    for old_start, new_start, body in _hunks_of(patch, path):
        old_no, new_no = old_start, new_start
        for prefix, _ in body:
            if prefix == "-":
                removed.append(old_no)
            elif prefix == "+":
                added.append(new_no)
            old_no += prefix != "+"
            new_no += prefix != "-"
    return removed, added


def _targets_in(path: str, text: str | None, lines: Iterable[int]) -> Iterator[Target]:
    if not text:
        return
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError):
        return
    scopes = list(_scopes(tree.body, ""))
    for line in lines:
        yield _innermost(path, scopes, line, len(text.splitlines()))


_Scope = tuple[str, int, int, TargetKind]


def _scopes(body: Sequence[ast.stmt], prefix: str) -> Iterator[_Scope]:
    """Every function and class, with its qualname and line span (decorators included)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qual = prefix + node.name
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            last = node.end_lineno or node.lineno
            is_class = isinstance(node, ast.ClassDef)
            yield qual, first, last, TargetKind.klass if is_class else TargetKind.function
            yield from _scopes(node.body, qual + ("." if is_class else ".<locals>."))


def _innermost(path: str, scopes: list[_Scope], line: int, length: int) -> Target:
    holding = [s for s in scopes if s[1] <= line <= s[2]]
    functions = [s for s in holding if s[3] is TargetKind.function]
    best = max(functions or holding, key=lambda s: s[1], default=None)
    if best is None:
        return Target(path=path, qualname="<module>", first_line=1, last_line=max(length, 1),
                      kind=TargetKind.module)
    qual, first, last, kind = best
    return Target(path=path, qualname=qual, first_line=first, last_line=last, kind=kind)


def apply_file_patch(old: str, patch: str, path: str) -> str:
    """``old`` with the patch's hunks for ``path`` applied at their stated lines (the patch
    is taken to fit the text exactly, as a judged candidate's does)."""
    lines = split_lines(old)
    out: list[str] = []
    pos = 0  # lines of ``old`` consumed
    for start, _, body in _hunks_of(patch, path):
        keep_to = max(start - 1, 0) if body and any(p != "+" for p, _ in body) else start
        out += lines[pos:keep_to]
        pos = keep_to
        for prefix, text in body:
            if prefix in (" ", "-"):
                pos += 1
            if prefix in (" ", "+"):
                out.append(text + "\n")
    out += lines[pos:]
    return "".join(out)


def _hunks_of(patch: str, path: str) -> Iterator[tuple[int, int, list[tuple[str, str]]]]:
    """(old start line, new start line, [(prefix, text)]) for each hunk of ``path``."""
    current: str | None = None
    rows = patch.split("\n")
    i = 0
    while i < len(rows):
        row = rows[i]
        if row.startswith("+++ "):
            name = row[4:].split("\t")[0]
            current = name[2:] if name.startswith(("a/", "b/")) else name
        elif (match := _HUNK.match(row)) and current == path:
            old_len = 1 if match.group(2) is None else int(match.group(2))
            new_len = 1 if match.group(4) is None else int(match.group(4))
            body, i = _hunk_body(rows, i + 1, old_len, new_len)
            yield int(match.group(1)), int(match.group(3)), body
            continue
        i += 1


def _hunk_body(rows: list[str], i: int, old_len: int,
               new_len: int) -> tuple[list[tuple[str, str]], int]:
    body: list[tuple[str, str]] = []
    while (old_len > 0 or new_len > 0) and i < len(rows):
        row = rows[i]
        i += 1
        if row.startswith("\\"):
            continue
        prefix = row[:1] if row[:1] in ("-", "+", " ") else " "
        body.append((prefix, row[1:]))
        old_len -= prefix != "+"
        new_len -= prefix != "-"
    return body, i


def call_tracer(tests: Sequence[str], targets: Sequence[Target], *,
                max_calls: int = MAX_CALLS, max_repr: int = MAX_REPR,
                max_events: int = MAX_EVENTS) -> RunPlugin:
    """The tracer as a run plugin: records the calls ``tests`` make that reach ``targets``.

    Its output comes back as ``TestRun.extras[PLUGIN_NAME]``; read it with
    :func:`parse_calls`.
    """
    source = resources.files("repogym.toolchains.plugins").joinpath(PLUGIN_FILE).read_text()
    config = {"tests": list(tests), "targets": [t.model_dump(mode="json") for t in targets],
              "max_calls": max_calls, "max_repr": max_repr, "max_events": max_events}
    return RunPlugin(name=PLUGIN_NAME, source=source, config=config)


def parse_calls(text: str) -> CallTrace:
    """The tracer's JSON lines as a :class:`CallTrace`; malformed lines are skipped.

    A call's ``start`` line without its ``call`` line (the run was killed while it ran)
    becomes a record that neither returned nor raised; a ``drop`` line (the tracer gave up
    while it ran) removes it.
    """
    found: dict[tuple[str, int], CallRecord] = {}
    for event in _events(text):
        if event.get("event") == "drop":
            found.pop((str(event.get("test")), _int(event.get("index"))), None)
            continue
        record = _record(event)
        if record is None:
            continue
        slot = (record.test, record.index)
        if event.get("event") == "call" or slot not in found:
            found[slot] = record
    calls: dict[str, list[CallRecord]] = {}
    for (test, _), record in sorted(found.items(), key=lambda kv: kv[0]):
        calls.setdefault(test, []).append(record)
    return CallTrace(calls={t: tuple(rs) for t, rs in calls.items()})


def _events(text: str) -> Iterator[dict[str, object]]:
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") in ("start", "call", "drop"):
            yield event


def _int(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return -1


def _field(value: object) -> str:
    return _ADDRESS.sub("", str(value))[:MAX_FIELD]


def _record(event: dict[str, Any]) -> CallRecord | None:
    """One event as a record, its text capped and scrubbed of addresses; None if invalid."""
    try:
        finished = event.get("event") == "call"
        return CallRecord(
            test=str(event["test"]), index=int(event["index"]),
            function=_field(event["function"]), kind=CallKind(event.get("kind", "function")),
            args=tuple(_field(a) for a in event.get("args") or ())[:20],
            receiver=_field(event["receiver"]) if event.get("receiver") is not None else None,
            result=_field(event["result"]) if finished and "result" in event else None,
            raised=_field(event["raised"]) if finished and "raised" in event else None,
            reached=tuple(_field(r) for r in event.get("reached") or ())[:20])
    except (KeyError, TypeError, ValueError, ValidationError):
        return None

