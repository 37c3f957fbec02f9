"""The stages of one repository's run, as plain functions (the Prefect flow is a thin shell).

    clone -> env -> baseline -> generate -> judge -> write

Each function takes typed inputs and returns typed outputs; none knows about Prefect.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, Sequence, TypeVar

from repogym.baseline import baseline_format, record_baseline
from repogym.build_failures import (
    ATTEMPTS,
    BuildFailure,
    BuildLedger,
    SuiteFailure,
    SuiteLedger,
)
from repogym.cache import RecordCache
from repogym.config import Settings
from repogym.datasets.store import DatasetStore
from repogym.errors import (
    EnvDoesNotInstall,
    InstallError,
    NoTestsError,
    RepogymError,
    TestRunError,
)
from repogym.generators.combined import combined_candidates
from repogym.generators.leaks import statement_leaks
from repogym.generators.llm import (
    LLMClient,
    LLMSettings,
    default_cache_dir,
    llm_statement,
)
from repogym.generators.mined import (
    CommitSelection,
    MiningResult,
    dependency_fingerprint,
    mine_candidates,
)
from repogym.generators.registry import GenerationRequest, generate_all
from repogym.generators.statements import evidence_from_messages, with_observations
from repogym.judges.judge import SUITE_DOES_NOT_RUN, Judge, JudgeSettings
from repogym.judges.llm_judge import llm_judge
from repogym.judges.probe_sets import ProbeSets
from repogym.judges.unsolvable import unstated_names
from repogym.limits import policy_for
from repogym.repos import clone
from repogym.sandboxes import get_provider
from repogym.sandboxes.base import Limits, SandboxProvider
from repogym.schemas.calls import StatementEvidence
from repogym.schemas.reasons import Reason
from repogym.schemas.records import (
    Baseline,
    Candidate,
    CandidateKind,
    Checkout,
    CoverageMap,
    EnvImage,
    EnvSpec,
    Judged,
    RepoSpec,
    Status,
    Verdict,
)
from repogym.shared_envs import Askers, served_by
from repogym.toolchains import detect_toolchain
from repogym.toolchains.base import Toolchain

log = logging.getLogger(__name__)
Progress = Callable[[str, int, int], None]
T = TypeVar("T")
# How a stage is executed: directly (default), or as a Prefect task (flows/repo_flow.py).
StageRunner = Callable[[str, Callable[[], T]], T]


def direct(stage: str, fn: Callable[[], T]) -> T:
    return fn()


def _quiet(stage: str, done: int, total: int) -> None:
    return None


@dataclass
class Prepared:
    checkout: Checkout
    toolchain: Toolchain
    env_spec: EnvSpec


@dataclass
class RunSummary:
    """What one repository's run did; printed by the CLI, kept as JSON beside the dataset."""

    repo: str
    commit: str = ""
    image: str = ""
    image_reused: bool = False  # the env image existed (same content-addressed tag)
    candidates: int = 0
    judged: int = 0  # candidates sent to the judge by this run
    skipped_seen: int = 0
    accepted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    per_mutator: dict[str, dict[str, int]] = field(default_factory=dict)
    per_generator: dict[str, dict[str, int]] = field(default_factory=dict)
    baseline_tests: int = 0
    baseline_passing: int = 0
    baseline_flaky: int = 0
    baseline_misbehaving: int = 0  # tests kept out of tasks (side effects, hangs, killed runs)
    set_aside: dict[str, str] = field(default_factory=dict)  # those tests -> why
    stage_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None

    @property
    def yield_rate(self) -> float:
        judged = self.candidates - self.skipped_seen
        return self.accepted / judged if judged else 0.0


def provider_for(settings: Settings) -> SandboxProvider:
    return get_provider(settings.provider, settings)


def judge_settings(settings: Settings) -> JudgeSettings:
    """The judge's settings of a run."""
    return JudgeSettings(oracle_runs=settings.oracle_runs, timeout=settings.test_timeout,
                         probes=settings.probes, warm=settings.warm_runner,
                         per_test_timeout=settings.per_test_timeout)


def limits_for(settings: Settings) -> Limits:
    return Limits(memory_mb=settings.memory_mb, cpus=settings.cpus, pids=settings.pids)


def prepare(spec: RepoSpec, settings: Settings) -> Prepared:
    """Clone and pick the toolchain and its install recipe. Raises InputError subclasses."""
    checkout = clone(spec, settings.cache_dir)
    toolchain = detect_toolchain(checkout.path)
    return Prepared(checkout, toolchain, toolchain.env_spec(checkout, settings.base_image))


def build_env(provider: SandboxProvider, prepared: Prepared, settings: Settings) -> EnvImage:
    log_dir = settings.logs_dir / prepared.checkout.name / prepared.env_spec.digest()
    log_dir.mkdir(parents=True, exist_ok=True)
    return provider.build_env(prepared.env_spec, prepared.checkout.path, log_dir)


def baseline_in(provider: SandboxProvider, env: EnvImage, prepared: Prepared,
                settings: Settings) -> Baseline:
    with provider.open(env, limits_for(settings)) as sandbox:
        return record_baseline(sandbox, prepared.toolchain, repo=prepared.checkout.name,
                               commit=prepared.checkout.commit, image=env.ref,
                               runs=settings.baseline_runs, timeout=settings.test_timeout,
                               policy=policy_for(settings.test_timeout,
                                                 settings.per_test_timeout))


def coverage_in(provider: SandboxProvider, env: EnvImage, prepared: Prepared, base: Baseline,
                settings: Settings) -> CoverageMap | None:
    """Per-test coverage at the pinned commit, cached by env image and report format; None
    if unmeasurable."""
    # keyed by what the report plugin records too: a run of another plugin measured other lines
    cache = RecordCache(settings.cache_dir / "coverage", CoverageMap)
    key = f"{prepared.checkout.name}-{prepared.env_spec.digest()}-{baseline_format()}"
    if (known := cache.get(key)) is not None:
        return known
    try:
        with provider.open(env, limits_for(settings)) as sandbox:
            sandbox.reset()
            cov = prepared.toolchain.coverage(sandbox, timeout=settings.test_timeout * 3,
                                              select=sorted(base.stable_passing()))
    except TestRunError as exc:
        log.warning("%s: no per-test coverage, mutating every line: %s",
                    prepared.checkout.name, str(exc).splitlines()[0])
        return None
    if cov is not None:
        cache.put(key, cov)
    return cov


def target_lines(cov: CoverageMap | None, base: Baseline) -> dict[str, set[int]] | None:
    """Lines some stable passing test executes (None: no coverage, target everything)."""
    return None if cov is None else cov.lines_covered_by(base.stable_passing())


def llm_client(settings: Settings) -> LLMClient:
    """The LLM client of a run (``REPOGYM_LLM_*`` settings; disabled without a model)."""
    return LLMClient(LLMSettings(), default_cache_dir(settings.out))


def generate(prepared: Prepared, settings: Settings, lines: dict[str, set[int]] | None = None,
             client: LLMClient | None = None) -> list[Candidate]:
    """Synthetic candidates from every enabled generator, ``max_candidates`` each."""
    request = GenerationRequest(checkout=prepared.checkout, toolchain=prepared.toolchain,
                                seed=settings.seed, max_candidates=settings.max_candidates,
                                lines=lines, client=client)
    return generate_all(settings.generators, request)


def mining_enabled(settings: Settings) -> bool:
    """Whether the run mines history (the ``mined`` generator with a budget above 0)."""
    return "mined" in settings.generators and settings.max_mined > 0


def commit_selection(settings: Settings) -> CommitSelection:
    """The commits the mined generator looks at (``--mine-last``, ``--since``, ``--range``)."""
    return CommitSelection(last=settings.mine_last, since=settings.mine_since,
                           rev_range=settings.mine_range)


def mine(prepared: Prepared, settings: Settings, store: DatasetStore) -> list[Candidate]:
    """Fixes from history not judged before (their commits are remembered in the dataset)."""
    if not mining_enabled(settings):
        return []
    seen = mined_commits(store, prepared.checkout.name)
    return mine_commits(prepared, settings, seen).candidates


def mine_commits(prepared: Prepared, settings: Settings, seen: Collection[str],
                 mined_up_to: str | None = None) -> MiningResult:
    """One mining pass: the selection's commits (only those after ``mined_up_to`` when it is
    an ancestor of the tip), less the ``seen`` ones, up to ``max_mined`` candidates."""
    return mine_candidates(prepared.checkout, prepared.toolchain, commit_selection(settings),
                           seen_commits=seen, max_candidates=settings.max_mined,
                           mined_up_to=mined_up_to)


def mined_commits(store: DatasetStore, repo: str) -> set[str]:
    """Commits whose mined candidate has a verdict (accepted, rejected, in review, retired)."""
    decided = store.decided_ids("rejected")
    rows = [*store.rows("tasks", repo=repo), *store.rows("retired", repo=repo)] + [
        r for r in store.rows("rejected", repo=repo) if r.instance_id in decided]
    return {r.provenance["commit"] for r in rows
            if r.kind is CandidateKind.mined and "commit" in r.provenance}


def env_commit_of(cand: Candidate) -> str:
    """The commit whose dependencies a mined task needs: the fix's own when it changes them
    (the gold patch needs the new ones), else its parent's."""
    if cand.provenance.get("deps_changed") == "true":
        return cand.provenance.get("commit", cand.base_commit)
    return cand.base_commit


def judge_mined(provider: SandboxProvider, env: EnvImage, prepared: Prepared, base: Baseline,
                cands: Sequence[Candidate], settings: Settings,
                progress: Progress = _quiet, client: LLMClient | None = None,
                judge: "JudgeFn | None" = None,
                coverage: CoverageMap | None = None) -> list[Judged]:
    """Judge mined candidates in the main env when their dependencies match it (the same
    install files, or a recipe the main env already satisfies: :mod:`repogym.shared_envs`),
    else in an env built at their (newest) commit with those dependencies: content-addressed
    by the dependency fingerprint, so most commits share one, and one built for a later
    commit serves an earlier one whose recipe it satisfies (:class:`OldCommitEnvs`). Those
    envs are built while the judge works (:func:`judge_groups`). ``judge`` judges a batch in one env
    (default :func:`judge_all`). ``coverage`` (the baseline's, by file) narrows each fix's
    broken run to the tests of its test patch and those executing a file it changes; a
    narrow run that finds no failing test is redone on the whole suite, so a map of another
    commit can cost time, never a verdict."""
    judge = judge or judge_all
    repo_path = prepared.checkout.path
    main = dependency_fingerprint(repo_path, prepared.checkout.commit)
    groups: dict[str, list[Candidate]] = {}
    for cand in cands:  # newest first, so a group's first env commit has the others' history
        fp = dependency_fingerprint(repo_path, env_commit_of(cand))
        groups.setdefault(fp, []).append(cand)
    suites = SuiteLedger(settings.cache_dir / "suite-failures")

    def judged_in(image: EnvImage, group: list[Candidate]) -> list[Judged]:
        """Judge a group in one env, but not the candidates whose commit's suite is known
        not to run there; settle the suite failures this run saw."""
        known = {c.instance_id: f for c in group
                 if (f := suites.get(image.ref, c.base_commit)) is not None and f.settled}
        todo = [c for c in group if c.instance_id not in known]
        done = {j.candidate.instance_id: _settle_suite(j, suites, prepared.checkout.name)
                for j in judge(provider, image, prepared, base, todo, settings, progress,
                               client, coverage)}
        return [done[c.instance_id] if c.instance_id in done
                else _suite_does_not_run(c, image.ref, known[c.instance_id]) for c in group]

    others = {fp: env_commit_of(g[0]) for fp, g in groups.items() if fp != main}
    for fp in served_by(provider, env, prepared.toolchain, others,
                        lambda commit: _checkout_at(prepared, commit, settings),
                        settings.cache_dir):
        groups.setdefault(main, []).extend(groups.pop(fp))
    askers = Askers(provider, prepared.toolchain)  # asked in the builds' thread only
    envs = OldCommitEnvs(env.ref, build=lambda commit: _env_at(provider, prepared, commit, settings),
                         serves=lambda image, commit: bool(served_by(
                             provider, image, prepared.toolchain, {commit: commit},
                             lambda c: _checkout_at(prepared, c, settings), settings.cache_dir,
                             askers)),
                         retire=askers.drop)
    try:
        return judge_groups(groups, main, env, judged_in, envs, ahead=provider.parallel)
    finally:
        askers.close()


def judge_groups(groups: dict[str, list[Candidate]], main: str, env: EnvImage,
                 judged_in: Callable[[EnvImage, list[Candidate]], list[Judged]],
                 envs: "OldCommitEnvs", ahead: bool = True) -> list[Judged]:
    """Judge each group of mined candidates in its environment: the group of ``main`` in
    ``env``, the others where ``envs`` places them. With ``ahead``, the other groups'
    environments are found (built) one after the other in a thread while the judge works
    on the groups before them -- a build is mostly waiting on the engine and pip, the
    judge on its sandbox -- so a history whose old commits need images of their own
    costs about the builds' time, not the builds' and the judge's. Results keep the
    groups' order."""
    others = [fp for fp in groups if fp != main]
    done: dict[str, list[Judged]] = {}
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="old-envs") as pool:
        found = {fp: pool.submit(envs.place, groups[fp]) for fp in others} if ahead else {}
        try:
            if main in groups:
                done[main] = judged_in(env, groups[main])
            for fp in others:
                place = found[fp].result() if ahead else envs.place(groups[fp])
                done[fp] = judged_in(place, groups[fp]) if isinstance(place, EnvImage) else place
        finally:
            for future in found.values():
                future.cancel()  # a judge that failed stops the builds not begun
    return [j for fp in groups for j in done[fp]]


class OldCommitEnvs:
    """Where the mined fixes of old commits are judged: an image built earlier in this run
    that already serves the commit (:mod:`repogym.shared_envs`; markupsafe's
    ``requirements/tests.txt`` stays the same over several ``pyproject.toml`` versions),
    else one built for it (``build``, :func:`_env_at`). Only the last
    :attr:`SERVE_CHECKS` images built are asked: they are the commits nearest in time.
    ``main_ref`` is the image a fix that gets no environment is recorded against;
    ``retire`` is told of an image no longer asked (its sandbox can go)."""

    SERVE_CHECKS = 2

    def __init__(self, main_ref: str, build: Callable[[str], EnvImage],
                 serves: Callable[[EnvImage, str], bool],
                 retire: Callable[[EnvImage], None] = lambda image: None) -> None:
        self.main_ref, self.build, self.serves, self.retire = main_ref, build, serves, retire
        self.built: list[EnvImage] = []

    def place(self, group: list[Candidate]) -> EnvImage | list[Judged]:
        """The environment ``group`` is judged in (the commit of its first candidate
        decides), or its candidates' verdicts when it has none."""
        commit = env_commit_of(group[0])
        for image in reversed(self.built[-self.SERVE_CHECKS:]):
            if self.serves(image, commit):
                log.info("%s: judged in %s, built for a later commit", commit[:12], image.ref)
                return image
        try:
            image = self.build(commit)
        except EnvDoesNotInstall as known:
            return [_does_not_install(c, self.main_ref, known.failure) for c in group]
        except NoTestsError as exc:  # that commit's tests run with a runner we do not read
            return [_no_runner(c, self.main_ref, str(exc)) for c in group]
        except RepogymError as exc:
            return [_infra(c, self.main_ref, f"env for {env_commit_of(c)[:12]}: {exc}")
                    for c in group]
        self.built.append(image)
        if len(self.built) > self.SERVE_CHECKS:
            self.retire(self.built[-self.SERVE_CHECKS - 1])
        return image


def _settle_suite(judged: Judged, suites: SuiteLedger, repo: str) -> Judged:
    """A candidate whose commit's own suite did not run in its env: an infrastructure error
    the first time, a rejection once that repeats (in another run); any other verdict says
    the suite ran there, and clears the record."""
    cand, verdict = judged.candidate, judged.verdict
    if verdict.reason != Reason.infra.code(SUITE_DOES_NOT_RUN):
        if verdict.status is not Status.infra_error and suites.get(judged.image,
                                                                   cand.base_commit):
            suites.clear(judged.image, cand.base_commit)
        return judged
    failure = suites.record(repo, judged.image, cand.base_commit, verdict.reason, verdict.detail)
    log.warning("%s: the suite at %s did not run in %s (%d of %d)", repo,
                cand.base_commit[:12], judged.image, failure.attempts, ATTEMPTS)
    return _suite_does_not_run(cand, judged.image, failure) if failure.settled else judged


def _suite_does_not_run(cand: Candidate, image: str, failure: SuiteFailure) -> Judged:
    """Rejected: the fix's commit does not run its own suite in the environment it has (the
    record is kept: it is not judged there again)."""
    verdict = Verdict(instance_id=cand.instance_id, status=Status.reject,
                      reason=Reason.env_mismatch.code(SUITE_DOES_NOT_RUN),
                      detail=failure.describe()[:2000],
                      evidence={"suite_failures": str(failure.attempts)})
    return Judged(candidate=cand, verdict=verdict, statement=cand.statement, image=image)


def _env_at(provider: SandboxProvider, prepared: Prepared, commit: str,
            settings: Settings) -> EnvImage:
    """The environment at ``commit``, built unless its spec is known not to install.

    Raises:
        EnvDoesNotInstall: the spec failed to install :data:`~repogym.build_failures.ATTEMPTS`
            times (now, or in earlier runs: then it is not built again).
        RepogymError: the build failed otherwise, or for the first time(s).
    """
    checkout, env_spec = _commit_spec(prepared, commit, settings)
    ledger = BuildLedger(settings.cache_dir / "build-failures")
    if (known := ledger.get(env_spec)) is not None and known.settled:
        raise EnvDoesNotInstall(known)
    try:
        env = build_env(provider, Prepared(checkout, prepared.toolchain, env_spec), settings)
    except InstallError as exc:
        failure = ledger.record(env_spec, exc)
        log.warning("%s: env at %s failed to install (%d of %d): %s", prepared.checkout.name,
                    commit[:12], failure.attempts, ATTEMPTS, exc)
        if failure.settled:
            raise EnvDoesNotInstall(failure) from exc
        raise
    if known is not None:
        ledger.clear(env_spec)
    return env


def _commit_spec(prepared: Prepared, commit: str,
                 settings: Settings) -> tuple[Checkout, EnvSpec]:
    """``commit`` checked out (in the history folder of the cache: one at a time) and the
    environment its recipe asks for.

    Raises:
        SourceError: no such commit.
        NoTestsError: nothing to test there.
    """
    spec = RepoSpec(source=str(prepared.checkout.path), commit=commit, name=prepared.checkout.name)
    checkout = clone(spec, settings.cache_dir / "history")
    return checkout, prepared.toolchain.env_spec(checkout, settings.base_image)


def _checkout_at(prepared: Prepared, commit: str, settings: Settings) -> tuple[Path, EnvSpec]:
    checkout, spec = _commit_spec(prepared, commit, settings)
    return checkout.path, spec


def _no_runner(cand: Candidate, image: str, detail: str) -> Judged:
    verdict = Verdict(instance_id=cand.instance_id, status=Status.reject,
                      reason=Reason.env_mismatch.code("no_runner"), detail=detail[:2000])
    return Judged(candidate=cand, verdict=verdict, statement=cand.statement, image=image)


def _infra(cand: Candidate, image: str, detail: str) -> Judged:
    verdict = Verdict(instance_id=cand.instance_id, status=Status.infra_error,
                      reason=Reason.infra.code("env"), detail=detail[:2000])
    return Judged(candidate=cand, verdict=verdict, statement=cand.statement, image=image)


def _does_not_install(cand: Candidate, image: str, failure: BuildFailure) -> Judged:
    """Rejected: the fix's commit has no environment to judge it in (and will not have one
    with this recipe: the record is kept, so it is not built again)."""
    verdict = Verdict(instance_id=cand.instance_id, status=Status.reject,
                      reason=Reason.env.code("does_not_install"), detail=failure.describe()[:2000],
                      evidence={"env_digest": failure.digest,
                                "install_attempts": str(failure.attempts),
                                "recipe_version": failure.recipe_version})
    return Judged(candidate=cand, verdict=verdict, statement=cand.statement, image=image)


def combine(prepared: Prepared, settings: Settings, store: DatasetStore,
            judged: Sequence[Judged]) -> list[Candidate]:
    """Combinations of bugs accepted for this repo and commit (this run's and earlier ones)."""
    if settings.max_combined == 0:
        return []
    accepted = {j.candidate.instance_id: j.candidate for j in judged
                if j.verdict.status is Status.accept}
    for row in store.rows("tasks", repo=prepared.checkout.name):
        if row.base_commit == prepared.checkout.commit:
            accepted.setdefault(row.instance_id, row.to_candidate())
    return combined_candidates(list(accepted.values()), prepared.checkout, seed=settings.seed,
                               max_candidates=settings.max_combined)


def unseen(candidates: Sequence[Candidate], store: DatasetStore) -> list[Candidate]:
    """Candidates not judged before (an earlier infra_error does not count as judged; a
    retired task does: it was a task, and stays out)."""
    done = store.verdict_ids()
    return [c for c in candidates if c.instance_id not in done]


def judge_all(provider: SandboxProvider, env: EnvImage, prepared: Prepared, baseline: Baseline,
              candidates: Sequence[Candidate], settings: Settings,
              progress: Progress = _quiet, client: LLMClient | None = None,
              coverage: CoverageMap | None = None) -> list[Judged]:
    """Judge every candidate, each worker in one warm sandbox reset between checks.

    ``settings.workers`` > 1 splits the candidates over that many sandboxes judged in
    parallel threads (providers whose envs allow one sandbox at a time use one worker).
    Results keep the candidates' order. No candidate: no sandbox is opened.
    """
    if not candidates:
        return []
    jset = judge_settings(settings)
    workers = max(1, min(settings.workers if provider.parallel else 1, len(candidates)))
    done = [0]
    lock = threading.Lock()

    probe_sets = ProbeSets(settings.cache_dir / "probes")

    def work(chunk: Sequence[tuple[int, Candidate]]) -> list[tuple[int, Judged]]:
        out = []
        with provider.open(env, limits_for(settings)) as sandbox:
            judge = Judge(sandbox, prepared.toolchain, baseline, jset, coverage,
                          probe_sets=probe_sets, image=env.ref)
            for i, cand in chunk:
                judgement = judge.judge(cand)
                out.append((i, judged_with_statement(cand, judgement.verdict, env.ref, client,
                                                     judgement.evidence)))
                with lock:
                    done[0] += 1
                    progress("judge", done[0], len(candidates))
        return out

    indexed = list(enumerate(candidates))
    chunks = [indexed[w::workers] for w in range(workers)]
    if workers == 1:
        results = work(indexed)
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
            results = [r for part in pool.map(work, chunks) for r in part]
    progress("judge", len(candidates), len(candidates))
    return [j for _, j in sorted(results, key=lambda r: r[0])]


# The signature of judge_all: (provider, env, prepared, baseline, candidates, settings,
# progress, client, coverage) -> one Judged per candidate, in the candidates' order.
JudgeFn = Callable[..., list[Judged]]
BaselineFn = Callable[[SandboxProvider, EnvImage, Prepared, Settings], Baseline]
MineFn = Callable[[Prepared, Settings, DatasetStore], list[Candidate]]


@dataclass
class Hooks:
    """Replaceable steps of :func:`run_repo`, for callers that skip or move work.

    ``baseline`` records (or fetches) the baseline of an env; ``judge`` judges a batch of
    candidates with :func:`judge_all`'s signature and contract; ``mine`` returns the mined
    candidates (:func:`mine`'s contract). The corpus flow replaces them to reuse cached
    baselines, to judge on a Dask cluster and to mine only the commits new since its last run.
    """

    baseline: BaselineFn = baseline_in
    judge: JudgeFn = judge_all
    mine: MineFn = mine


def judged_with_statement(cand: Candidate, verdict: Verdict, image: str,
                          client: LLMClient | None = None,
                          evidence: StatementEvidence | None = None) -> Judged:
    """Attach the statement: for a synthetic bug (or a fix whose message said only how it
    was made) the LLM issue writer when configured, else the offline writer, from what the
    failing tests show (``evidence``: the judge's; else their failure messages); a mined
    fix's cleaned message, with what its tests show under it. An accepted task whose
    statement leaks the fix goes to review, and so does one the LLM judge (when enabled:
    ``REPOGYM_LLM_JUDGE``) scores low on clarity or solvability."""
    statement = cand.statement
    if verdict.status is Status.accept:
        evidence = evidence or evidence_from_messages(verdict.fail_to_pass, verdict.evidence)
        if statement:
            statement = with_observations(statement, evidence)
        else:
            statement, cost = llm_statement(cand, evidence, client)
            if cost:
                verdict = verdict.model_copy(update={
                    "evidence": {**verdict.evidence, "statement_cost_usd": f"{cost:.6f}"}})
    if verdict.status is Status.accept:
        verdict = flag_unsolvable(cand, verdict, statement, evidence)
    verdict = llm_judge(cand, verdict, statement, client)  # looks at accepted tasks only
    return Judged(candidate=cand, verdict=verdict, statement=statement, image=image)


def flag_unsolvable(cand: Candidate, verdict: Verdict, statement: str,
                    evidence: StatementEvidence | None = None) -> Verdict:
    """Send an accepted task to review when its statement leaks the fix or leaves out names
    the tests need (both are borderline calls a reviewer makes). The functions the failing
    tests call in the broken state (``evidence``) exist before the fix: naming them leaks
    nothing."""
    existing = evidence.called_names() if evidence is not None else frozenset()
    leaked = (statement_leaks(statement, cand.gold_patch, cand.test_patch, existing)
              if statement else [])
    if leaked:
        first = leaked[0]
        return verdict.model_copy(update={
            "status": Status.review, "reason": Reason.statement_leak.code(),
            "detail": f"the statement gives the fix away ({first.kind.value}): "
                      f"{first.fragment!r}"})
    unstated = unstated_names(cand.gold_patch, cand.test_patch, statement)
    if unstated:
        return verdict.model_copy(update={
            "status": Status.review, "reason": Reason.underspecified.code(),
            "detail": "the tests use names the fix introduces and the statement never "
                      f"mentions: {', '.join(unstated)}"})
    return verdict


def summarize(summary: RunSummary, judged: Sequence[Judged]) -> RunSummary:
    reasons = Counter(j.verdict.reason or j.verdict.status.value for j in judged
                      if j.verdict.status is not Status.accept)
    summary.accepted = sum(j.verdict.status is Status.accept for j in judged)
    summary.rejected = dict(sorted(reasons.items()))
    per: dict[str, dict[str, int]] = {}
    gen: dict[str, dict[str, int]] = {}
    for j in judged:
        ok = j.verdict.status is Status.accept
        single = j.candidate.generator != "combined"  # combinations are counted as one kind
        mutator = (j.candidate.mutator if single else "") or j.candidate.generator
        for table, key in ((per, mutator), (gen, j.candidate.generator)):
            row = table.setdefault(key, {"candidates": 0, "accepted": 0})
            row["candidates"] += 1
            row["accepted"] += ok
    summary.per_generator = dict(sorted(gen.items()))
    summary.per_mutator = dict(sorted(per.items()))
    return summary


def run_repo(spec: RepoSpec, settings: Settings, progress: Progress = _quiet,
             provider: SandboxProvider | None = None, runner: StageRunner = direct,
             hooks: Hooks | None = None) -> RunSummary:
    """All stages for one repository. ``runner`` executes each stage (Prefect in the flow);
    ``hooks`` replace the baseline and judge steps (default: record and judge here).

    Input and infrastructure errors propagate; the caller decides how to report them.
    """
    start = time.monotonic()
    hooks = hooks or Hooks()
    provider = provider or provider_for(settings)
    summary = RunSummary(repo=spec.name or spec.source)
    timer = _Timer(summary, progress, runner)
    prepared = timer("clone", lambda: prepare(spec, settings))
    summary.repo, summary.commit = prepared.checkout.name, prepared.checkout.commit
    env = timer("env", lambda: build_env(provider, prepared, settings))
    summary.image, summary.image_reused = env.ref, env.reused
    base = timer("baseline", lambda: hooks.baseline(provider, env, prepared, settings))
    record_baseline_stats(summary, base)
    cov = timer("coverage", lambda: coverage_in(provider, env, prepared, base, settings))
    store = DatasetStore(settings.out)
    client = llm_client(settings)
    cands = timer("generate", lambda: generate(prepared, settings, target_lines(cov, base), client))
    todo = unseen(cands, store)
    mined = unseen(timer("mine", lambda: hooks.mine(prepared, settings, store)), store)
    summary.candidates, summary.skipped_seen = len(cands) + len(mined), len(cands) - len(todo)
    def judged_and_written(fn: Callable[[], list[Judged]]) -> list[Judged]:
        batch = timer("judge", fn)  # written per batch: a killed run keeps what it judged
        timer("write", lambda: store.write(batch))
        return batch

    judged = judged_and_written(lambda: hooks.judge(provider, env, prepared, base, todo, settings,
                                                    progress, client, cov))
    judged += judged_and_written(lambda: judge_mined(provider, env, prepared, base, mined,
                                                     settings, progress, client, hooks.judge,
                                                     cov))
    combos = unseen(timer("combine", lambda: combine(prepared, settings, store, judged)), store)
    summary.candidates += len(combos)
    judged += judged_and_written(lambda: hooks.judge(provider, env, prepared, base, combos,
                                                     settings, progress, client, cov))
    summary.judged = len(judged)
    summarize(summary, judged)
    summary.seconds = round(time.monotonic() - start, 2)
    return summary


def record_baseline_stats(summary: RunSummary, base: Baseline) -> None:
    summary.baseline_tests = len(base.outcomes)
    summary.baseline_passing = len(base.passing)
    summary.baseline_flaky = len(base.flaky)
    summary.baseline_misbehaving = len(base.misbehaving)
    summary.set_aside = dict(base.misbehaving)


class _Timer:
    """Runs a stage through the runner, timing it and reporting progress."""

    def __init__(self, summary: RunSummary, progress: Progress, runner: StageRunner) -> None:
        self.summary, self.progress, self.runner = summary, progress, runner

    def __call__(self, stage: str, fn: Callable[[], T]) -> T:
        self.progress(stage, 0, 1)
        t = time.monotonic()
        try:
            return self.runner(stage, fn)
        finally:
            spent = self.summary.stage_seconds.get(stage, 0.0) + time.monotonic() - t
            self.summary.stage_seconds[stage] = round(spent, 2)
            self.progress(stage, 1, 1)
