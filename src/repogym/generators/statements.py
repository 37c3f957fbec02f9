"""Offline problem statements: an issue written from the failing tests' evidence.

The statement says which behaviour breaks (the function, as a user would name it) and
what the failing checks report (assertion messages, exception types), and asks for the
behaviour the tests expect. It never shows the diff, the changed line, or a test's name:
every line is checked against the lines of the patch and dropped if it quotes one
(:func:`leaks`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Observation:
    """What one failing check shows: the call, what it gave, what was expected, or an error."""

    call: str | None = None
    got: str | None = None
    expected: str | None = None
    error: str | None = None

    def sentence(self) -> str | None:
        if self.error:
            return f"{f'`{self.call}`' if self.call else 'It'} raises `{self.error}`."
        if self.call and self.got is not None and self.expected is not None:
            return f"`{self.call}` returns `{self.got}`; I expected `{self.expected}`."
        if self.got is not None and self.expected is not None:
            return f"I get `{self.got}` where `{self.expected}` is expected."
        if self.call and self.got is not None:
            return f"`{self.call}` returns `{self.got}`, which is wrong."
        return None


_ASSERT_EQ = re.compile(r"^(?:AssertionError:\s*)?assert (.+?) == (.+)$")
_WHERE = re.compile(r"^\+\s*where (.+?) = (.+)$")
_ERROR = re.compile(r"^((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception))(?::\s*(.*))?$")


def observe(message: str) -> Observation | None:
    """Read a pytest failure message (its ``E`` lines) into an :class:`Observation`."""
    got = expected = call = error = None
    where_val = None
    for raw in message.splitlines():
        line = raw.strip()
        if got is None and (m := _ASSERT_EQ.match(line)):
            got, expected = m.group(1).strip(), m.group(2).strip()
        elif call is None and (m := _WHERE.match(line)):
            where_val, call = m.group(1).strip(), m.group(2).strip()
        elif error is None and (m := _ERROR.match(line)) and m.group(1) != "AssertionError":
            error = f"{m.group(1)}: {m.group(2)}" if m.group(2) else m.group(1)
    if call is not None and where_val is not None and got is None:
        got = where_val
    if call is not None and got is not None and where_val != got:
        call = None  # the call explains another value: do not pin it on this one
    obs = Observation(call=call, got=got, expected=expected, error=error)
    return obs if obs.sentence() else None


def _observations(f2p: Sequence[str], messages: Mapping[str, str], patches: Sequence[str],
                  test_names: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Up to MAX_EXAMPLES sentences, and raw message lines for checks no sentence fits."""
    sentences: list[str] = []
    raw_blocks: list[list[str]] = []
    for test in f2p:
        msg = messages.get(test, "")
        obs = observe(msg)
        text = obs.sentence() if obs else None
        if text and _scrub([text], patches, test_names) and text not in sentences:
            sentences.append(text)
        elif not text:
            lines = _scrub(_clean_message(msg), patches, test_names)
            if lines and lines not in raw_blocks:
                raw_blocks.append(lines)
        if len(sentences) + len(raw_blocks) >= MAX_EXAMPLES:
            break
    return sentences, raw_blocks


def offline_statement(cand: Candidate, f2p: Sequence[str], messages: Mapping[str, str]) -> str:
    """Write an issue-style statement for a bug from the failing tests' messages: what is
    observed and what was expected, in a user's voice, never quoting the patch or tests."""
    subject = _subject(cand)
    test_names = [t.split("::")[-1].split("[")[0] for t in f2p]
    sentences, raw = _observations(f2p, messages, (cand.bug_patch, cand.gold_patch), test_names)
    parts = [f"# {subject} gives wrong results", "",
             f"With the current code, {subject} no longer behaves as it should. "
             "Here is what I see:", ""]
    parts += [f"- {s}" for s in sentences]
    for block in raw:
        parts += ["", "```", *block, "```"]
    if not sentences and not raw:
        parts += ["It returns a different value, or raises, where it used to succeed."]
    parts += ["", "## Expected behaviour", "",
              f"{subject} should return the expected values shown above, as it did before. "
              "Nothing else about its behaviour should change."]
    return "\n".join(parts).strip() + "\n"
