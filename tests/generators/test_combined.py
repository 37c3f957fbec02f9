"""Combined bugs: only accepted single-file bugs, far enough apart, whose patches apply together."""

from __future__ import annotations

import subprocess
from pathlib import Path

from repogym.generators.combined import combined_candidates
from repogym.patches import reverse_diff, unified_diff
from repogym.schemas.records import Candidate, CandidateKind, Checkout, RepoSpec
from tests.conftest import TINY_PROJECT, git

OPS = TINY_PROJECT["tinycalc/ops.py"]


def checkout_of(repo: Path) -> Checkout:
    return Checkout(spec=RepoSpec(source=str(repo)), name="tinycalc", path=repo,
                    commit=git(repo, "rev-parse", "HEAD"))


def single(co: Checkout, old: str, new: str, line: int, mutator: str) -> Candidate:
    patch = unified_diff("tinycalc/ops.py", OPS, OPS.replace(old, new))
    return Candidate(kind=CandidateKind.synthetic, repo=co.name, base_commit=co.commit,
                     bug_patch=patch, gold_patch=reverse_diff(patch), generator="procedural",
                     mutator=mutator, files=("tinycalc/ops.py",), lines=(line,))


def test_pairs_and_triples_apply_and_revert(tiny_repo):
    co = checkout_of(tiny_repo)
    bugs = [single(co, "a + b", "a - b", 2, "arithmetic_swap"),
            single(co, "x < lo", "x <= lo", 6, "comparison_flip"),
            single(co, "[:n]", "[:n + 1]", 14, "off_by_one"),
            single(co, "n % 2 == 0", "n % 2 != 0", 18, "comparison_flip")]
    combos = combined_candidates(bugs, co, seed=0, max_candidates=10)
    assert combos and {len(c.provenance["parts"].split(",")) for c in combos} == {2, 3}
    assert combinations_are_deterministic(bugs, co)
    for combo in combos:
        assert combo.generator == "combined" and "+" in combo.mutator
        applied = apply_in_copy(tiny_repo, combo.bug_patch)
        assert applied.count("a - b") + applied.count("x <= lo") + applied.count("[:n + 1]") \
            + applied.count("n % 2 != 0") == len(combo.provenance["parts"].split(","))
        assert apply_in_copy(tiny_repo, combo.bug_patch, combo.gold_patch) == OPS


def combinations_are_deterministic(bugs, co) -> bool:
    a = combined_candidates(bugs, co, seed=3, max_candidates=5)
    b = combined_candidates(bugs, co, seed=3, max_candidates=5)
    return [c.instance_id for c in a] == [c.instance_id for c in b]


def test_bugs_too_close_together_are_not_combined(tiny_repo):
    co = checkout_of(tiny_repo)
    bugs = [single(co, "x < lo", "x <= lo", 6, "comparison_flip"),
            single(co, "return lo", "return hi", 7, "return_value")]
    assert combined_candidates(bugs, co, seed=0, max_candidates=5) == []


def test_bugs_from_other_commits_or_with_tests_are_left_out(tiny_repo):
    co = checkout_of(tiny_repo)
    a = single(co, "a + b", "a - b", 2, "arithmetic_swap")
    b = single(co, "[:n]", "[:n + 1]", 14, "off_by_one").model_copy(update={"base_commit": "f" * 40})
    c = single(co, "n % 2 == 0", "n % 2 != 0", 18, "x").model_copy(update={"test_patch": "diff"})
    assert combined_candidates([a, b, c], co, seed=0, max_candidates=5) == []


def apply_in_copy(repo: Path, *patches: str) -> str:
    work = repo.parent / "work"
    subprocess.run(["rm", "-rf", str(work)], check=True)
    subprocess.run(["cp", "-r", str(repo), str(work)], check=True)
    for p in patches:
        subprocess.run(["git", "apply", "-"], cwd=work, input=p, text=True, check=True)
    return (work / "tinycalc/ops.py").read_text()
