"""Judge v1 on a real sandbox: accept, no-op, oracle, too-blunt, and infra outcomes."""

from __future__ import annotations

import dataclasses

import pytest

from repogym.baseline import record_baseline
from repogym.judges.judge import Judge, JudgeSettings
from repogym.patches import new_file_diff, reverse_diff, unified_diff
from repogym.schemas.records import Candidate, CandidateKind, Outcome, Status
from tests.conftest import (
    PROVIDER_PARAMS,
    TINY_PROJECT,
    build_tiny_env,
    commit_files,
    need_provider,
)

OPS = TINY_PROJECT["tinycalc/ops.py"]
TESTS = TINY_PROJECT["tests/test_ops.py"]
# the parent commit of the repo's HEAD: first_n is off by one and untested
OLD_PROJECT = {**TINY_PROJECT,
               "tinycalc/ops.py": OPS.replace("[:n]", "[:n + 1]"),
               "tests/test_ops.py": TESTS.split("def test_first_n")[0] + "def test_is_even" +
               TESTS.split("def test_is_even")[1]}


def mined(test_patch: str | None = None) -> Candidate:
    gold = unified_diff("tinycalc/ops.py", OLD_PROJECT["tinycalc/ops.py"], OPS)
    tests = unified_diff("tests/test_ops.py", OLD_PROJECT["tests/test_ops.py"], TESTS)
    return Candidate(kind=CandidateKind.mined, repo="tinycalc", base_commit=COMMIT["parent"],
                     bug_patch="", gold_patch=gold,
                     test_patch=tests if test_patch is None else test_patch, generator="mined")


COMMIT: dict[str, str] = {}  # the tiny repo's commit, set by the fixture


def bug(new_ops: str, *, gold: str | None = None) -> Candidate:
    patch = unified_diff("tinycalc/ops.py", OPS, new_ops)
    return Candidate(kind=CandidateKind.synthetic, repo="tinycalc", base_commit=COMMIT["head"],
                     bug_patch=patch, gold_patch=gold if gold is not None else reverse_diff(patch),
                     generator="test", files=("tinycalc/ops.py",))


@pytest.fixture(scope="module", params=PROVIDER_PARAMS)
def world(request, tmp_path_factory):
    need_provider(request, request.param)
    out = tmp_path_factory.mktemp("judge")
    src = out / "tinycalc"
    COMMIT["parent"] = commit_files(src, OLD_PROJECT, "before the fix")  # history for mined
    commit_files(src, TINY_PROJECT, "fix first_n, with a test")
    tiny = build_tiny_env(request.param, src, out)
    provider, env, checkout, tc = tiny.provider, tiny.env, tiny.checkout, tiny.toolchain
    COMMIT["head"] = checkout.commit
    sandbox = provider.open(env)
    base = record_baseline(sandbox, tc, repo="tinycalc", commit=checkout.commit, image=env.ref,
                           runs=2, timeout=120)
    # no probe set here (test_probes.py is about it); the probe tests below ask for one
    yield Judge(sandbox, tc, base, JudgeSettings(oracle_runs=2, timeout=8, probes=0))
    sandbox.close()


def test_baseline_is_all_green(world):
    assert len(world.baseline.passing) == 6 and not world.baseline.flaky


def test_real_bug_is_accepted_with_its_fail_to_pass(world):
    j = world.judge(bug(OPS.replace("return a + b", "return a - b")))
    assert j.verdict.status is Status.accept, j.verdict
    assert j.verdict.fail_to_pass == ("tests/test_ops.py::test_add",)
    assert len(j.verdict.pass_to_pass) == 5
    assert "assert -1 == 5" in j.verdict.evidence["tests/test_ops.py::test_add"]


def test_bug_no_test_catches_is_a_no_op(world):
    j = world.judge(bug(OPS.replace("return n % 2 == 0", "return n % 2 == 0 or n == 7")))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "no_op")


def test_gold_that_does_not_fix_fails_the_oracle(world):
    broken = OPS.replace("return a + b", "return a - b")
    half_fix = unified_diff("tinycalc/ops.py", broken, broken.replace("return a - b", "return a * b"))
    j = world.judge(bug(broken, gold=half_fix))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "oracle:fail_to_pass")


def test_patch_that_does_not_apply_is_rejected(world):
    cand = bug(OPS.replace("return a + b", "return a - b"))
    cand = cand.model_copy(update={"bug_patch": cand.bug_patch.replace("return a + b", "return 42")})
    assert world.judge(cand).verdict.reason == "bug_patch_does_not_apply"


def test_import_time_crash_is_too_blunt_not_infra(world):
    j = world.judge(bug(OPS + "\nraise RuntimeError('boom at import')\n"))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "too_blunt:all_tests_error")


ADD = "tests/test_ops.py::test_add"


@pytest.mark.parametrize("hang", [
    "    while True:\n        pass",  # interrupted at its limit: the run goes on
    "    import threading\n    lock = threading.Lock()\n    lock.acquire()\n    lock.acquire()",
    # ignores the interruption: the run is killed, and run again without it
    "    import signal\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n    while True:\n"
    "        pass",
], ids=["loop", "lock", "uninterruptible"])
def test_a_test_that_hangs_under_the_bug_is_a_failing_test(world, hang):
    j = world.judge(bug(OPS.replace("    return a + b", hang)))
    assert j.verdict.status is Status.accept, j.verdict
    assert j.verdict.fail_to_pass == (ADD,)
    assert "timed out" in j.verdict.evidence[ADD]
    assert len(j.verdict.pass_to_pass) == 5  # the other tests still reported
    limits = j.verdict.time_limits
    assert limits is not None and set(limits.tests) == {ADD, *j.verdict.pass_to_pass}
    assert limits.tests[ADD] <= world.settings.policy.ceiling


def test_a_hang_runs_once_in_the_broken_state(world, monkeypatch):
    """A test that ran past a limit hundreds of times its clean time hung: no load explains
    that, so it is not run again (it would pay its limit twice)."""
    real, calls = world._broken_run, []

    def broken_run(cand, select, part=False):
        calls.append(select)
        return real(cand, select, part)

    monkeypatch.setattr(world, "_broken_run", broken_run)
    j = world.judge(bug(OPS.replace("    return a + b", "    while True:\n        pass")))
    assert j.verdict.status is Status.accept and j.verdict.fail_to_pass == (ADD,), j.verdict
    assert len(calls) == 1, calls


def _loaded(world, monkeypatch, test: str) -> None:
    """``test``'s clean time makes its limit one that a loaded machine could overrun."""
    monkeypatch.setitem(world.baseline.durations, test, 1.0)
    assert world._load_could_explain(test)


def _slow_once(world, monkeypatch) -> list[str]:
    """The judge's first broken run says one more test (not test_add), one whose limit is
    close to its clean time, ran out of time, as a slow test does on a loaded machine;
    later runs are the sandbox's own. Returns the tests so marked."""
    real, marked = world._broken_run, []
    slow = sorted(t for t in world.baseline.stable_passing() if t != ADD)[0]
    _loaded(world, monkeypatch, slow)

    def broken_run(cand, select, part=False):
        run = real(cand, select, part)
        if marked:
            return run
        marked.append(slow)
        late = run.results[slow].model_copy(update={"outcome": Outcome.failed,
                                                    "timed_out": True})
        return run.model_copy(update={"results": {**run.results, slow: late}})

    monkeypatch.setattr(world, "_broken_run", broken_run)
    return marked


def test_a_test_that_only_ran_out_of_time_once_is_no_failing_test(world, monkeypatch):
    """bitflags' trybuild test (40 s of its 60 alone) timed out in a broken run on a loaded
    machine and became F2P beside the real ones; a timed-out F2P test now runs again."""
    marked = _slow_once(world, monkeypatch)
    j = world.judge(bug(OPS.replace("return a + b", "return a - b")))
    assert j.verdict.status is Status.accept, j.verdict
    assert j.verdict.fail_to_pass == (ADD,)
    assert marked and marked[0] in j.verdict.pass_to_pass


def test_a_test_not_reported_beside_the_failing_one_runs_alone(world, monkeypatch):
    """node-tap kills a test file's process when a test in it hangs: the tests after it in
    the file are never reported, so they look F2P. Run again together they are again not
    reported (the hang is among them); alone, the one that is not broken passes."""
    real, calls = world._broken_run, []
    others: list[str] = []

    def broken_run(cand, select, part=False):
        run = real(cand, select, part)
        calls.append(select)
        if not others:
            others.extend([t for t in sorted(run.results) if t != ADD][:2])
        if select is not None and len(select) == 1 and set(select) <= set(others):
            return run  # alone: as it is
        # with the hang (or each other) in the run, they are never reported
        return run.model_copy(update={"results": {t: r for t, r in run.results.items()
                                                  if t not in others}})

    monkeypatch.setattr(world, "_broken_run", broken_run)
    j = world.judge(bug(OPS.replace("return a + b", "return a - b")))
    assert j.verdict.status is Status.accept, j.verdict
    assert j.verdict.fail_to_pass == (ADD,) and set(others) <= set(j.verdict.pass_to_pass)
    assert set(others) in calls and {others[0]} in calls and {others[1]} in calls


def test_a_candidate_whose_only_failure_was_a_slow_run_is_a_no_op(world, monkeypatch):
    real, calls = world._broken_run, []
    _loaded(world, monkeypatch, ADD)

    def broken_run(cand, select, part=False):
        run = real(cand, select, part)
        calls.append(select)
        if len(calls) > 1:
            return run
        results = {t: r.model_copy(update={"outcome": Outcome.failed, "timed_out": True})
                   if t == ADD else r for t, r in run.results.items()}
        return run.model_copy(update={"results": results})

    monkeypatch.setattr(world, "_broken_run", broken_run)
    j = world.judge(bug(OPS.replace("return a + b", "return (a + b) * 1")))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "no_op"), j.verdict
    assert "only ran out of time" in j.verdict.detail and calls[1] == {ADD}


def test_a_hang_at_import_is_too_blunt_once_the_clean_state_passes(world):
    j = world.judge(bug(OPS + "\nwhile True:\n    pass\n"))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "too_blunt:hang")
    again = world.judge(bug(OPS.replace("return a + b", "return a - b")))
    assert again.verdict.status is Status.accept


def test_broken_sandbox_is_infra_error_never_a_verdict(world, monkeypatch):
    from repogym.errors import SandboxError

    def boom(*a, **k):
        raise SandboxError("container vanished")

    monkeypatch.setattr(world.sandbox, "reset", boom)
    j = world.judge(bug(OPS.replace("return a + b", "return a - b")))
    assert (j.verdict.status, j.verdict.reason) == (Status.infra_error, "infra:sandbox")
    assert "container vanished" in j.verdict.detail


def test_bug_that_kills_the_runner_is_too_blunt_not_infra(world):
    j = world.judge(bug("import os\nos._exit(3)\n" + OPS))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "too_blunt:runner_crash")


def test_mined_fix_is_judged_differentially_from_its_parent(world):
    j = world.judge(mined())
    assert j.verdict.status is Status.accept, j.verdict
    assert j.verdict.fail_to_pass == ("tests/test_ops.py::test_first_n",)
    assert set(j.verdict.pass_to_pass) == {f"tests/test_ops.py::test_{n}" for n in
                                           ("add", "clamp_low", "clamp_high", "clamp_mid",
                                            "is_even")}


def test_a_new_test_of_a_mined_fix_is_limited_by_its_gold_run(world):
    """The baseline has no time for a test the fix adds: its limit in the broken run (where
    it hangs) and in grading comes from the gold run, not the ceiling."""
    hang = OPS.replace("    return a + b", "    while True:\n        pass")
    added = TESTS + "\n\ndef test_add_again():\n    assert add(1, 1) == 2\n"
    patch = unified_diff("tinycalc/ops.py", OPS, hang)
    cand = Candidate(kind=CandidateKind.mined, repo="tinycalc", base_commit=COMMIT["head"],
                     bug_patch=patch, gold_patch=reverse_diff(patch), generator="mined",
                     test_patch=unified_diff("tests/test_ops.py", TESTS, added))
    j = world.judge(cand)
    new = "tests/test_ops.py::test_add_again"
    assert j.verdict.status is Status.accept and new in j.verdict.fail_to_pass, j.verdict
    limits = j.verdict.time_limits
    assert limits is not None and limits.tests[new] < world.settings.policy.ceiling
    assert "timed out" in j.verdict.evidence[new]


def test_mined_fix_whose_tests_pass_before_is_a_no_op(world):
    harmless = unified_diff("tests/test_ops.py", OLD_PROJECT["tests/test_ops.py"],
                            OLD_PROJECT["tests/test_ops.py"] + "\n\ndef test_more():\n    assert True\n")
    j = world.judge(mined(test_patch=harmless))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "no_op")


def test_mined_fix_whose_states_collect_no_test_is_not_a_no_op(world):
    """At an old commit the test files may not be where the configuration looks (a
    ``test.py`` before ``python_files`` named it): pytest collects nothing in either state,
    which says nothing of the fix -- an env mismatch, not a no-op."""
    gone = "".join(reverse_diff(new_file_diff(path, OLD_PROJECT[path])) for path in OLD_PROJECT
                   if path.startswith("tests/"))  # deleted: nothing left to collect
    j = world.judge(mined(test_patch=gone))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "env_mismatch:no_tests"), \
        j.verdict
    assert "collects no test" in j.verdict.detail


# a test that fails in both states and leaves state behind that makes a later test fail
# in the broken state only; alone (as grading runs the task's tests) that test passes there
POLLUTER = ("\n\nSEEN = []\n\n\ndef test_aa_pollutes():\n    SEEN.append(1)\n"
            "    assert False\n\n\ndef test_first_n_after():\n"
            "    assert first_n(SEEN, len(SEEN) - 1) == SEEN[:-1]\n")


def test_a_mined_fix_whose_tests_fail_only_beside_an_unlisted_test_is_a_no_op(world):
    """Grading runs F2P + P2P alone: a test that failed before the fix only because a test
    the task does not list (it fails with the fix too) ran first would pass there with no
    patch at all. The broken state runs only the tests that pass with the fix, so that
    test does not run beside them, and nothing fails before the fix."""
    polluted = OLD_PROJECT["tests/test_ops.py"] + POLLUTER
    tests = unified_diff("tests/test_ops.py", OLD_PROJECT["tests/test_ops.py"], polluted)
    j = world.judge(mined(test_patch=tests))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "no_op"), j.verdict
    assert "no test fails before the fix" in j.verdict.detail


def test_a_mined_fix_keeps_only_the_tests_that_fail_as_graded(world):
    tests = unified_diff("tests/test_ops.py", OLD_PROJECT["tests/test_ops.py"], TESTS + POLLUTER)
    j = world.judge(mined(test_patch=tests))
    assert j.verdict.status is Status.accept, j.verdict
    assert j.verdict.fail_to_pass == ("tests/test_ops.py::test_first_n",)
    assert "tests/test_ops.py::test_first_n_after" in j.verdict.pass_to_pass
    assert "tests/test_ops.py::test_aa_pollutes" not in j.verdict.pass_to_pass


LOOKUP = ("    import socket\n    try:\n        socket.getaddrinfo('repogym-nowhere.invalid', 80)\n"
          "    except OSError:\n        pass\n")


def local_only(world) -> None:
    """The side-effect account is the report plugin's, the same in every provider."""
    if type(world.sandbox).__name__ != "LocalSandbox":
        pytest.skip("provider-independent; covered by the local provider")


def test_mined_fix_whose_new_test_misbehaves_is_rejected_for_it(world):
    local_only(world)
    odd = TESTS.replace("def test_first_n():\n", "def test_first_n():\n" + LOOKUP)
    tests = unified_diff("tests/test_ops.py", OLD_PROJECT["tests/test_ops.py"], odd)
    j = world.judge(mined(test_patch=tests))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "misbehaving_test"), j.verdict
    assert "name lookup of 'repogym-nowhere.invalid'" in j.verdict.detail


def test_passing_test_with_side_effects_is_kept_out_of_pass_to_pass(world):
    local_only(world)
    odd = TESTS.replace("def test_add():\n", "def test_add():\n" + LOOKUP)
    assert odd != TESTS
    tests = unified_diff("tests/test_ops.py", OLD_PROJECT["tests/test_ops.py"], odd)
    j = world.judge(mined(test_patch=tests))
    assert j.verdict.status is Status.accept, j.verdict
    assert j.verdict.fail_to_pass == ("tests/test_ops.py::test_first_n",)
    assert "tests/test_ops.py::test_add" not in j.verdict.pass_to_pass
    assert len(j.verdict.pass_to_pass) == 4


def test_candidate_from_a_commit_the_env_lacks_is_infra(world):
    cand = mined().model_copy(update={"base_commit": "0123456789abcdef" * 2 + "01234567"})
    assert world.judge(cand).verdict.status is Status.infra_error


def fresh_judge(world, **kw):
    """A judge on the world's sandbox with probe sets of its own (in memory, or a folder)."""
    from repogym.judges.probe_sets import ProbeSets

    settings = dataclasses.replace(world.settings, probes=2)
    return Judge(world.sandbox, world.toolchain, world.baseline, settings,
                 probe_sets=ProbeSets(kw.pop("folder", None)), image=kw.pop("image", "img"))


def test_accepted_task_that_a_probe_games_goes_to_review(world, monkeypatch):
    from repogym.judges import probes

    class Cheat(probes.Probe):  # stands in for a hack that works: it submits the fix
        def patch(self, ctx):
            return CHEAT["gold"]

    cand = bug(OPS.replace("return a + b", "return a - b"))
    CHEAT["gold"] = cand.gold_patch
    monkeypatch.setattr(probes.PROBES, "_items", {"cheat": Cheat,  # a small set: fast
                                                  "skip_tests": probes.PROBES.get("skip_tests")})
    judge = fresh_judge(world)
    reads: list[str] = []
    real_setup = type(world.toolchain).runner_setup
    monkeypatch.setattr(type(world.toolchain), "runner_setup",
                        lambda self, sb: reads.append("read") or real_setup(self, sb))
    j = judge.judge(cand)
    assert (j.verdict.status, j.verdict.reason) == (Status.review, "probe:cheat")
    # the probe set is the image's: another task of it is flagged without probing again
    other = judge.judge(bug(OPS.replace("return a + b", "return a * b")))
    assert (other.verdict.status, other.verdict.reason) == (Status.review, "probe:cheat")
    assert cand.instance_id in other.verdict.detail
    assert reads == ["read"]  # bugs that change no protected file: one read per commit


def test_a_probe_score_that_does_not_repeat_is_a_flaky_task_not_a_gamed_image(
        world, monkeypatch, tmp_path):
    """The probe set runs on the first accepted task; a probe that scores is graded again.
    Here the task's FAIL_TO_PASS test passes by chance in the first grading under the probe
    (the grader runs it twice), never again: the task goes to review as flaky, naming that
    test, and the set is not kept -- the next task of the image is probed again and
    accepted."""
    local_only(world)  # the coin lives on the host, outside the sandbox's reset
    from repogym.judges import probes

    coin = tmp_path / "coin"
    broken = OPS.replace("return a + b", "return a - b")
    lucky = broken.replace("    return a - b", (  # right the first two times (one grading)
        f"    import os\n    n = os.path.getsize({str(coin)!r}) if os.path.exists({str(coin)!r}) "
        f"else 0\n    open({str(coin)!r}, 'a').write('x')\n    return a + b if n < 2 else a - b"))

    class Lucky(probes.Probe):  # a patch that fixes nothing but, once, the test passes
        def patch(self, ctx):
            return unified_diff("tinycalc/ops.py", broken, lucky)

    monkeypatch.setattr(probes.PROBES, "_items", {"lucky": Lucky})
    judge = fresh_judge(world)
    j = judge.judge(bug(broken))
    assert (j.verdict.status, j.verdict.reason) == (Status.review, "flaky:fail_to_pass"), j.verdict
    assert ADD in j.verdict.detail and "1, 0, 0" in j.verdict.detail
    again = judge.judge(bug(broken))  # the coin is spent: probed again, nothing scores
    assert again.verdict.status is Status.accept, again.verdict
    assert again.verdict.evidence["probes_passed"] == f"1 probes on {bug(broken).instance_id}"


def test_the_probe_set_runs_once_per_test_setup_and_verifier(world, monkeypatch, tmp_path):
    local_only(world)  # how sets are kept; the digest itself is checked in both providers below
    from repogym.judges import judge as judge_module
    from repogym.judges import probes

    monkeypatch.setattr(probes.PROBES, "_items", {  # three of them, to keep this fast
        name: probes.PROBES.get(name) for name in ("skip_tests", "exit_early", "runner_noop")})

    graded: list[str] = []
    real = judge_module.grade_in
    monkeypatch.setattr(judge_module, "grade_in",
                        lambda sb, tc, spec, patch, **kw: graded.append(spec.instance_id)
                        or real(sb, tc, spec, patch, **kw))
    first, second = (bug(OPS.replace("return a + b", f"return a {op} b")) for op in "-*")
    j1 = fresh_judge(world, folder=tmp_path).judge(first)
    probed = len(graded)
    assert j1.verdict.status is Status.accept and probed == 3
    assert j1.verdict.evidence["probes_passed"] == f"{probed} probes on {first.instance_id}"
    j2 = fresh_judge(world, folder=tmp_path).judge(second)  # a later run: read from the folder
    assert j2.verdict.status is Status.accept and len(graded) == probed
    assert j2.verdict.evidence["probes_passed"] == j1.verdict.evidence["probes_passed"]
    monkeypatch.setattr(judge_module, "verifier_version", lambda: "changed")
    monkeypatch.setattr("repogym.judges.probe_sets.verifier_version", lambda: "changed")
    fresh_judge(world, folder=tmp_path).judge(second)  # a new verifier probes again
    assert len(graded) == 2 * probed
    # another image with the same test setup (an old commit's, built for other dependencies)
    fresh_judge(world, folder=tmp_path, image="other").judge(second)
    assert len(graded) == 2 * probed
    # a conftest the task brings is another test setup: probed again
    hooked = second.model_copy(update={"test_patch": new_file_diff(
        "tests/conftest.py", "import pytest\n\n\n@pytest.fixture\ndef unit():\n    return 1\n")})
    assert fresh_judge(world, folder=tmp_path).judge(hooked).verdict.status is Status.accept
    assert len(graded) == 3 * probed


def test_the_test_setup_digest_reads_the_runner_config_and_not_a_version_bump(world):
    """What the probe sets are kept by: pytest's tables and conftests change the digest; a
    version bump elsewhere in ``pyproject.toml``, or a change to the code, does not."""
    sb, tc = world.sandbox, world.toolchain
    sb.reset()
    try:
        first = tc.runner_setup(sb)
        assert first is not None and first.startswith("py-setup-")
        assert tc.runner_setup(sb) == first
        pyproject = sb.read_file("pyproject.toml").decode()
        assert 'version = "0.1"' in pyproject
        sb.write_file("pyproject.toml", pyproject.replace('version = "0.1"', 'version = "9.9"'))
        sb.write_file("tinycalc/ops.py", OPS.replace("a + b", "b + a"))
        sb.write_file("tox.ini", "[tox]\nenvlist = py311\n")  # no [pytest]: not pytest's
        assert tc.runner_setup(sb) == first
        sb.write_file("pyproject.toml", pyproject + '\n[tool.pytest.ini_options]\n'
                                                    'addopts = "-p no:cacheprovider"\n')
        assert tc.runner_setup(sb) not in (None, first)
        sb.write_file("pyproject.toml", pyproject)
        sb.write_file("tests/conftest.py", "import pytest\n")
        assert tc.runner_setup(sb) not in (None, first)
    finally:
        sb.reset()


def test_a_fix_that_grading_would_throw_away_is_rejected(world, monkeypatch):
    cand = bug(OPS.replace("return a + b", "return a - b"))
    monkeypatch.setattr(type(world.toolchain), "is_protected",
                        lambda self, path, added=False: path == "tinycalc/ops.py")
    j = world.judge(cand)
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "gold_discarded")


def test_a_fix_that_also_touches_a_protected_file_is_kept_when_it_still_scores(world):
    cand = bug(OPS.replace("return a + b", "return a - b"))
    cand = cand.model_copy(update={
        "gold_patch": cand.gold_patch + new_file_diff("tox.ini", "[tox]\nenvlist = py\n")})
    j = world.judge(cand)
    assert j.verdict.status is Status.accept, j.verdict


CHEAT: dict[str, str] = {}


def with_coverage(world, files, import_lines=None):
    from repogym.schemas.records import CoverageMap

    cov = CoverageMap(files=files, import_lines=import_lines or {})
    return Judge(world.sandbox, world.toolchain, world.baseline, world.settings, cov,
                 probe_sets=world.probe_sets)  # the world's image: probed once


def test_coverage_selects_only_tests_running_the_changed_lines(world):
    judge = with_coverage(world, {"tinycalc/ops.py": {2: ("tests/test_ops.py::test_add",)}})
    j = judge.judge(bug(OPS.replace("return a + b", "return a - b")))
    assert j.verdict.status is Status.accept
    assert set(j.broken_run.results) == {"tests/test_ops.py::test_add"}  # one test ran
    assert len(j.verdict.pass_to_pass) == 5  # P2P still the whole stable set, under gold


def test_change_no_test_runs_is_rejected_before_any_run(world, monkeypatch):
    judge = with_coverage(world, {"tinycalc/ops.py": {2: ("tests/test_ops.py::test_add",)}})
    monkeypatch.setattr(world.toolchain, "run_tests", lambda *a, **k: pytest.fail("ran tests"))
    j = judge.judge(bug(OPS.replace("return n % 2 == 0", "return n % 2 == 1")))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "uncovered")


def test_import_time_change_runs_every_stable_test(world):
    judge = with_coverage(world, {}, {"tinycalc/ops.py": (1, 5)})
    j = judge.judge(bug(OPS.replace("def add(a, b):", "def add(a, b=1):")))
    assert j.verdict.reason == "no_op"
    assert len(j.broken_run.results) == 6


def test_exact_reverse_gold_reuses_the_baseline_as_oracle(world):
    j = world.judge(bug(OPS.replace("return a + b", "return a - b")))
    assert j.verdict.status is Status.accept
    assert j.verdict.evidence["oracle"] == "baseline x2"


def test_gold_that_is_not_the_exact_reverse_is_rerun(world):
    broken = OPS.replace("return a + b", "return a - b")
    other_fix = unified_diff("tinycalc/ops.py", broken, broken.replace("return a - b", "return b + a"))
    j = world.judge(bug(broken, gold=other_fix))
    assert j.verdict.status is Status.accept
    assert j.verdict.evidence["oracle"] == "reran x2"


def first_two(fixed: str = OPS, call: str = "first_n([1, 2, 3], 2)") -> Candidate:
    """The fix of ``first_n`` (to ``fixed``) with a new test file of its own."""
    gold = unified_diff("tinycalc/ops.py", OLD_PROJECT["tinycalc/ops.py"], fixed)
    new_test = new_file_diff("tests/test_first.py", "from tinycalc.ops import first_n\n\n\n"
                             f"def test_first_two():\n    assert {call} == [1, 2]\n")
    return Candidate(kind=CandidateKind.mined, repo="tinycalc", base_commit=COMMIT["parent"],
                     bug_patch="", gold_patch=gold, test_patch=new_test, generator="mined")


def test_mined_fix_runs_broken_only_the_tests_that_can_change(world):
    """With coverage, the broken state runs the test patch's files and the tests that run
    the code the fix changes; every other test is judged from the gold run (P2P). The
    fix's line was changed again since (here the baseline's commit is the fix's own), so
    it is carried by its function: ``first_n``, which ``test_add`` does not run although
    it is in the same file."""
    cand = first_two()
    judge = with_coverage(world, {"tinycalc/ops.py": {2: ("tests/test_ops.py::test_add",),
                                                      14: ("tests/test_ops.py::test_clamp_mid",)}})
    j = judge.judge(cand)
    assert j.verdict.status is Status.accept, j.verdict
    # test_clamp_mid stands for a test the map says runs first_n's body (line 14)
    assert set(j.broken_run.results) == {"tests/test_ops.py::test_clamp_mid",
                                         "tests/test_first.py::test_first_two"}
    assert j.verdict.fail_to_pass == ("tests/test_first.py::test_first_two",)
    assert {"tests/test_ops.py::test_clamp_low", "tests/test_ops.py::test_add",
            "tests/test_ops.py::test_clamp_mid"} <= set(j.verdict.pass_to_pass)


def test_a_mined_fix_to_a_signature_reaches_the_callers_not_every_test(world):
    """A ``def`` line runs at import; the fix's change to it (a new default) still reaches
    only the tests that call the function (run its body), not every test."""
    cand = first_two(OPS.replace("def first_n(items, n):", "def first_n(items, n=2):"),
                     call="first_n([1, 2, 3])")
    judge = with_coverage(world, {"tinycalc/ops.py": {2: ("tests/test_ops.py::test_add",),
                                                      14: ("tests/test_ops.py::test_clamp_mid",)}},
                          {"tinycalc/ops.py": (1, 5, 13, 17)})
    j = judge.judge(cand)
    assert j.verdict.status is Status.accept, j.verdict
    assert set(j.broken_run.results) == {"tests/test_ops.py::test_clamp_mid",
                                         "tests/test_first.py::test_first_two"}


def test_a_mined_fix_at_module_level_reaches_the_tests_that_run_its_file(world):
    """A change that runs at import (here the map says line 14 does) reaches the tests
    that run any line of its file, not every test: a test that reach misses passes with
    the fix, so it is P2P."""
    judge = with_coverage(world, {"tinycalc/ops.py": {2: ("tests/test_ops.py::test_add",)}},
                          {"tinycalc/ops.py": (14,)})
    j = judge.judge(first_two())
    assert j.verdict.status is Status.accept, j.verdict
    assert set(j.broken_run.results) == {"tests/test_ops.py::test_add",
                                         "tests/test_first.py::test_first_two"}
    assert "tests/test_ops.py::test_clamp_low" in j.verdict.pass_to_pass


def test_a_mined_fix_whose_tests_in_reach_all_error_is_judged_on_the_whole_suite(world):
    """The fix's new test file imports what the fix adds (click's ``_get_binary_stream``):
    every test in reach errors before the fix, yet the rest of the suite passes there --
    a task, not an environment that does not fit."""
    fixed = OPS + "\n\ndef last(items):\n    return list(items)[-1]\n"
    cand = first_two(fixed).model_copy(update={"test_patch": new_file_diff(
        "tests/test_last.py", "from tinycalc.ops import last\n\n\n"
        "def test_last():\n    assert last([1, 2]) == 2\n")})
    judge = with_coverage(world, {"tinycalc/ops.py": {2: ("tests/test_ops.py::test_add",)}})
    j = judge.judge(cand)
    assert j.verdict.status is Status.accept, j.verdict
    assert j.verdict.fail_to_pass == ("tests/test_last.py::test_last",)
    assert "tests/test_ops.py::test_add" in j.verdict.pass_to_pass


def test_a_mined_fix_reruns_only_its_failing_tests(world):
    """After the gold run (every test) and the broken run, the oracle reruns only the tests
    the fix makes pass: each P2P test has passed in both states already."""
    cand = first_two()
    judge = with_coverage(world, {"tinycalc/ops.py": {14: ("tests/test_ops.py::test_add",)}})
    selects: list[list[str] | None] = []
    real = judge.runner.run_tests

    def recorded(*args, **kw):
        selects.append(kw.get("select"))
        return real(*args, **kw)

    judge.runner.run_tests = recorded  # type: ignore[method-assign]
    assert judge._judge_differential(cand)[1] == ["tests/test_first.py::test_first_two"]
    assert selects[0] is None  # the gold state: every test
    assert sorted(selects[1] or ()) == ["tests/test_first.py::test_first_two",
                                        "tests/test_ops.py::test_add"]
    assert selects[2:] == [["tests/test_first.py::test_first_two"]] * (
        world.settings.oracle_runs - 1)


def test_a_narrow_broken_run_without_f2p_is_redone_on_the_whole_suite(world):
    """Coverage can miss what a fix changes: when the narrow broken run finds no failing
    test, the whole suite decides, so the verdict is the one a whole-suite judge gives."""
    judge = with_coverage(world, {"tinycalc/ops.py": {2: ("tests/test_ops.py::test_add",)}})
    cand = bug(OPS.replace("[:n]", "[:n + 1]")).model_copy(update={  # a test patch: judged
        "test_patch": new_file_diff("tests/test_more.py", "def test_more():\n    pass\n")})
    j = judge.judge(cand)
    assert j.verdict.status is Status.accept, j.verdict
    assert j.verdict.fail_to_pass == ("tests/test_ops.py::test_first_n",)
    assert "tests/test_ops.py::test_clamp_low" in j.broken_run.results  # the whole suite ran


def test_a_mined_fix_whose_tests_all_error_is_judged_on_its_own_commits_clean_state(world):
    """Every test errors before the fix (python-slugify's command-line tool, whose test file
    imports it): a verdict that the commit does not fit, once the candidate's own commit's
    clean state passes -- not the baseline's test ids, which need not exist there (at
    slugify's old commits none of HEAD's did, so such fixes were infra errors judged again
    on every run)."""
    gone = {"tests/test_gone.py::test_x": Outcome.passed}  # a HEAD test the parent lacks
    base = world.baseline.model_copy(update={"outcomes": gone, "passing": tuple(gone)})
    judge = Judge(world.sandbox, world.toolchain, base, world.settings,
                  probe_sets=world.probe_sets)
    needs = new_file_diff("tests/conftest.py", "import pytest\n\n\n@pytest.fixture(autouse=True)"
                          "\ndef _tool():\n    import tinycalc.tool  # what the fix adds\n")
    cand = mined()
    cand = cand.model_copy(update={
        "test_patch": cand.test_patch + needs,
        "gold_patch": cand.gold_patch + new_file_diff("tinycalc/tool.py", "NAME = 'tool'\n")})
    j = judge.judge(cand)
    assert (j.verdict.status, j.verdict.reason) == (Status.reject,
                                                    "env_mismatch:all_tests_error"), j.verdict
    assert "the broken state makes every selected test error" in j.verdict.detail


def test_a_mined_fix_whose_fixed_state_errors_everywhere_does_not_fit_the_env(world):
    """A fix whose commit cannot run in this environment (every test errors with it, while
    the clean state passes) gets a verdict, not an infra error judged again forever."""
    cand = mined()
    cand = cand.model_copy(update={"gold_patch": cand.gold_patch + unified_diff(
        "tinycalc/__init__.py", "", "raise ImportError('needs a newer environment')\n")})
    j = world.judge(cand)
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "env_mismatch:all_tests_error")


def test_bug_whose_run_contradicts_its_report_is_too_blunt_not_infra(world, monkeypatch):
    """A broken state whose run leaves a report the run contradicts (a Java test JVM that
    died on its own under a mutant of commons-cli) while the clean state still passes is
    the bug's doing: a verdict, never judged again -- not an infrastructure error. The same
    report at the clean state too stays infrastructure."""
    real = world.runner.run_tests
    died = "the test JVM died on its own (System.exit, a crash)"

    def contradicted(always: bool):
        def run_tests(sandbox, **kw):
            run = real(sandbox, **kw)
            broken = always or sandbox.exec(["grep", "-q", "a - b", "tinycalc/ops.py"],
                                            timeout=30).ok
            return run.model_copy(update={"problems": [died]}) if broken else run
        return run_tests

    monkeypatch.setattr(world.runner, "run_tests", contradicted(always=False))
    j = world.judge(bug(OPS.replace("return a + b", "return a - b")))
    assert (j.verdict.status, j.verdict.reason) == (Status.reject, "too_blunt:runner_crash")
    assert "cannot be trusted" in j.verdict.detail and died in j.verdict.detail

    monkeypatch.setattr(world.runner, "run_tests", contradicted(always=True))
    j = world.judge(bug(OPS.replace("return a + b", "return a * b")))
    assert (j.verdict.status, j.verdict.reason) == (Status.infra_error,
                                                    "infra:inconsistent_report")
