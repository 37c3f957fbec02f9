"""Incremental mining: a pass given the tip of an earlier complete pass (``mined_up_to``) walks
only the commits since, and falls back to the whole selection (saying why) when that commit
is no longer an ancestor. Real repositories (tests/histories.py), real git."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from repogym.errors import SourceError
from repogym.generators.mined import CommitSelection, MiningResult, mine_candidates
from repogym.schemas.records import Checkout, RepoSpec
from repogym.toolchains.python import PythonToolchain
from tests.conftest import git
from tests.histories import History, build_realistic_history

TC = PythonToolchain()
COUNT = ("    def count(self):\n"
         "        return sum(line.quantity for line in self._lines.values())\n\n")
TEST_COUNT = ("\n\ndef test_count():\n    cart = Cart()\n    cart.add('pen', 1.0, 2)\n"
              "    assert cart.count() == 2\n")
NEW_FIX = {"shopcart/cart.py": ("    def total(self):\n", COUNT + "    def total(self):\n"),
           "tests/test_cart.py": ("from shopcart.cart import Cart\n",
                                  "from shopcart.cart import Cart\n" + TEST_COUNT)}


@pytest.fixture
def history(tmp_path: Path) -> History:
    return build_realistic_history(tmp_path / "shopcart")


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD")


def mine(root: Path, selection: CommitSelection | None = None, **kwargs) -> MiningResult:
    co = Checkout(spec=RepoSpec(source=str(root)), name="shopcart", path=root, commit=head(root))
    return mine_candidates(co, TC, selection or CommitSelection(), **kwargs)


def add_fix(root: Path, message: str = "Cart.count: how many items") -> str:
    for rel, (old, new) in NEW_FIX.items():
        path = root / rel
        path.write_text(path.read_text().replace(old, new, 1))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return head(root)


def commits(result: MiningResult) -> list[str]:
    return [c.provenance["commit"] for c in result.candidates]


def test_three_passes_walk_everything_then_nothing_then_the_new_fix(history: History) -> None:
    root = history.root
    first = mine(root)
    assert first.scanned == 13 and first.since is None and first.full_walk_reason is None
    assert first.complete and first.tip == history.head and first.mined_up_to == history.head
    assert len(first.candidates) == 5

    second = mine(root, mined_up_to=first.mined_up_to)
    assert (second.scanned, second.candidates, second.skipped) == (0, [], {})
    assert second.since == history.head and second.mined_up_to == history.head

    fix = add_fix(root)
    third = mine(root, mined_up_to=second.mined_up_to)
    assert third.scanned == 1 and commits(third) == [fix]
    assert third.since == history.head and third.mined_up_to == fix
    assert third.candidates[0].base_commit == history.head


def test_rewritten_history_falls_back_to_a_full_walk_and_says_so(
        history: History, caplog: pytest.LogCaptureFixture) -> None:
    root = history.root
    fix = add_fix(root)
    git(root, "reset", "-q", "--hard", "HEAD~1")  # a force push: the fix is rewritten
    rewritten = add_fix(root, "Cart.count (reworded)")
    assert rewritten != fix
    with caplog.at_level(logging.WARNING, logger="repogym.generators.mined"):
        result = mine(root, mined_up_to=fix)
    assert result.since is None and result.scanned == 14
    assert "is not an ancestor" in (result.full_walk_reason or "")
    assert fix[:12] in caplog.text and "walking the whole selection again" in caplog.text
    assert commits(result)[0] == rewritten and result.mined_up_to == rewritten


def test_an_unknown_commit_falls_back_to_a_full_walk(history: History) -> None:
    result = mine(history.root, mined_up_to="0" * 40)
    assert result.scanned == 13 and result.since is None
    assert "not in the repository" in (result.full_walk_reason or "")


def test_a_budget_cut_walk_records_nothing_and_loses_nothing(history: History) -> None:
    root = history.root
    cut = mine(root, max_candidates=2)
    assert not cut.complete and cut.mined_up_to is None  # older fixes were never looked at
    assert commits(cut) == list(reversed(history.fix_commits[-2:]))
    # the next pass (seen = the two judged) reaches the older fixes, then completes
    rest = mine(root, seen_commits=set(commits(cut)))
    assert rest.complete and rest.mined_up_to == history.head
    assert sorted(commits(cut) + commits(rest)) == sorted(history.fix_commits)
    # a budget exactly used up by the last commit walked still completes the walk
    exact = mine(root, mined_up_to=history.merge_commit, max_candidates=2)
    assert exact.complete and commits(exact) == list(reversed(history.fix_commits[-2:]))
    assert exact.scanned == 4 and exact.mined_up_to == history.head


def test_incremental_walk_keeps_the_selections_limits(history: History) -> None:
    root = history.root
    since = mine(root, CommitSelection(rev_range=f"{history.tag}..HEAD", last=None),
                 mined_up_to=history.fix_commits[3])
    assert since.since == history.fix_commits[3] and since.scanned == 3
    assert commits(since) == [history.fix_commits[4]]
    last = mine(root, CommitSelection(last=2), mined_up_to=history.initial_commit)
    assert last.scanned == 2 and last.since == history.initial_commit


def test_a_range_with_two_tips_is_walked_whole(history: History) -> None:
    rng = f"{history.tag}...HEAD"
    result = mine(history.root, CommitSelection(rev_range=rng), mined_up_to=history.head)
    assert result.tip == "" and result.since is None and result.mined_up_to is None
    assert "more than one tip" in (result.full_walk_reason or "")
    assert result.scanned == 6


def test_bad_range_is_still_a_source_error_with_a_marker(history: History) -> None:
    with pytest.raises(SourceError, match="bad revision range"):
        mine(history.root, CommitSelection(rev_range="nope..HEAD"), mined_up_to=history.head)
