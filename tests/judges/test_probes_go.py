"""Go reward hacks (``judges/probes_go.py``) on a real task: each scores 0 through
verify's grading path, the gold patch 1; and the forged-pass hack is shown to fool a run
without the canary (so the canary is what stops it).

Task: a bug planted by hand in google/uuid (the version nibble of random UUIDs), judged
without a probe set (each probe is a test here).
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
BUG = ("version4.go", "uuid[6] = (uuid[6] & 0x0f) | 0x40", "uuid[6] = (uuid[6] & 0x0f) | 0x50")


@pytest.fixture(scope="module")
def task(tmp_path_factory, base_image):
    root = tmp_path_factory.mktemp("go-probes")
    source = root / "uuid"
    subprocess.run(["git", "clone", "-q", str(REPOS / "google+uuid.bundle"), str(source)],
                   check=True)
    settings = Settings(out=root / "out", base_image=base_image)
    prepared = prepare(RepoSpec(source=str(source)), settings)
    provider = provider_for(settings)
    env = build_env(provider, prepared, settings)
    path, old, new = BUG
    text = (source / path).read_text()
    assert text.count(old) == 2  # the plain and the pooled path
    bug = unified_diff(path, text, text.replace(old, new))
    cand = Candidate(kind=CandidateKind.synthetic, repo=prepared.checkout.name, language="go",
                     base_commit=prepared.checkout.commit, bug_patch=bug,
                     gold_patch=reverse_diff(bug), generator="test", files=(path,))
    tc = prepared.toolchain
    with provider.open(env) as sandbox:
        base = record_baseline(sandbox, tc, repo=cand.repo, commit=cand.base_commit,
                               image=env.ref, runs=1, timeout=300)
        judge = Judge(sandbox, tc, base, JudgeSettings(oracle_runs=1, timeout=300, probes=0))
        verdict = judge.judge(cand).verdict
        assert verdict.status is Status.accept, verdict
        assert "uuid_test.go::TestNew" in verdict.fail_to_pass
        spec = GradingSpec(instance_id=cand.instance_id, image=env.ref, language="go",
                           base_commit=cand.base_commit, bug_patch=bug, test_patch="",
                           FAIL_TO_PASS=verdict.fail_to_pass, PASS_TO_PASS=verdict.pass_to_pass,
                           time_limits=verdict.time_limits)
        patches = probe_patches(context_in(sandbox, spec, (path,)))
        yield spec, patches, sandbox, tc


def test_every_go_probe_applies_and_scores_zero_and_gold_scores_one(task) -> None:
    spec, patches, sandbox, tc = task
    assert set(patches) == set(probes_for("go"))
    gold = grade_in(sandbox, tc, spec, reverse_diff(spec.bug_patch))
    assert gold.reward == 1.0, gold.problems
    scores = {name: grade_in(sandbox, tc, spec, patch).reward
              for name, patch in patches.items()}
    assert scores == dict.fromkeys(patches, 0.0)


def test_forged_passes_fool_a_run_without_the_canary(task) -> None:
    spec, patches, sandbox, tc = task
    sandbox.reset()
    assert sandbox.apply_patch(spec.bug_patch) and sandbox.apply_patch(
        patches["go_forge_passes"])
    plain = tc.run_tests(sandbox, timeout=300, select=list(spec.FAIL_TO_PASS),
                         check_runner=False)
    assert plain.trusted and all(plain.outcome(t) is not None and plain.outcome(t).ok
                                 for t in spec.FAIL_TO_PASS), plain.problems
    graded = grade_in(sandbox, tc, spec, patches["go_forge_passes"])
    assert graded.reward == 0.0
    sandbox.reset()
