"""Unsolvable-task checks that need no test run.

*Underspecified*: the FAIL_TO_PASS tests call names (functions, classes, constants) that the
gold patch introduces and the statement never mentions: a solver cannot guess them, so the
task is flagged for review (borderline: a name may be guessable from conventions).
"""

from __future__ import annotations

import re

from repogym.patches import split_lines

_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


def _side(diff: str, sign: str) -> list[str]:
    return [ln[1:] for ln in split_lines(diff)
            if ln.startswith(sign) and not ln.startswith(sign * 3)]


def defined_names(lines: list[str]) -> set[str]:
    names = set()
    for line in lines:
        if m := _DEF.match(line) or _ASSIGN.match(line):
            names.add(m.group(1))
    return names


def introduced_names(gold_patch: str) -> set[str]:
    """Names the gold patch defines that the code it replaces did not."""
    return defined_names(_side(gold_patch, "+")) - defined_names(_side(gold_patch, "-"))


def unstated_names(gold_patch: str, test_patch: str, statement: str) -> list[str]:
    """Introduced names that the new tests use and the statement never mentions."""
    added_tests = "\n".join(_side(test_patch, "+"))
    out = []
    for name in sorted(introduced_names(gold_patch)):
        if name.startswith("_") or len(name) < 3:
            continue
        used = re.search(rf"\b{re.escape(name)}\b", added_tests)
        if used and not re.search(rf"\b{re.escape(name)}\b", statement):
            out.append(name)
    return out
