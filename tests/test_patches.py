"""Git-style diffs: the exact format, ``git apply`` acceptance, reversal and reading."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable

import pytest

from repogym.patches import changed_lines, diff_text_lines, reverse_diff, split_lines, unified_diff

BEFORE = "".join(f"line {i}\n" for i in range(1, 21))


def git_apply(root: Path, patch: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "apply", *extra, "-"], cwd=root, input=patch, text=True,
                          capture_output=True)


def round_trip(root: Path, path: str, before: str, after: str) -> None:
    """before --patch--> after --reverse--> before, each step checked by git."""
    (root / path).write_text(before)
    patch = unified_diff(path, before, after)
    check = git_apply(root, patch, "--check")
    assert check.returncode == 0, check.stderr + patch
    assert git_apply(root, patch).returncode == 0
    assert (root / path).read_bytes() == after.encode()
    undo = reverse_diff(patch)
    assert git_apply(root, undo, "--check").returncode == 0, undo
    assert git_apply(root, undo).returncode == 0
    assert (root / path).read_bytes() == before.encode()


@pytest.fixture
def repo(make_git_repo: Callable[..., Path]) -> Path:
    return make_git_repo({"f.py": BEFORE, "pkg/g.py": "a = 1\n"}, name="diffs")


def test_format_is_git_style() -> None:
    patch = unified_diff("pkg/m.py", "a\nb\nc\n", "a\nB\nc\n")
    assert patch == (
        "diff --git a/pkg/m.py b/pkg/m.py\n"
        "--- a/pkg/m.py\n"
        "+++ b/pkg/m.py\n"
        "@@ -1,3 +1,3 @@\n"
        " a\n"
        "-b\n"
        "+B\n"
        " c\n"
    )


def test_three_lines_of_context_and_separate_hunks() -> None:
    after = BEFORE.replace("line 2\n", "LINE 2\n").replace("line 18\n", "LINE 18\n")
    patch = unified_diff("f.py", BEFORE, after)
    assert "@@ -1,5 +1,5 @@" in patch and "@@ -15,6 +15,6 @@" in patch
    assert " line 5\n" in patch and " line 6\n" not in patch


def test_equal_texts_give_no_diff() -> None:
    assert unified_diff("f.py", BEFORE, BEFORE) == ""
    assert reverse_diff("") == ""


def test_missing_trailing_newline_is_marked() -> None:
    patch = unified_diff("f.py", "a\nb", "a\nc")
    assert patch.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")


def test_split_lines_only_on_newline() -> None:
    assert split_lines("a\r\nb\x0cc\u2028d") == ["a\r\n", "b\x0cc\u2028d"]
    assert split_lines("") == [] and split_lines("x\n") == ["x\n"]


@pytest.mark.parametrize(("before", "after"), [
    (BEFORE, BEFORE.replace("line 10\n", "line ten\n")),  # middle
    (BEFORE, "first\n" + BEFORE),  # insertion at the top
    (BEFORE, BEFORE + "last\n"),  # insertion at the end
    (BEFORE, BEFORE.replace("line 3\n", "").replace("line 17\n", "")),  # deletions, 2 hunks
    (BEFORE, BEFORE.rstrip("\n")),  # the newline at the end goes away
    (BEFORE.rstrip("\n"), BEFORE),  # ... and comes back
    (BEFORE.rstrip("\n"), BEFORE.rstrip("\n").replace("line 20", "line XX")),  # neither has one
    (BEFORE.rstrip("\n"), BEFORE.replace("line 1\n", "line one\n").rstrip("\n")),  # unchanged end
    ("a\r\nb\r\n", "a\r\nB\r\n"),  # CRLF lines
    ("", "new\ncontent\n"),  # an empty file gets content
    (BEFORE, ""),  # a file is emptied
], ids=["middle", "top", "end", "two-hunks", "drop-eol", "add-eol", "no-eol-both",
        "no-eol-context", "crlf", "from-empty", "to-empty"])
def test_git_apply_accepts_and_reverse_undoes(repo: Path, before: str, after: str) -> None:
    round_trip(repo, "f.py", before, after)


def test_reverse_twice_is_identity() -> None:
    for after in (BEFORE.replace("line 4\n", "x\ny\n"), BEFORE.rstrip("\n"), "z\n" + BEFORE):
        patch = unified_diff("f.py", BEFORE, after)
        assert reverse_diff(reverse_diff(patch)) == patch


def test_reverse_puts_removals_before_additions() -> None:
    patch = unified_diff("f.py", "a\nb\nc\n", "a\nB\nc\n")
    assert reverse_diff(patch) == patch.replace("-b\n+B\n", "-B\n+b\n")


def test_reverse_of_git_diff_with_new_file(repo: Path) -> None:
    (repo / "new.py").write_text("x = 1\n")
    (repo / "f.py").write_text(BEFORE.replace("line 7\n", "seven\n"))
    subprocess.run(["git", "add", "-N", "new.py"], cwd=repo, check=True)
    patch = subprocess.run(["git", "diff"], cwd=repo, capture_output=True, text=True,
                           check=True).stdout
    undo = reverse_diff(patch)
    assert "deleted file mode 100644" in undo and "+++ /dev/null" in undo
    assert git_apply(repo, undo).returncode == 0, undo
    assert not (repo / "new.py").exists() and (repo / "f.py").read_text() == BEFORE
    assert changed_lines(patch) == {"f.py": [7], "new.py": []}


def test_changed_lines_old_side() -> None:
    after = BEFORE.replace("line 3\n", "three\n").replace("line 9\n", "").replace(
        "line 15\n", "line 15\nextra\n")
    assert changed_lines(unified_diff("f.py", BEFORE, after)) == {"f.py": [3, 9, 15]}


def test_changed_lines_insertion_at_top_and_multiple_files() -> None:
    patch = unified_diff("a.py", "x\n", "new\nx\n") + unified_diff("b/c.py", "1\n2\n", "1\n")
    assert changed_lines(patch) == {"a.py": [1], "b/c.py": [2]}


def test_diff_text_lines_follow_hunk_counts() -> None:
    before = "keep\n-- a/x\n++ b/y\n\n  spaced  \n"
    after = "keep\n--- c\n  spaced  \n"
    patch = unified_diff("f.py", before, after)
    assert diff_text_lines(patch) == ["-- a/x", "++ b/y", "--- c"]
    assert changed_lines(patch) == {"f.py": [2, 3, 4]}
    assert reverse_diff(reverse_diff(patch)) == patch


def test_new_file_diff_creates_the_file(tmp_path):
    import subprocess

    from repogym.patches import new_file_diff

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    patch = new_file_diff("pkg/new.py", "x = 1\ny = 2\n")
    subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=patch, text=True, check=True)
    assert (tmp_path / "pkg" / "new.py").read_text() == "x = 1\ny = 2\n"


def test_carried_lines_follow_the_history_between_two_commits() -> None:
    from repogym.patches import carried_lines, unified_diff

    old = "".join(f"l{i}\n" for i in range(1, 21))
    new = old.replace("l3\n", "l3\nx1\nx2\n").replace("l10\n", "L10\n").replace("l15\n", "")
    diff = unified_diff("f.py", old, new)
    carried = carried_lines(diff, "f.py", range(1, 21))
    old_lines, new_lines = old.splitlines(), new.splitlines()
    assert carried[10] is None and carried[15] is None  # changed, removed
    assert carried[4] == 6 and carried[20] == 21
    assert all(new_lines[n - 1] == old_lines[o - 1] for o, n in carried.items() if n)
    assert carried_lines(diff, "other.py", [5]) == {5: 5}
