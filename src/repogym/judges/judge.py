"""Judge v1: no-op and oracle checks, with infrastructure failures kept apart.

For one candidate, in a warm sandbox reset between checks:

1. **no-op** — test patch + bug patch applied; only the stable passing tests that execute
   the changed lines run (per-test coverage; every test when a changed line runs at import
   time). F2P = those that no longer pass. Empty F2P: ``reject no_op``; no test executing
   the changed lines at all: ``reject uncovered`` before any run.
2. **oracle** — test patch + bug patch + gold patch applied, F2P and P2P
   (= stable passing minus F2P) run ``oracle_runs`` times; every one must pass each time,
   else ``reject oracle``. When bug + gold give back exactly the baseline's tree (a
   synthetic bug and its reverse: ``git status`` identical to the clean state), the
   baseline's K runs, in which every stable test passed each time, are that oracle, and no
   test runs again.

A candidate from another commit, or with a test patch (mined fixes), is judged
*differentially* (its base commit + test patch, then + the gold patch): F2P = fail broken
and pass in every gold run, P2P = pass in both (:meth:`Judge._judge_differential` says which
tests each run needs).

Time: every run's limits come from the baseline's durations (:mod:`repogym.limits`), and
for a test the baseline has no time for (one a mined fix adds), from its time in the
candidate's gold run. A test that runs past its limit, or that a run dies in (out of memory,
the sandbox stopped), fails -- the others still report
(:func:`~repogym.toolchains.resume.run_to_end`) -- so a bug that makes a test hang is judged
in seconds and that test is a failing test of the task. It runs again only where a loaded
machine could explain the overrun (a limit within :data:`LOADED` times its clean time).

Anything that says the *infrastructure* failed — the sandbox broke, the report is
incomplete or inconsistent, every test errored — is ``infra_error``: a statement about
this attempt, never about the task, so the candidate can be judged again later. One
refinement: when every test errors, the runner itself crashes, or the run hangs outside any
test in the broken state, a few tests run in the clean state; if they pass, the sandbox is
sound and the bug itself broke everything (an import-time crash or hang, or a bug in a
library the test runner uses), so the candidate is rejected as ``too_blunt`` instead of
being retried forever as infra.

An accepted task then faces the reward hacks (:mod:`repogym.judges.probe_sets`: the whole
probe set once per env image and verifier version), and its failing tests run once more in
the broken and the gold state with the toolchain's call tracer: the statement's evidence
(:attr:`Judgement.evidence`).

Speed: the no-op and oracle runs go through the toolchain's warm runner when it has one
(Python: a forking pytest server with the suite's imports done once; see
:mod:`repogym.toolchains.warm`), with the same report checks as a fresh run. Probes grade
through :func:`~repogym.grading.grade_in`, a fresh process, as trainers do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from repogym.errors import InfraError, NoTestsError
from repogym.grading import GradingSpec, Result, grade_in
from repogym.judges.probe_sets import ProbeSet, ProbeSets, verifier_version
from repogym.judges.probes import context_in, probe_patches
from repogym.limits import TimePolicy, policy_for
from repogym.patches import carried_lines, changed_lines, patch_paths, reverse_diff
from repogym.pyast import carry_by_function, heads_as_bodies
from repogym.sandboxes.base import Sandbox
from repogym.schemas.calls import StatementEvidence
from repogym.schemas.confidence import confidence_evidence, confidence_of
from repogym.schemas.reasons import Reason
from repogym.schemas.records import (
    Baseline,
    Candidate,
    CoverageMap,
    Outcome,
    Status,
    TestRun,
    TimeLimits,
    Verdict,
    short_hash,
)
from repogym.toolchains.base import TestRunner, Toolchain
from repogym.toolchains.resume import merged, run_to_end

STATUS = "git status --porcelain --untracked-files=all"
# the reason qualifier of a candidate at another commit whose own suite does not run in its
# environment: infrastructure until it repeats (the pipeline's SuiteLedger), then env_mismatch
SUITE_DOES_NOT_RUN = "suite_does_not_run"
SANITY_TESTS = 5  # clean-state tests run to tell a broken sandbox from a blunt bug
PROBE_CONFIRMATIONS = 2  # gradings again of a probe that scored: a hack scores every time
ALONE_MAX = 5  # F2P tests not reported twice that each run alone (a wider break: they stay)
# how much slower than its clean time a loaded machine may make a test: a timed-out test
# whose limit is more than this many times its clean time hung (it is not run again)
LOADED = 10.0


@dataclass(frozen=True)
class JudgeSettings:
    oracle_runs: int = 3
    timeout: float = 600.0  # the most a run may take (its own limit comes from the baseline)
    probes: int = 2  # 0: no reward hacks tried; else the whole set once per env image
    warm: bool = True  # no-op and oracle runs through the toolchain's warm runner, if any
    per_test_timeout: float = 60.0  # the most one test may take

    @property
    def policy(self) -> TimePolicy:
        """How each run's time limits follow from the baseline (:mod:`repogym.limits`)."""
        return policy_for(self.timeout, self.per_test_timeout)


@dataclass
class Judgement:
    """A verdict plus the broken-state run it rests on, and what an accepted task's failing
    tests showed in both states (the statement writer reads it)."""

    verdict: Verdict
    broken_run: TestRun | None = None
    evidence: StatementEvidence | None = None


class _Reject(Exception):
    def __init__(self, status: Status, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.status, self.reason, self.detail = status, reason, detail


@dataclass
class Judge:
    sandbox: Sandbox
    toolchain: Toolchain
    baseline: Baseline
    settings: JudgeSettings = field(default_factory=JudgeSettings)
    coverage: CoverageMap | None = None  # per-test coverage at the baseline's commit
    probe_sets: ProbeSets = field(default_factory=ProbeSets)  # shared by an image's judges
    image: str = ""  # the environment image the sandbox runs (names its probe set)
    runner: TestRunner = field(init=False)
    _clean_status: tuple[bool, str] | None = field(default=None, init=False)
    _bug_exact: bool = field(default=False, init=False)  # the last bug patch needed no fuzz
    _unstarted: Any = field(default=None, init=False)  # a warm runner to start before a state
    _setups: dict[tuple[str, str], str] = field(default_factory=dict, init=False)
    _texts: dict[tuple[str, str], str | None] = field(default_factory=dict, init=False)
    # this candidate's gold-run durations of the tests the baseline has no time for (a
    # mined fix's new tests): their limits come from them, not from the ceiling
    _measured: dict[str, float] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        warm = self.toolchain.warm_runner(self.sandbox) if self.settings.warm else None
        self.runner = warm or self.toolchain
        self._unstarted = warm if hasattr(warm, "start") else None

    def judge(self, cand: Candidate) -> Judgement:
        """Judge one candidate. Never raises for the candidate's or the sandbox's sake."""
        start = time.monotonic()
        iid = cand.instance_id
        broken: TestRun | None = None
        self._measured = {}
        try:
            if self._unstarted is not None:  # a warm runner starts in the clean state
                self.sandbox.reset()
                self._unstarted.start()
                self._unstarted = None
            if self.differential(cand):
                broken, f2p, p2p = self._judge_differential(cand)
                f2p, slow = self._confirm_doubtful(cand, broken, f2p)
                p2p = sorted(set(p2p) | slow)
                oracle = f"differential x{self.settings.oracle_runs}"
            else:
                selected = self.selection(cand)
                broken = self._broken_run(cand, selected)
                f2p = not_passing(broken, selected)
                if not f2p:
                    raise _Reject(Status.reject, Reason.no_op.code(),
                                  "no baseline-passing test fails with the bug")
                f2p, _ = self._confirm_doubtful(cand, broken, f2p)
                p2p = sorted(self.baseline.stable_passing() - set(f2p))
                oracle = self._oracle(cand, f2p, p2p)
        except _Reject as r:
            return Judgement(Verdict(instance_id=iid, status=r.status, reason=r.reason,
                                     detail=r.detail, seconds=_since(start)), broken)
        except NoTestsError as exc:  # the state's tests are not runnable here (another runner)
            return Judgement(Verdict(instance_id=iid, status=Status.reject,
                                     reason=Reason.env_mismatch.code("no_runner"),
                                     detail=str(exc)[:2000], seconds=_since(start)), broken)
        except InfraError as exc:
            return Judgement(Verdict(instance_id=iid, status=Status.infra_error,
                                     reason=getattr(exc, "reason", Reason.infra.code("sandbox")),
                                     detail=str(exc)[:2000],
                                     seconds=_since(start)), broken)
        messages = {t: broken.results[t].message for t in f2p if t in broken.results}
        verdict = Verdict(instance_id=iid, status=Status.accept, fail_to_pass=tuple(f2p),
                          pass_to_pass=tuple(p2p), evidence={**messages, "oracle": oracle},
                          time_limits=self.limits([*f2p, *p2p]),
                          runner_changes=self.baseline.runner_changes,
                          protected_files=self.baseline.plugin_files)
        evidence: StatementEvidence | None = None
        try:
            verdict = self._with_confidence(self._probe(cand, verdict))
            evidence = self.statement_evidence(cand, verdict, broken)
        except InfraError as exc:
            verdict = verdict.model_copy(update={
                "status": Status.infra_error, "reason": Reason.infra.code("probe"),
                "detail": str(exc)[:2000]})
            evidence = None
        except _Reject as r:  # a patch that applied a moment ago no longer does
            verdict = verdict.model_copy(update={"status": r.status, "reason": r.reason,
                                                 "detail": r.detail})
            evidence = None
        return Judgement(verdict.model_copy(update={"seconds": _since(start)}), broken, evidence)

    def _with_confidence(self, verdict: Verdict) -> Verdict:
        """The verdict with the checks behind it recorded (:mod:`repogym.schemas.confidence`):
        its oracle and broken runs and probes (from its evidence), the baseline's runs and
        flaky share, a probe that scored."""
        conf = confidence_of(verdict.evidence).model_copy(update={
            "baseline_runs": self.baseline.runs, "baseline_tests": len(self.baseline.outcomes),
            "baseline_flaky": len(self.baseline.flaky),
            "probes_scored": int(Reason.of(verdict.reason) is Reason.probe)})
        return verdict.model_copy(update={
            "evidence": {**verdict.evidence, **confidence_evidence(conf)}})

    def statement_evidence(self, cand: Candidate, verdict: Verdict,
                           broken: TestRun) -> StatementEvidence:
        """What the failing tests show, for the statement: their failure messages, and where
        the toolchain can trace calls, what they call into the changed functions in the
        broken and the gold state (one run of the F2P tests in each)."""
        f2p = verdict.fail_to_pass
        ev = StatementEvidence(
            fail_to_pass=f2p, language=self.toolchain.language, messages={t: broken.results[t].message for t in f2p
                                        if t in broken.results},
            hung=tuple(t for t in f2p if t in broken.results and broken.results[t].timed_out))
        if verdict.status is not Status.accept:
            return ev
        self._state(cand, with_gold=False)
        ev = ev.model_copy(update={"test_sources": self._sources(f2p)})
        traced = traced_tests(f2p)
        tracing = self.toolchain.call_tracer(self.sandbox, cand.gold_patch, traced)
        if tracing is None:
            return ev
        traces = []
        for with_gold in (False, True):
            if with_gold and not self.sandbox.apply_patch(cand.gold_patch):
                self._state(cand, with_gold=True)  # the run changed a file the fix touches
            limits = self.limits(traced)
            if not with_gold:  # a test that hung has shown its call after a second
                limits = limits.model_copy(update={"tests": {
                    t: min(s, HUNG_TRACE_SECONDS) if t in ev.hung else s
                    for t, s in limits.tests.items()}})
            run = self.runner.run_tests(self.sandbox, timeout=limits.run, select=traced,
                                        limits=limits, plugins=[tracing.plugin],
                                        check_runner=False)
            traces.append(tracing.trace_of(run))
        return ev.model_copy(update={"broken": traces[0], "gold": traces[1]})

    def _sources(self, tests: Sequence[str]) -> dict[str, str]:
        out = {}
        for path in sorted({self.toolchain.test_file(t) for t in tests}):
            try:
                out[path] = self.sandbox.read_file(path).decode("utf-8", errors="replace")
            except FileNotFoundError:
                continue
        return out

    def _probe(self, cand: Candidate, verdict: Verdict) -> Verdict:
        """The reward hacks (:mod:`repogym.judges.probe_sets`): the image's whole probe set,
        run once on its first accepted task; one that scores sends the task to review (its
        tests can be gamed that way), with the probe named. Per task, only what differs per
        task: a gold patch that changes a file grading protects must still score 1 when
        graded (else the task cannot be solved as graded: rejected), probes on or off."""
        spec = GradingSpec(instance_id=cand.instance_id, image=self.image, language=cand.language,
                           base_commit=cand.base_commit, bug_patch=cand.bug_patch,
                           test_patch=cand.test_patch, FAIL_TO_PASS=verdict.fail_to_pass,
                           PASS_TO_PASS=verdict.pass_to_pass, time_limits=verdict.time_limits,
                           runner_changes=verdict.runner_changes,
                           protected_files=verdict.protected_files)
        guarded = sorted(p for p in patch_paths(cand.gold_patch)
                         if p in spec.protected_files or self.toolchain.is_protected(p))
        if guarded and self._grade(spec, cand.gold_patch).reward < 1:
            raise _Reject(Status.reject, Reason.gold_discarded.code(),
                          f"the fix changes {guarded[0]}, which grading restores: graded, "
                          "the gold patch does not score 1")
        if self.settings.probes <= 0:  # the check above is the task's own: it always runs
            return verdict
        probes = self.probe_sets.get_or_run(self._setup_key(cand),
                                            lambda: self._probe_set(cand, spec))
        if probes.unsteady:  # run on this task just now: its tests, not the image, are odd
            name = sorted(probes.unsteady)[0]
            seen = ", ".join(f"{r:g}" for r in probes.unsteady[name])
            passed = ", ".join(probes.chance_passes[:3]) or "its FAIL_TO_PASS tests"
            return verdict.model_copy(update={
                "status": Status.review, "reason": Reason.flaky.code("fail_to_pass"),
                "detail": f"graded {len(probes.unsteady[name])} times with the reward hack "
                          f"{name!r}, the task scored {seen}: a score that does not repeat is "
                          f"chance, not a hack -- at the broken state {passed} passed once, "
                          "so FAIL_TO_PASS is flaky there (drop the flaky test, or reject)"})
        if scoring := probes.scoring():
            return verdict.model_copy(update={
                "status": Status.review, "reason": Reason.probe.code(scoring[0]),
                "detail": f"on this environment the reward hack {scoring[0]!r} scores "
                          f"{probes.scores[scoring[0]]} (probed on {probes.task})"})
        evidence = {**verdict.evidence,
                    "probes_passed": f"{len(probes.scores)} probes on {probes.task}"}
        return verdict.model_copy(update={"evidence": evidence})

    def _setup_key(self, cand: Candidate) -> str:
        """What a probe set speaks for: this state's test setup (the toolchain's digest),
        else the image. Read once per commit and per content of the protected files the
        candidate's patches change (a synthetic bug changes none: one read per commit)."""
        patches = (cand.bug_patch, cand.test_patch, cand.gold_patch)
        touched = any(self.toolchain.is_protected(p) for patch in patches
                      for p in patch_paths(patch))
        key = (cand.base_commit, short_hash(*patches) if touched else "")
        if key not in self._setups:
            self._setups[key] = (self.toolchain.runner_setup(self.sandbox) or self.image
                                 or f"sandbox-{id(self.sandbox)}")
        return self._setups[key]

    def _probe_set(self, cand: Candidate, spec: GradingSpec) -> ProbeSet:
        """Every probe that applies to this task, graded as trainers grade."""
        sources = cand.files or tuple(changed_lines(cand.gold_patch))
        ctx = context_in(self.sandbox, spec, sources)
        scores: dict[str, float] = {}
        unsteady: dict[str, tuple[float, ...]] = {}
        chance: dict[str, None] = {}
        for name, patch in probe_patches(ctx).items():
            first = self._grade(spec, patch)
            scores[name] = first.reward
            if first.reward <= 0:
                continue
            rewards = (first.reward, *(self._grade(spec, patch).reward
                                       for _ in range(PROBE_CONFIRMATIONS)))
            if len(set(rewards)) > 1:
                unsteady[name] = rewards
                chance.update(dict.fromkeys(t for t in spec.FAIL_TO_PASS
                                            if first.outcomes.get(t) is Outcome.passed))
        return ProbeSet(image=spec.image, verifier=verifier_version(), task=cand.instance_id,
                        scores=scores, unsteady=unsteady, chance_passes=tuple(chance))

    def _grade(self, spec: GradingSpec, patch: str) -> Result:
        return grade_in(self.sandbox, self.toolchain, spec, patch, timeout=self.settings.timeout,
                        early_stop=True, policy=self.settings.policy)

    def selection(self, cand: Candidate) -> set[str]:
        """The stable passing tests that execute the bug's lines (coverage-guided); all of
        them when a changed line runs at import time or there is no coverage map.

        Raises:
            _Reject: no test executes the changed lines (decided before any run).
        """
        stable = self.baseline.stable_passing()
        if self.coverage is None:
            return stable
        tests = self.coverage.tests_for(changed_lines(cand.bug_patch))
        if tests is None:
            return stable
        if not tests & stable:
            raise _Reject(Status.reject, Reason.uncovered.code(),
                          "no passing test executes the changed lines (decided before any run)")
        return tests & stable

    def differential(self, cand: Candidate) -> bool:
        """Judge against the candidate's own states (not the baseline) when it starts from
        another commit or brings test changes: the baseline says nothing about those."""
        return bool(cand.test_patch.strip()) or cand.base_commit != self.baseline.commit

    def _judge_differential(self, cand: Candidate) -> tuple[TestRun, list[str], list[str]]:
        """The gold state, the broken state once, then the F2P tests in the gold state
        again until they have passed ``oracle_runs`` times.

        F2P: pass in every gold run and fail (or are missing) when broken. P2P: pass in
        both. A test with side effects in any run misbehaves (see
        ``TestResult.side_effects``) and a flaky one disagrees between runs: such tests are
        in neither list.

        Speed (the order is for it): the gold run runs every test; the broken run only
        those that passed there and can fail broken -- those of the test patch's files and
        those executing the code the fix changes (the baseline's per-test coverage, carried
        to the fix's commit by line or, where the lines changed since, by function) -- when
        coverage says which they are. The others run none of the changed code, so their
        broken outcome is their gold one. When the narrow broken run shows no F2P test, the
        passing tests it left out run broken too before anything else, so the verdict is the
        whole suite's; so it does when every test in reach errors (a test file that imports
        what the fix adds), as only a state in which every test errors is not judged. Only
        the F2P tests run again: whether a task holds rests on them,
        while each P2P test has passed in both states here (or runs none of the changed
        code), and one the baseline found flaky is in neither list.
        """
        scope = self._mined_scope(cand)
        gold = self._run_state(cand, with_gold=True, select=None)
        self._measured = {t: r.duration for t, r in gold.results.items()
                          if r.outcome is Outcome.passed and t not in self.baseline.durations}
        reach = _reach(scope, self.toolchain)
        broken = self._broken_run(cand, {t for t in gold.passing() if reach(t)},
                                  part=scope is not None)
        if scope is not None and (broken.all_errored() or not _fixed(broken, gold, reach)):
            # no F2P in reach, or every test in reach errors (click: a test file that
            # imports what the fix adds): the rest decides, and whether the whole state errors
            rest = {t for t in gold.passing() if not reach(t)}
            if rest:
                broken = merged([broken, self._broken_run(cand, rest, part=True)])
            self._all_errored(cand, broken, "broken")
            reach = _reach(None, self.toolchain)
        candidates = _fixed(broken, gold, reach)
        golds = [gold] + [self._run_state(cand, with_gold=True, select=candidates)
                          for _ in range(self.settings.oracle_runs - 1 if candidates else 0)]
        odd = {**broken.misbehaving()}
        for run in golds:
            odd.update(run.misbehaving())
        unsure = set(self.baseline.flaky) | set(self.baseline.misbehaving)
        always = {t for t in gold.passing() if t not in odd and (
            all(run.outcome(t) is Outcome.passed for run in golds[1:]) if t in candidates
            else t not in unsure)}
        f2p = sorted(t for t in always if reach(t) and not _passed(broken, t))
        if not f2p:
            if bad := not_passing(broken, {t for t in gold.passing() if t in odd and reach(t)}):
                raise _Reject(Status.reject, Reason.misbehaving_test.code(),
                              f"the tests the fix makes pass have side effects: {bad[0]}: "
                              f"{odd[bad[0]]}")
            raise _Reject(Status.reject, Reason.no_op.code(),
                          "no test fails before the fix and passes after")
        p2p = sorted(t for t in always if not reach(t) or _passed(broken, t))
        return self._as_graded(cand, broken, f2p, p2p)

    def _as_graded(self, cand: Candidate, broken: TestRun, f2p: list[str],
                   p2p: list[str]) -> tuple[TestRun, list[str], list[str]]:
        """F2P as grading will see it. Grading runs F2P + P2P only; the broken run ran
        more, and a test the task lists neither way -- one that fails with the fix too --
        can take others down with it (a Go test that panics ends its package's binary, and
        the tests after it never run). When the broken run had such a test, the broken
        state runs again without those tests -- the listed tests of the F2P tests' own files,
        as only the tests run beside them could change what they do:
        an F2P test that passes there is not one (it passes in both states, so it is P2P),
        and none left is a no-op."""
        graded = set(f2p) | set(p2p)
        outside = {t for t in broken.results if t not in graded and not _passed(broken, t)}
        outside |= {t for t in (broken.died_in, *broken.culprits) if t and t not in graded}
        if not outside:
            return broken, f2p, p2p
        near = {self.toolchain.test_file(t) for t in f2p}  # what a test beside them can do
        alone = self._broken_run(cand, {t for t in broken.results if t in graded and
                                        self.toolchain.test_file(t) in near} | set(f2p),
                                 part=True)
        passing = {t for t in f2p if _passed(alone, t)}
        if len(passing) == len(f2p):
            raise _Reject(Status.reject, Reason.no_op.code(),
                          f"the tests that fail before the fix pass without it when run as "
                          f"graded (without {sorted(outside)[0]}, which fails either way)")
        return alone, [t for t in f2p if t not in passing], sorted(set(p2p) | passing)

    def _confirm_doubtful(self, cand: Candidate, broken: TestRun,
                       f2p: list[str]) -> tuple[list[str], set[str]]:
        """F2P tests whose failure is in doubt run again, in the broken state: those that
        ran out of a time limit a loaded machine could explain (bitflags' trybuild test
        compiles a dozen crates in about 40 s of its 60: :meth:`_load_could_explain`), and
        those never reported (their test file's process was killed around them: a node-tap
        file in which another test hangs). A test that ran past a limit hundreds of times
        its clean time hung; running it again would only pay its limit twice. One that
        passes then is no F2P test; one that is again not reported is run alone (up to
        :data:`ALONE_MAX` of them), as the test beside a hang is only reported without it.
        Returns F2P without them, and them; none left is a no-op."""
        doubtful = {t for t in f2p if t not in broken.results or (
            broken.results[t].timed_out and self._load_could_explain(t))}
        if not doubtful:
            return f2p, set()
        again = self._broken_run(cand, doubtful, part=True)
        cleared = {t for t in doubtful if _passed(again, t)}
        unreported = sorted(t for t in doubtful - cleared if again.outcome(t) is None)
        if 1 < len(unreported) <= ALONE_MAX:
            cleared |= {t for t in unreported
                        if _passed(self._broken_run(cand, {t}, part=True), t)}
        if len(cleared) == len(f2p):
            raise _Reject(Status.reject, Reason.no_op.code(),
                          f"the tests that failed with the bug only ran out of time or were "
                          f"not reported, and pass when run again ({sorted(cleared)[0]})")
        return [t for t in f2p if t not in cleared], cleared

    def _mined_scope(self, cand: Candidate) -> set[str] | None:
        """Test ids and test files that can change outcome with the fix (None: all): the
        test patch's files, and the tests the baseline's coverage shows executing the lines
        the fix changes -- carried from the fix's parent to the baseline's commit through
        the history between them, by function where they changed again since
        (:meth:`_by_function`); a change to a function's ``def`` line or decorators counts
        as one to its body (the tests that call it). A file whose lines cannot be carried
        (or whose history is not in this sandbox), or whose change runs at import (module
        or class level: an import, a constant), counts by the tests that run any of its
        lines. Reach only narrows the broken run: a test it misses passes with the fix,
        so it is P2P, never wrongly F2P, and a narrow run that finds no F2P test is redone
        on the whole suite."""
        if self.coverage is None:
            return None
        touching: set[str] = set()
        for path, lines in self._at_baseline(cand).items():
            now = self._source_at(self.baseline.commit, path) if lines else None
            if lines and now is not None:  # a changed signature reaches the callers
                lines = heads_as_bodies(now, lines)
            found = self.coverage.tests_for({path: lines}) if lines is not None else None
            if found is None:  # lines not carried, or run at import: the file's tests
                found = self.coverage.tests_in_files([path])
            if found is None:  # a file no test runs a line of (new, or import-only)
                return None
            touching |= found
        return touching | set(changed_lines(cand.test_patch))

    def _at_baseline(self, cand: Candidate) -> dict[str, list[int] | None]:
        """The gold patch's changed lines (its old side: the fix's parent) as lines of the
        baseline's commit, per file; None for a file they cannot all be carried to."""
        changed = changed_lines(cand.gold_patch)
        if cand.base_commit == self.baseline.commit or not changed:
            return dict(changed)
        diff = self.sandbox.exec(["git", "diff", "--no-color", "--no-renames", "-U0",
                                  cand.base_commit, self.baseline.commit, "--", *changed],
                                 timeout=60)
        if not diff.ok:  # the baseline's commit is not in this environment's history
            return dict.fromkeys(changed)
        out: dict[str, list[int] | None] = {}
        for path, lines in changed.items():
            carried = carried_lines(diff.stdout, path, lines)
            lost = [line for line, v in carried.items() if v is None]
            moved = self._by_function(cand.base_commit, path, lost) if lost else []
            out[path] = None if moved is None else sorted(
                {v for v in carried.values() if v is not None} | set(moved))
        return out

    def _by_function(self, commit: str, path: str, lines: list[int]) -> list[int] | None:
        """Lines of ``path`` at ``commit`` that the history since changed again, as the
        baseline commit's lines of the functions they are in (Python: by qualified name):
        the tests that run those functions now are the ones the fix's change can reach.
        Reach only narrows which tests run in the broken state; a test it misses passes
        with the fix all the same, so it is listed as P2P, never wrongly as F2P. None
        (every test of the file) for another language, a line at module or class level,
        or a function gone since."""
        then, now = self._source_at(commit, path), self._source_at(self.baseline.commit, path)
        if then is None or now is None:
            return None
        return carry_by_function(then, now, lines)

    def _source_at(self, commit: str, path: str) -> str | None:
        """A Python file's text at a commit, through git in the sandbox (kept: a judge asks
        for the baseline commit's files once per candidate); None for another language or a
        file git cannot show there."""
        if not path.endswith(".py"):
            return None
        key = (commit, path)
        if key not in self._texts:
            res = self.sandbox.exec(["git", "show", f"{commit}:{path}"], timeout=60)
            self._texts[key] = res.stdout if res.ok else None
        return self._texts[key]

    def limits(self, tests: Sequence[str] | set[str] | None) -> TimeLimits:
        """The time limits of a run of ``tests`` (None: the whole suite): from the
        baseline's durations, and for a test it has none of, this candidate's gold run."""
        base = self.baseline
        return self.settings.policy.limits(
            {**self._measured, **base.durations}, None if tests is None else sorted(tests),
            setup_max=base.setup_max, startup=base.startup)

    def _load_could_explain(self, test: str) -> bool:
        """Whether a loaded machine could have made ``test`` run past its limit: it has no
        clean time, or its limit is at most :data:`LOADED` times that time."""
        clean = self._measured.get(test, self.baseline.durations.get(test))
        if clean is None:
            return True
        return self.settings.policy.test_limit(clean, self.baseline.setup_max) <= LOADED * clean

    def _state(self, cand: Candidate, *, with_gold: bool) -> None:
        """Put the sandbox in the candidate's broken (or gold) state."""
        sb = self.sandbox
        sb.reset(commit=None if cand.base_commit == self.baseline.commit else cand.base_commit)
        if not sb.apply_patch(cand.test_patch):
            raise _Reject(Status.reject, Reason.test_patch_does_not_apply.code())
        if not sb.apply_patch(cand.bug_patch):
            raise _Reject(Status.reject, Reason.bug_patch_does_not_apply.code())
        self._bug_exact = sb.last_apply_exact
        if with_gold and not sb.apply_patch(cand.gold_patch):
            raise _Reject(Status.reject, Reason.gold_patch_does_not_apply.code())

    def _run_state(self, cand: Candidate, *, with_gold: bool,
                   select: set[str] | None, part: bool = False) -> TestRun:
        """Run ``select`` in a state, to the end: a test that hangs or kills the run
        fails (it is timed out, or the run died in it) and the others still report. A run
        that says nothing about the tests (the runner crashed, hung outside any test, or
        every test errored) is blamed on the candidate when the clean state still passes
        (:meth:`_blame`), else it is the sandbox's fault. ``part``: ``select`` is a part of
        the suite chosen by reach, so that every test of it errors says nothing yet of the
        state (the caller asks :meth:`_all_errored` once the whole suite has run)."""
        self._state(cand, with_gold=with_gold)
        limits = self.limits(select)
        run = run_to_end(self.runner, self.sandbox, timeout=limits.run,
                         select=None if select is None else sorted(select), limits=limits,
                         check_runner=False,  # our own candidates: nothing to tamper
                         collect=sorted(patch_paths(cand.test_patch)),  # even where no
                         # python_files names them
                         restore=lambda: self._state(cand, with_gold=with_gold))
        state = "gold" if with_gold else "broken"
        # a synthetic bug is too blunt; a mined fix's commit does not work in this env
        kind = Reason.env_mismatch if self.differential(cand) else Reason.too_blunt
        try:
            _infra_check(run, state)
        except RunInfraError as exc:
            why = _WHY.get(exc.reason)
            if why is not None and (kind is Reason.env_mismatch or not with_gold):
                self._blame(cand, exc, kind.code(why[0]), f"the {state} state {why[1]}")
            raise
        if run.finished and not run.results and (kind is Reason.env_mismatch or not with_gold):
            # a complete report (nonce, exit code) of a run that collected nothing is a fact
            # about that state, not about the sandbox -- and says nothing of the fix (a commit
            # whose test files are not where its configuration looks, e.g. a ``test.py``
            # before ``python_files`` named it): never a no-op
            raise _Reject(Status.reject, kind.code("no_tests"),
                          f"the {state} state collects no test (runner exit {run.exit_code}): "
                          "its test files are not where its configuration looks for them")
        if not part and (kind is Reason.env_mismatch or not with_gold):
            self._all_errored(cand, run, state)
        if with_gold and run.all_errored():
            raise RunInfraError(Reason.infra.code("all_tests_error"),
                                f"gold run: every test errored: {run.log_tail[-300:]}")
        return run

    def _broken_run(self, cand: Candidate, select: set[str] | None,
                    part: bool = False) -> TestRun:
        return self._run_state(cand, with_gold=False, select=select, part=part)

    def _all_errored(self, cand: Candidate, run: TestRun, state: str) -> None:
        """A state in which every test errors is not judged: for a mined fix at an old
        commit that is an environment that does not fit as often as a test that imports
        what the fix adds (iniconfig's "inline type hints": every test, no P2P); a
        synthetic bug is too blunt. Raises when so (see :meth:`_blame`)."""
        if not run.all_errored():
            return
        kind = Reason.env_mismatch if self.differential(cand) else Reason.too_blunt
        self._blame(cand, RunInfraError(Reason.infra.code("all_tests_error"),
                                        f"{state} run: every test errored: "
                                        f"{run.log_tail[-300:]}"),
                    kind.code("all_tests_error"),
                    f"the {state} state makes every selected test error (an import-time "
                    "crash)")

    def _blame(self, cand: Candidate, infra: RunInfraError, reason: str, detail: str) -> None:
        """Raise a rejection if the clean state's tests pass (the sandbox is sound and the
        bug broke everything), else the infrastructure error. The clean state is the
        baseline's (a few of its stable tests), or for a candidate at another commit that
        commit's own suite (the baseline's test ids need not exist there): some must pass."""
        if cand.base_commit != self.baseline.commit:
            self.sandbox.reset(commit=cand.base_commit)
            limits = self.limits(None)
            clean = self.runner.run_tests(self.sandbox, timeout=limits.run, limits=limits,
                                          check_runner=False,
                                          collect=sorted(patch_paths(cand.test_patch)))
            if not (clean.trusted and clean.passing()):
                why = "; ".join(clean.problems) or (
                    "no test passes" if clean.finished else "no complete report")
                raise RunInfraError(
                    Reason.infra.code(SUITE_DOES_NOT_RUN),
                    f"at {cand.base_commit[:12]} the commit's own suite does not run in this "
                    f"environment ({why}): {clean.log_tail[-300:]}; the candidate's run: "
                    f"{str(infra)[-300:]}")
            sound = True
        else:
            sample = set(sorted(self.baseline.stable_passing())[:SANITY_TESTS])
            self.sandbox.reset()
            limits = self.limits(sample)
            clean = self.runner.run_tests(self.sandbox, timeout=limits.run, select=sorted(sample),
                                          limits=limits, check_runner=False)
            sound = clean.trusted and not not_passing(clean, sample)
        if not sound:
            raise infra
        raise _Reject(Status.reject, reason, f"{detail}: {str(infra)[-300:]}")

    def restores_baseline(self, cand: Candidate, bug_applied_exactly: bool = False) -> bool:
        """True when bug + gold patch give back exactly the baseline's tree: then the
        baseline's K runs (every stable test passed in each) already are the oracle.

        When the bug went in with plain ``git apply`` and the gold patch is its exact
        reverse, that is so by construction. Otherwise it is checked right after the broken
        run: the gold patch goes on top of that tree (what the run left behind only makes
        the trees differ, which is the safe answer) and ``git status`` must match the clean
        tree's.
        """
        if cand.test_patch.strip() or self.baseline.runs < self.settings.oracle_runs:
            return False
        sb = self.sandbox
        if bug_applied_exactly and cand.gold_patch == reverse_diff(cand.bug_patch):
            return True  # a diff applied exactly, then its exact reverse: the same tree
        clean = self._clean_tree_status()
        if not sb.apply_patch(cand.gold_patch):  # the run changed a file the fix touches
            sb.reset()
            for patch, what in ((cand.bug_patch, "bug"), (cand.gold_patch, "gold")):
                if not sb.apply_patch(patch):
                    raise _Reject(Status.reject, Reason(f"{what}_patch_does_not_apply").code())
        after = sb.exec(STATUS, timeout=60)
        return clean is not None and after.ok and clean == after.stdout

    def _clean_tree_status(self) -> str | None:
        """``git status`` of the clean tree (once per judge; None if git failed)."""
        if self._clean_status is None:
            self.sandbox.reset()
            res = self.sandbox.exec(STATUS, timeout=60)
            self._clean_status = (res.ok, res.stdout)
        ok, status = self._clean_status
        return status if ok else None

    def _oracle(self, cand: Candidate, f2p: list[str], p2p: list[str]) -> str:
        """Check the gold state; says how ("baseline xK" when no test had to run again)."""
        if self.restores_baseline(cand, self._bug_exact):
            return f"baseline x{self.baseline.runs}"
        wanted = set(f2p) | set(p2p)
        for i in range(self.settings.oracle_runs):
            run = self._run_state(cand, with_gold=True, select=wanted)
            bad = not_passing(run, wanted)
            if bad:
                which = "fail_to_pass" if set(bad) & set(f2p) else "pass_to_pass"
                raise _Reject(Status.reject, Reason.oracle.code(which),
                              f"run {i + 1}: {len(bad)} test(s) fail with the gold patch: "
                              + ", ".join(bad[:5]))
        return f"reran x{self.settings.oracle_runs}"


# what a run that says nothing about the tests means, when the clean state still passes
_WHY = {Reason.infra.code("incomplete_report"): ("runner_crash",
                                                "crashes the test runner itself"),
        Reason.infra.code("timeout"): ("hang", "makes the test run hang outside any test (at "
                                               "import or collection)"),
        # the runner's process ended in a way its report contradicts: a test JVM that died
        # on its own, an exit status the report disagrees with (commons-cli: a mutant whose
        # broken state killed the forked JVM was infra, and judged again on every run)
        Reason.infra.code("inconsistent_report"): ("runner_crash",
                                                  "leaves a test report that cannot be "
                                                  "trusted (the runner's process died or "
                                                  "contradicts it)")}


TRACED_PER_FUNCTION = 2  # a statement shows a few examples per broken behaviour
HUNG_TRACE_SECONDS = 1.0  # what a test that hung gets to show its call
TRACED_MAX = 12


def traced_tests(f2p: Sequence[str]) -> list[str]:
    """The F2P tests worth tracing: a couple per test function (parametrized cases of one
    test show the same behaviour), at most :data:`TRACED_MAX`."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for test in f2p:
        function = test.split("[")[0]
        if seen.get(function, 0) < TRACED_PER_FUNCTION and len(out) < TRACED_MAX:
            seen[function] = seen.get(function, 0) + 1
            out.append(test)
    return out


def _passed(run: TestRun, test: str) -> bool:
    return run.outcome(test) is Outcome.passed


def _reach(scope: set[str] | None, toolchain: Toolchain) -> Callable[[str], bool]:
    """Whether a test is in a run's scope: named, its file named, or every test (None)."""
    if scope is None:
        return lambda _test: True
    return lambda test: test in scope or toolchain.test_file(test) in scope


def _fixed(broken: TestRun, gold: TestRun, reach: Callable[[str], bool]) -> set[str]:
    """The tests in reach that pass with the fix and did not pass broken."""
    return {t for t in gold.passing() if reach(t) and not _passed(broken, t)}


def not_passing(run: TestRun, tests: set[str]) -> list[str]:
    """The tests that did not pass in ``run`` (missing from the report counts as not passing)."""
    return sorted(t for t in tests if (o := run.outcome(t)) is None or not o.ok)


class RunInfraError(InfraError):
    """A test run that says nothing trustworthy about the code; ``reason`` is the code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _infra_check(run: TestRun, state: str) -> None:
    """Raise RunInfraError when the run says nothing trustworthy about the code."""
    if run.timed_out:
        raise RunInfraError(Reason.infra.code("timeout"),
                            f"{state} run timed out after {run.duration:.0f}s")
    if not run.finished:
        raise RunInfraError(Reason.infra.code("incomplete_report"),
                            f"{state} run ended without a complete report "
                            f"(exit {run.exit_code}): {run.log_tail[-300:]}")
    if run.problems:
        raise RunInfraError(Reason.infra.code("inconsistent_report"),
                            f"{state} run report is inconsistent: {'; '.join(run.problems)}")


def _since(start: float) -> float:
    return round(time.monotonic() - start, 3)
