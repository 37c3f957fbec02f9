"""Reading Go test failures for a problem statement: what was checked, what it gave, what it
should have given.

Go has no assertion library of its own; tests print what they compare with ``t.Errorf``,
and the community's conventions say which side is which:

* ``Parse("x") = 5, want 7`` / ``got 5, want 7`` / ``got: 5, want: 7`` (the Go code review
  convention: got first) and ``expected 7, got 5`` / ``want 7, got 5``;
* testify's ``Error: Not equal:`` with ``expected: 7`` / ``actual  : 5`` lines;
* go-cmp's ``mismatch (-want +got)`` diffs are left as they are (no single value);
* a panic (``panic: runtime error: index out of range``) is a raise; a test killed by
  ``-test.timeout`` hangs.

The message's first ``file_test.go:NN:`` prefix names the line of the check; the call is
the expression before ``=`` in the first form, or, from the test's source at that line,
the first call in the ``t.Errorf``/``t.Fatalf`` arguments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from repogym.schemas.calls import FailureReading

_PREFIX = re.compile(r"^\s*([\w./-]+_test\.go):(\d+):\s*", re.M)
_CALL_EQ = re.compile(r"^(?P<call>[\w.]+\(.*\))\s*(?:=|returned|returns|gave)\s*"
                      r"(?P<got>.+?),\s*(?:want|expected|wanted)\s*:?\s*(?P<want>.+)$")
_GOT_WANT = re.compile(r"\bgot:?\s*(?P<got>.+?),?\s+(?:want(?:ed)?|expected):?\s*"
                       r"(?P<want>.+)$", re.I)
_WANT_GOT = re.compile(r"\b(?:want(?:ed)?|expected):?\s*(?P<want>.+?),?\s+(?:but )?"
                       r"(?:got|received|actual):?\s*(?P<got>.+)$", re.I)
_TESTIFY = re.compile(r"expected:\s*(?P<want>.+?)\s*\n\s*actual\s*:\s*(?P<got>.+?)\s*$",
                      re.M)
_PANIC = re.compile(r"^panic:\s*(.+?)(?:\s*\[recovered.*\])?$", re.M)
_TIMEOUT = re.compile(r"panic: test timed out after")


def read_failure(message: str, test_file: str,
                 sources: Mapping[str, str]) -> FailureReading | None:
    """What a failed Go test's ``message`` shows (None: nothing readable)."""
    text = (message or "").strip()
    if not text:
        return None
    if _TIMEOUT.search(text):
        return FailureReading(hangs=True)
    panic = _PANIC.search(text)
    if panic:
        return FailureReading(raises=f"panic: {panic.group(1).strip()}")
    testify = _TESTIFY.search(text)
    if testify:
        return FailureReading(call=_source_call(text, test_file, sources),
                              actual=testify.group("got"), expected=testify.group("want"))
    for line in text.splitlines():
        body = _PREFIX.sub("", line).strip()
        if not body:
            continue
        found = _CALL_EQ.match(body)
        if found:
            return FailureReading(call=found.group("call"), actual=_clean(found.group("got")),
                                  expected=_clean(found.group("want")))
        for pattern in (_GOT_WANT, _WANT_GOT):
            found = pattern.search(body)
            if found:
                return FailureReading(call=_source_call(text, test_file, sources),
                                      actual=_clean(found.group("got")),
                                      expected=_clean(found.group("want")))
    first = _first_said(text)
    return FailureReading(call=_source_call(text, test_file, sources),
                          note=f"the test reports: {first[:200]}") if first else None


def _first_said(text: str) -> str | None:
    """The message's first line that says something (not ``<nil>``, not a lone ``got:``):
    a line ending in ``:`` is said with the line after it."""
    lines = [_PREFIX.sub("", ln).strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    for i, line in enumerate(lines):
        if line.endswith(":") and i + 1 < len(lines):
            line = f"{line} {lines[i + 1]}"
        if sum(ch.isalpha() for ch in line) >= 3 and not re.fullmatch(r"<\w+>[.:]?", line):
            return line
    return None


def _clean(value: str) -> str:
    return value.strip().rstrip(".;,")


def _source_call(text: str, test_file: str, sources: Mapping[str, str]) -> str | None:
    """The first call in the arguments of the ``t.Errorf`` at the message's line."""
    found = _PREFIX.search(text)
    source = sources.get(test_file)
    if found is None or source is None:
        return None
    lines = source.splitlines()
    n = int(found.group(2))
    if not 0 < n <= len(lines):
        return None
    args = re.search(r"\bt\.(?:Errorf|Fatalf|Error|Fatal|Logf)\s*\((.*)", lines[n - 1])
    if args is None:
        return None
    call = re.search(r"(?<![\w\"])([A-Za-z_][\w.]*\([^()]*(?:\([^()]*\))?[^()]*\))",
                     args.group(1).split(",", 1)[-1])
    return call.group(1) if call else None


__all__ = ["read_failure"]
