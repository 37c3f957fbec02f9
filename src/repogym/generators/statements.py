"""Offline problem statements: an issue written from the failing tests' evidence.

The statement says which behaviour breaks (the function, as a user would name it) and
what the failing checks report (assertion messages, exception types), and asks for the
behaviour the tests expect. It never shows the diff, the changed line, or a test's name:
every line is checked against the lines of the patch and dropped if it quotes one
(:func:`leaks`).
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from repogym.generators.diffs import diff_text_lines
from repogym.schemas.records import Candidate

MAX_EXAMPLES = 3
MIN_LEAK_CHARS = 8


def _module_of(path: str) -> str:
    mod = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return mod.removeprefix("src.").removeprefix("lib.")


def _subject(cand: Candidate) -> str:
    func = cand.provenance.get("function")
    path = cand.files[0] if cand.files else ""
    if func and path:
        return f"`{_module_of(path)}.{func}`"
    return f"`{_module_of(path)}`" if path else "the library"


def _clean_message(msg: str) -> list[str]:
    """The informative lines of a failure message, without pytest's decorations."""
    lines = []
    for raw in msg.splitlines():
        line = raw.strip()
        if not line or line.startswith(("+", "-", "?")) and len(line) < 3:
            continue
        line = re.sub(r"\s+", " ", line)
        lines.append(line[:300])
    return lines[:6]


def leaks(text: str, patch: str) -> list[str]:
    """The patch lines (added or removed, stripped) that the text quotes."""
    norm = re.sub(r"\s+", " ", text)
    out = []
    for line in diff_text_lines(patch):
        probe = re.sub(r"\s+", " ", line).strip()
        if len(probe) >= MIN_LEAK_CHARS and probe in norm:
            out.append(probe)
    return out


def _scrub(lines: list[str], patches: Sequence[str], test_names: Sequence[str]) -> list[str]:
    kept = []
    for line in lines:
        if any(leaks(line, p) for p in patches if p):
            continue
        if any(name and name in line for name in test_names):
            continue
        kept.append(line)
    return kept


def offline_statement(cand: Candidate, f2p: Sequence[str], messages: Mapping[str, str]) -> str:
    """Write an issue-style statement for a synthetic bug from the failing tests' messages."""
    subject = _subject(cand)
    test_names = [t.split("::")[-1].split("[")[0] for t in f2p]
    patches = (cand.bug_patch, cand.gold_patch)
    examples: list[list[str]] = []
    for test in f2p:
        lines = _scrub(_clean_message(messages.get(test, "")), patches, test_names)
        if lines and lines not in examples:
            examples.append(lines)
        if len(examples) >= MAX_EXAMPLES:
            break
    parts = [f"# {subject} no longer behaves as documented", "",
             f"Since the latest change, {subject} gives wrong results. Code that relied on it "
             f"now fails, and the project's own checks catch it ({len(f2p)} of them fail).", ""]
    if examples:
        parts += ["## What happens", ""]
        for ex in examples:
            parts += ["```", *ex, "```", ""]
    else:
        parts += ["The failing checks do not print a message; the function returns a different",
                  "value, or raises, where it used to succeed.", ""]
    parts += ["## What I expected", "",
              f"{subject} should behave as it did before the change, so that the expectations "
              "shown above hold again. Existing behaviour elsewhere should not change."]
    return "\n".join(parts).strip() + "\n"
