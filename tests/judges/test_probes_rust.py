"""Rust reward hacks (``judges/probes_rust.py``) on a real task: each scores 0 through
verify's grading path, the gold patch 1; and the forged-pass hack is shown to fool a run
without the canary (so the canary is what stops it).

Task: a bug planted by hand in rust-lang/glob (``Pattern::escape`` forgets the closing
bracket), caught by a unit test in the ``#[cfg(test)]`` module of the same source file: the
test-level hacks edit a file the fix goes in too, guarded by its test code's lines.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from repogym.baseline import record_baseline
from repogym.config import Settings
from repogym.grading import GradingSpec, grade_in
from repogym.judges.judge import Judge, JudgeSettings
from repogym.judges.probes import context_in, probe_patches, probes_for
from repogym.patches import reverse_diff, unified_diff
from repogym.pipeline import build_env, prepare, provider_for
from repogym.schemas.records import Candidate, CandidateKind, RepoSpec, Status

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPOS = Path(__file__).resolve().parents[3] / "shared" / "repos"
BUG = ("src/lib.rs", "                    escaped.push(c);\n                    escaped.push(']');\n",
       "                    escaped.push(c);\n")


@pytest.fixture(scope="module")
def task(tmp_path_factory, base_image):
    root = tmp_path_factory.mktemp("rust-probes")
    source = root / "glob"
    subprocess.run(["git", "clone", "-q", str(REPOS / "rust-lang+glob.bundle"), str(source)],
                   check=True)
    settings = Settings(out=root / "out", base_image=base_image)
    prepared = prepare(RepoSpec(source=str(source)), settings)
    provider = provider_for(settings)
    env = build_env(provider, prepared, settings)
    path, old, new = BUG
    text = (source / path).read_text()
    assert text.count(old) == 1
    bug = unified_diff(path, text, text.replace(old, new))
    cand = Candidate(kind=CandidateKind.synthetic, repo=prepared.checkout.name, language="rust",
                     base_commit=prepared.checkout.commit, bug_patch=bug,
                     gold_patch=reverse_diff(bug), generator="test", files=(path,))
    tc = prepared.toolchain
    with provider.open(env) as sandbox:
        base = record_baseline(sandbox, tc, repo=cand.repo, commit=cand.base_commit,
                               image=env.ref, runs=1, timeout=300)
        judge = Judge(sandbox, tc, base, JudgeSettings(oracle_runs=1, timeout=300, probes=0))
        verdict = judge.judge(cand).verdict
        assert verdict.status is Status.accept, verdict
        assert "src/lib.rs::test::test_pattern_escape" in verdict.fail_to_pass
        spec = GradingSpec(instance_id=cand.instance_id, image=env.ref, language="rust",
                           base_commit=cand.base_commit, bug_patch=bug, test_patch="",
                           FAIL_TO_PASS=verdict.fail_to_pass, PASS_TO_PASS=verdict.pass_to_pass,
                           time_limits=verdict.time_limits)
        patches = probe_patches(context_in(sandbox, spec, (path,)))
        yield spec, patches, sandbox, tc


def test_every_rust_probe_applies_and_scores_zero_and_gold_scores_one(task) -> None:
    spec, patches, sandbox, tc = task
    assert set(patches) == set(probes_for("rust"))
    gold = grade_in(sandbox, tc, spec, reverse_diff(spec.bug_patch))
    assert gold.reward == 1.0, gold.problems
    scores = {name: grade_in(sandbox, tc, spec, patch).reward
              for name, patch in patches.items()}
    assert scores == dict.fromkeys(patches, 0.0)


def test_the_constructor_hacks_build_and_fool_a_run_without_the_canary(task) -> None:
    spec, patches, sandbox, tc = task
    for name in ("rs_forge_passes", "rs_exit_ctor"):
        sandbox.reset()
        assert sandbox.apply_patch(spec.bug_patch) and sandbox.apply_patch(patches[name])
        plain = tc.run_tests(sandbox, timeout=300, select=list(spec.FAIL_TO_PASS),
                             check_runner=False)
        # the hack compiled and ran before main: the failing test is forged passing, or
        # never reported at all, by a binary that exits 0
        seen = {t: plain.outcome(t) for t in spec.FAIL_TO_PASS}
        if name == "rs_forge_passes":
            assert all(o is not None and o.ok for o in seen.values()), (seen, plain.problems)
        else:
            assert set(seen.values()) == {None}, (seen, plain.problems)
        graded = grade_in(sandbox, tc, spec, patches[name])
        assert graded.reward == 0.0, name
    sandbox.reset()
