"""Combined bugs: 2-3 bugs already accepted in the same file, applied together.

SWE-smith rates these the hardest tasks: several independent faults, each caught by some
test, all to be found. Only bugs that were accepted on their own are combined (each is
known to break a test and to be fixable), and only when their patches apply together
(``git apply``, one after the other, on the file at the base commit). The combination is a
new candidate the judge checks like any other.

    bug_patch  = base -> (bug A + bug B [+ bug C])      gold_patch = its reverse
"""

from __future__ import annotations

import itertools
import random
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from repogym.patches import unified_diff
from repogym.schemas.records import Candidate, CandidateKind, Checkout

GENERATOR = "combined"
MIN_LINE_GAP = 4  # bugs this close would share diff context and conflict


def _apply_all(original: str, rel: str, patches: Sequence[str]) -> str | None:
    """The file after applying every patch in order, or None if any does not apply."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(original)
        for patch in patches:
            proc = subprocess.run(["git", "apply", "-"], cwd=tmp, input=patch, text=True,
                                  capture_output=True)
            if proc.returncode != 0:
                return None
        return path.read_text()


def _far_apart(group: Sequence[Candidate]) -> bool:
    lines = sorted(ln for c in group for ln in c.lines)
    return all(b - a >= MIN_LINE_GAP for a, b in zip(lines, lines[1:]))


def _combine(group: Sequence[Candidate], checkout: Checkout) -> Candidate | None:
    rel = group[0].files[0]
    original = (checkout.path / rel).read_text()
    mutated = _apply_all(original, rel, [c.bug_patch for c in group])
    if mutated is None or mutated == original:
        return None
    bug = unified_diff(rel, original, mutated)
    return Candidate(
        kind=CandidateKind.synthetic, repo=checkout.name, language=group[0].language,
        base_commit=checkout.commit,
        bug_patch=bug, gold_patch=unified_diff(rel, mutated, original), generator=GENERATOR,
        mutator="+".join(sorted(c.mutator or c.generator for c in group)), files=(rel,),
        lines=tuple(sorted(ln for c in group for ln in c.lines)),
        provenance={"parts": ",".join(c.instance_id for c in group),
                    "function": group[0].provenance.get("function", "")})


def _eligible(accepted: Sequence[Candidate], checkout: Checkout) -> dict[str, list[Candidate]]:
    by_file: dict[str, list[Candidate]] = {}
    for c in accepted:
        single_file = len(c.files) == 1 and not c.test_patch and c.generator != GENERATOR
        if c.base_commit == checkout.commit and single_file and c.lines:
            by_file.setdefault(c.files[0], []).append(c)
    return {f: sorted(cs, key=lambda c: c.instance_id) for f, cs in sorted(by_file.items())}


def combined_candidates(accepted: Sequence[Candidate], checkout: Checkout, *, seed: int,
                        max_candidates: int, sizes: Sequence[int] = (2, 3)) -> list[Candidate]:
    """Up to ``max_candidates`` combinations of accepted bugs, deterministic in ``seed``.

    Combinations are drawn per file, alternating between sizes, from bugs whose changed
    lines are at least MIN_LINE_GAP apart; each bug appears in at most two combinations.
    """
    rng = random.Random(f"{seed}:combined")
    groups: list[tuple[Candidate, ...]] = []
    for cands in _eligible(accepted, checkout).values():
        for size in sizes:
            combos = [g for g in itertools.combinations(cands, size) if _far_apart(g)]
            rng.shuffle(combos)
            groups.extend(combos[:max_candidates])
    rng.shuffle(groups)
    out: list[Candidate] = []
    used: dict[str, int] = {}
    for group in groups:
        if len(out) >= max_candidates:
            break
        if any(used.get(c.instance_id, 0) >= 2 for c in group):
            continue
        combo = _combine(group, checkout)
        if combo is not None:
            out.append(combo)
            for c in group:
                used[c.instance_id] = used.get(c.instance_id, 0) + 1
    return out
