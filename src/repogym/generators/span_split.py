"""Cut one source file's change at its test code (unit tests that live in source files).

A Rust fix commit that edits ``src/lib.rs`` often changes the function it fixes *and* the
``#[cfg(test)]`` module below it. The toolchain says which lines are test code
(:meth:`~repogym.toolchains.base.Toolchain.test_spans`); :func:`cut_at_test_spans` sorts
each block of changed lines by them -- removed lines by the spans of the old text, added
lines by those of the new -- and applies the test blocks alone to the old text: the
*middle* text. The test patch turns the old text into the middle one (the tests as the
commit left them, the code as its parent had it), the gold patch the middle one into the
new.

The two patches must apply in either order: the judge applies the test patch and then the
gold patch, grading applies a patch and then the test patch. So a change cannot be cut
(:class:`Entangled`) when

* a block of changed lines is part test code, part not (blank lines go with the rest of
  their block);
* a test block and a code block have fewer than :data:`CONTEXT` unchanged lines between
  them (each would be in the other's context);
* the file is added or deleted by the commit (``before``/``after`` is ``None``).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import Enum

from repogym.patches import split_lines, unified_diff
from repogym.toolchains.base import Toolchain

CONTEXT = 3  # the diffs' context lines (patches.unified_diff's default)


class Entangled(str, Enum):
    """Why a file's change could not be cut at its test code."""

    mixed_block = "mixed_block"  # one block of changed lines is part test, part code
    too_close = "too_close"  # a test block and a code block within CONTEXT lines
    added_or_deleted = "added_or_deleted"  # the commit creates or deletes the file


@dataclass(frozen=True)
class SpanCut:
    """One file's change, cut: ``test_patch`` (old -> middle) and ``gold_patch``
    (middle -> new); either may be empty."""

    test_patch: str
    gold_patch: str


def cut_at_test_spans(toolchain: Toolchain, path: str, before: str | None,
                      after: str | None) -> SpanCut | Entangled:
    """The change of the repo-relative ``path`` from ``before`` to ``after`` (``None``: the
    file does not exist on that side), cut at the toolchain's test spans (module
    docstring). A file without test spans on either side is all gold."""
    old_spans = toolchain.test_spans(path, before or "")
    new_spans = toolchain.test_spans(path, after or "")
    if before is not None and after is not None and not old_spans and not new_spans:
        return SpanCut(test_patch="", gold_patch=unified_diff(path, before, after))
    if before is None or after is None:
        return Entangled.added_or_deleted
    old, new = split_lines(before), split_lines(after)
    in_old, in_new = _lines(old_spans), _lines(new_spans)
    middle: list[str] = []
    last: tuple[bool, int] | None = None  # (a test block?, where it ended in the old text)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            middle += old[i1:i2]
            continue
        is_test = _is_test_block(old[i1:i2], range(i1, i2), in_old,
                                 new[j1:j2], range(j1, j2), in_new)
        if is_test is None:
            return Entangled.mixed_block
        if last is not None and last[0] != is_test and i1 - last[1] < CONTEXT:
            return Entangled.too_close
        last = (is_test, i2)
        middle += new[j1:j2] if is_test else old[i1:i2]
    text = "".join(middle)
    return SpanCut(test_patch=unified_diff(path, before, text),
                   gold_patch=unified_diff(path, text, after))


def _lines(spans: tuple[tuple[int, int], ...]) -> set[int]:
    """The 0-based line indices the 1-based, inclusive ``spans`` cover."""
    return {i for start, end in spans for i in range(start - 1, end)}


def _is_test_block(removed: list[str], old_at: range, in_old: set[int],
                   added: list[str], new_at: range, in_new: set[int]) -> bool | None:
    """Whether a block of changed lines is test code (None: part test, part not). Blank
    lines count only when the block has nothing else."""
    marks = [(line, i in in_old) for line, i in zip(removed, old_at)]
    marks += [(line, j in in_new) for line, j in zip(added, new_at)]
    kinds = {is_test for line, is_test in marks if line.strip()} or {m for _, m in marks}
    return kinds.pop() if len(kinds) == 1 else None


__all__ = ["CONTEXT", "Entangled", "SpanCut", "cut_at_test_spans"]
