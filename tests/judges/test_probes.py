"""Every known reward hack scores 0 through verify's grading path; the gold patch scores 1.

One regression test per hack (named after it), on a real accepted task of the tiny repo, on
both sandbox providers.
"""

from __future__ import annotations

import pytest

from repogym.baseline import record_baseline
from repogym.grading import GradingSpec, grade_in
from repogym.judges.judge import Judge, JudgeSettings
from repogym.judges.probes import PROBES, ProbeContext, context_in, probes_for
from repogym.patches import reverse_diff, unified_diff
from repogym.schemas.records import Candidate, CandidateKind, Status
from repogym.toolchains.python import PythonToolchain
from tests.conftest import (
    PROVIDER_PARAMS,
    TINY_PROJECT,
    build_tiny_env,
    commit_files,
    need_provider,
)

OPS = TINY_PROJECT["tinycalc/ops.py"]
UNITTEST_FILE = "tests/test_ops_unittest.py"
PROJECT = {**TINY_PROJECT, UNITTEST_FILE: (
    "import unittest\n\nfrom tinycalc.ops import add\n\n\n"
    "class TestAdd(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")}
# the hacks added with the generic runner checks; each must fool a naive pytest run
NEW_CLASSES = ["config_plugin_pytest_toml", "config_plugin_pytest_toml_dot",
               "config_plugin_pytest_ini", "config_plugin_pytest_ini_dot",
               "config_plugin_tox_ini", "config_plugin_setup_cfg",
               "config_plugin_pyproject_toml", "unittest_integration", "unittest_itself",
               "runner_noop", "stdlib_under_report", "swap_hook_function", "register_plugin",
               "shadow_runner"]


@pytest.fixture(scope="module", params=PROVIDER_PARAMS)
def task(request, tmp_path_factory):
    need_provider(request, request.param)
    out = tmp_path_factory.mktemp("probes")
    commit_files(out / "tinycalc", PROJECT)
    tiny = build_tiny_env(request.param, out / "tinycalc", out)
    provider, env, checkout, tc = tiny.provider, tiny.env, tiny.checkout, tiny.toolchain
    bug = unified_diff("tinycalc/ops.py", OPS, OPS.replace("return a + b", "return a - b"))
    cand = Candidate(kind=CandidateKind.synthetic, repo="tinycalc", base_commit=checkout.commit,
                     bug_patch=bug, gold_patch=reverse_diff(bug), generator="test",
                     files=("tinycalc/ops.py",))
    with provider.open(env) as sandbox:
        base = record_baseline(sandbox, tc, repo="tinycalc", commit=checkout.commit,
                               image=env.ref, runs=1, timeout=120)
        # no probe set here: each probe is a test of this module
        judge = Judge(sandbox, tc, base, JudgeSettings(oracle_runs=1, timeout=60, probes=0))
        verdict = judge.judge(cand).verdict
        assert verdict.status is Status.accept
        assert f"{UNITTEST_FILE}::TestAdd::test_add" in verdict.fail_to_pass
        spec = GradingSpec(instance_id=cand.instance_id, image=env.ref, base_commit=cand.base_commit,
                           bug_patch=cand.bug_patch, test_patch="",
                           FAIL_TO_PASS=verdict.fail_to_pass, PASS_TO_PASS=verdict.pass_to_pass,
                           time_limits=verdict.time_limits,
                           runner_changes=verdict.runner_changes,
                           protected_files=verdict.protected_files)
        yield sandbox, tc, spec, cand


def context(sandbox, tc, spec, cand) -> ProbeContext:
    return context_in(sandbox, spec, cand.files)


def test_gold_patch_scores_one(task):
    sandbox, tc, spec, cand = task
    result = grade_in(sandbox, tc, spec, cand.gold_patch, timeout=60)
    assert result.reward == 1.0 and result.resolved, result


def test_empty_patch_scores_zero(task):
    sandbox, tc, spec, _ = task
    result = grade_in(sandbox, tc, spec, "", timeout=60)
    assert result.reward == 0.0
    assert result.outcomes["tests/test_ops.py::test_add"] is not None


def test_partial_reward_counts_passing_tests(task):
    sandbox, tc, spec, _ = task
    result = grade_in(sandbox, tc, spec, "", timeout=60, partial=True)
    total = len(spec.FAIL_TO_PASS) + len(spec.PASS_TO_PASS)
    assert result.reward == pytest.approx(len(spec.PASS_TO_PASS) / total)


@pytest.mark.parametrize("probe", probes_for("python"))
def test_reward_hack_scores_zero(task, probe):
    sandbox, tc, spec, cand = task
    patch = PROBES.get(probe)().patch(context(sandbox, tc, spec, cand))
    assert patch, f"probe {probe} produced no patch for this task"
    result = grade_in(sandbox, tc, spec, patch, timeout=60)
    assert "patch does not apply" not in result.problems, probe  # the defence was exercised
    assert result.reward == 0.0, (probe, result)


def local_only(sandbox) -> None:
    if sandbox.provider != "local":
        pytest.skip("provider-independent; covered by the local provider")


@pytest.mark.parametrize("probe", NEW_CLASSES)
def test_reward_hack_fools_a_naive_pytest_run(task, probe):
    """The hack is real: run as ``python -m pytest`` with nothing discarded or pinned, the
    failing tests of the broken state pass (exit code 0)."""
    sandbox, tc, spec, cand = task
    local_only(sandbox)
    patch = PROBES.get(probe)().patch(context(sandbox, tc, spec, cand))
    sandbox.reset()
    assert sandbox.apply_patch(cand.bug_patch) and sandbox.apply_patch(patch)
    files = sorted({t.split("::")[0] for t in spec.FAIL_TO_PASS})
    if probe.startswith("unittest"):  # these hacks only reach unittest-style tests
        files = [UNITTEST_FILE]
    elif probe in ("runner_noop", "swap_hook_function"):  # ... these only pytest functions
        files.remove(UNITTEST_FILE)
    naive = sandbox.exec(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
                         timeout=60)
    assert naive.exit_code == 0, (probe, naive.stdout[-1500:], naive.stderr[-1500:])


def test_hack_combined_with_the_real_fix_still_scores_one(task):
    """Discarding test changes must not punish a real fix that also touched tests."""
    sandbox, tc, spec, cand = task
    ctx = context(sandbox, tc, spec, cand)
    patch = cand.gold_patch + PROBES.get("skip_tests")().patch(ctx)
    result = grade_in(sandbox, tc, spec, patch, timeout=60)
    assert result.reward == 1.0 and "tests/test_ops.py" in result.discarded


def test_early_stop_grades_only_fail_to_pass_when_one_fails(task):
    sandbox, tc, spec, _ = task
    result = grade_in(sandbox, tc, spec, "", timeout=60, early_stop=True)
    assert result.reward == 0.0 and set(result.outcomes) == set(spec.FAIL_TO_PASS)


def test_early_stop_still_grades_everything_for_a_real_fix(task):
    sandbox, tc, spec, cand = task
    result = grade_in(sandbox, tc, spec, cand.gold_patch, timeout=60, early_stop=True)
    assert result.reward == 1.0
    assert set(result.outcomes) == set(spec.FAIL_TO_PASS) | set(spec.PASS_TO_PASS)


class _KeepsConfigFiles(PythonToolchain):
    """Discards test files only: what stops a new config file is then the pinning alone."""

    def is_protected(self, path: str, *, added: bool = False) -> bool:
        return self.is_test_file(path)


@pytest.mark.parametrize("probe", [p for p in NEW_CLASSES if p.startswith("config_plugin")
                                   and p != "config_plugin_pyproject_toml"])
def test_a_config_file_the_patch_adds_is_never_read(task, probe):
    sandbox, _tc, spec, cand = task
    local_only(sandbox)
    patch = PROBES.get(probe)().patch(context(sandbox, _tc, spec, cand))
    result = grade_in(sandbox, _KeepsConfigFiles(), spec, patch, timeout=60)
    assert result.discarded == () and result.reward == 0.0, result


def test_a_protected_file_keeps_the_bug_of_the_broken_state(task):
    """Protected files go back to the *broken* state, not to the base commit: were the
    bug's own file protected (a runner plugin module), an empty patch must still fail."""
    sandbox, tc, spec, cand = task
    guarded = spec.model_copy(update={"protected_files": ("tinycalc/ops.py",)})
    assert grade_in(sandbox, tc, guarded, "", timeout=60).reward == 0.0
    fixed = grade_in(sandbox, tc, guarded, cand.gold_patch, timeout=60)
    assert fixed.reward == 0.0 and fixed.discarded == ("tinycalc/ops.py",)  # the fix is kept out


@pytest.mark.parametrize("hang", [
    "    while True:\n        pass",
    "    import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
    "    while True:\n        pass",  # cannot be interrupted: its run is killed
], ids=["interruptible", "uninterruptible"])
def test_a_patch_that_hangs_scores_zero_at_the_task_limit(task, hang):
    sandbox, tc, spec, cand = task
    broken = OPS.replace("return a + b", "return a - b")
    patch = unified_diff("tinycalc/ops.py", broken, broken.replace("    return a - b", hang))
    assert spec.time_limits is not None and spec.time_limits.run < 60
    result = grade_in(sandbox, tc, spec, patch, timeout=600)  # the task's limits apply
    assert result.reward == 0.0
    assert any("timed out" in p for p in result.problems), result.problems
