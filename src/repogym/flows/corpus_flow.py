"""The corpus flow: every repository of a corpus, incrementally, one sub-flow per repository.

    corpus_flow(jobs, settings, dask_address=None)
      └─ repo (task, up to REPO_WORKERS at once)
           └─ repogym-corpus-repo (sub-flow named after the repository)
                resolve (a sample's sdist; Prefect-cached) -> clone (Prefect-cached;
                retried when a remote fails) -> env (retried when the engine fails;
                IMAGE_BUILDS at a time) -> baseline (cached) -> coverage (cached) ->
                generate -> mine (new commits only; Prefect-cached) -> judge -> write
                -> reverify (the tasks whose environment was rebuilt under its ref)
      └─ artifact "repogym-corpus": candidates, accepted, rejected by reason, yield per repo

The work is :func:`repogym.pipeline.run_repo`; this module decides how it runs:

* **Failure isolation.** A repository whose run raises (bad source, a sample whose sdist
  cannot be fetched, failed install, broken sandbox, even a bug) ends its sub-flow as Failed
  and comes back as a ``failed`` :class:`RepoResult` with a one-line error; the other
  repositories finish. Sources are resolved inside each sub-flow (:func:`jobs_from_config`
  fetches nothing), so one bad entry never stops the others from starting.
* **Incremental.** :mod:`repogym.corpus.state` keeps per repository the last commit, image,
  mined commit and judged candidate ids. A rerun with nothing new reuses the
  content-addressed image (the provider finds the tag), reads the baseline from the cache
  (keyed by image + commit), reads per-test coverage from its cache (keyed by the env
  digest), mines only the commits after the last mined one (:class:`IncrementalMiner`),
  and judges nothing: every candidate id already has a verdict in the dataset
  (``pipeline.unseen``). Only ``infra_error`` candidates are judged again.
* **Prefect caching.** The stages whose inputs are plain values (resolve, clone, mine) are
  Prefect tasks cached by those inputs under ``<out>/prefect-results``
  (:mod:`repogym.corpus.cache`): a rerun shows them as ``Cached`` and
  :attr:`RepoResult.cached_stages` lists them. A cached clone whose folder is gone or moved
  is cloned again.
* **Re-verification.** The repository's state records each environment its tasks run in
  as it was when they were judged (an image's id). When one has changed under the same ref
  (rebuilt with newer dependencies), the ``reverify`` stage grades its tasks again and
  retires those that no longer hold (:mod:`repogym.datasets.reverify`); an environment
  where a task stayed undecided (infrastructure) is tried again next run.
  ``Settings.reverify_changed`` turns it off.
* **Retries.** Only transient failures are retried: a remote clone that failed, an image
  build the engine broke (:class:`~repogym.errors.ImageBuildError` that is not an
  :class:`~repogym.errors.InstallError`). Bad input and failed installs fail at once.
* **Image builds.** At most :data:`IMAGE_BUILDS` env stages run at once in this process
  (a semaphore), and env tasks carry the ``docker-build`` tag, so a Prefect tag concurrency
  limit (``prefect concurrency-limit create docker-build 1``) bounds them across processes.
* **Dask.** With ``dask_address``, each repository's sub-flow runs on
  ``DaskTaskRunner(address=...)`` and every candidate is judged by a ``judge-candidate``
  task on a Dask worker, in its own sandbox opened from the env image. Workers must reach
  the same Docker engine (``DOCKER_HOST``) and data folder as the flow.
"""

from __future__ import annotations

import logging
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from prefect import flow, task
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed, State
from prefect.task_runners import ThreadPoolTaskRunner

from repogym.config import Settings
from repogym.corpus.cache import (
    cached_stage,
    checkout_intact,
    clone_key,
    git_folder_exists,
    mine_key,
    resolve_key,
    results_dir,
    run_logger,
)
from repogym.corpus.config import SampleSpec
from repogym.corpus.state import RepoState, RunRecord, StateStore
from repogym.datasets.reverify import ReverifyReport, changed_images, reverify
from repogym.datasets.store import DatasetStore
from repogym.errors import ImageBuildError, InfraError, InstallError, RepogymError, SourceError
from repogym.flows.repo_flow import one_line, prefect_stage
from repogym.generators.mined import MiningResult
from repogym.judges.judge import Judge
from repogym.judges.probe_sets import ProbeSets
from repogym.pipeline import (
    Hooks,
    JudgeFn,
    Prepared,
    RunSummary,
    StageRunner,
    baseline_in,
    commit_selection,
    judge_all,
    judge_settings,
    judged_with_statement,
    limits_for,
    llm_client,
    mine_commits,
    mined_commits,
    mining_enabled,
    provider_for,
    run_repo,
)
from repogym.repos import is_url, repo_name
from repogym.sandboxes.base import SandboxProvider
from repogym.schemas.reasons import Reason
from repogym.schemas.records import (
    Baseline,
    Candidate,
    CoverageMap,
    EnvImage,
    Judged,
    Record,
    RepoSpec,
    Status,
    Verdict,
    short_hash,
)
from repogym.toolchains import TOOLCHAINS

T = TypeVar("T")
log = logging.getLogger(__name__)

REPO_WORKERS = 2  # repositories run at once
IMAGE_BUILDS = threading.BoundedSemaphore(1)  # env stages at once, in this process
RETRY_DELAY = 2.0  # seconds between attempts
ARTIFACT_KEY = "repogym-corpus"

# (repo, stage, done, total) for whoever started the flow (the CLI): not a flow parameter.
CORPUS_PROGRESS: ContextVar[Callable[[str, str, int, int], None] | None] = ContextVar(
    "repogym_corpus_progress", default=None)


def progress_for(repo: str) -> Callable[[str, int, int], None] | None:
    """The :data:`CORPUS_PROGRESS` callback bound to ``repo``, if one is set.

    (Flow and task bodies reach the ContextVar only through this function: Dask pickles
    the Prefect context, flow bodies included, and a ContextVar cannot be pickled.)
    """
    report = CORPUS_PROGRESS.get()
    if report is None:
        return None
    return lambda stage, done, total: report(repo, stage, done, total)


class RepoJob(Record):
    """One repository of a corpus run: its name, where it is, the settings it runs with.

    ``spec`` is a :class:`RepoSpec`, or a :class:`~repogym.corpus.config.SampleSpec` whose
    sdist the repository's own run fetches (its ``resolve`` stage).
    """

    name: str
    spec: RepoSpec | SampleSpec
    settings: Settings

    @classmethod
    def of(cls, spec: RepoSpec, settings: Settings) -> "RepoJob":
        """A job named as the pipeline names the checkout (``spec.name`` or from the source)."""
        return cls(name=spec.name or repo_name(spec.source), spec=spec, settings=settings)


class RepoStatus(str, Enum):
    ok = "ok"
    failed = "failed"


class MiningReport(Record):
    """What the mined generator walked in one corpus run.

    Attributes:
        scanned: commits looked at.
        since: only the commits after this one were walked (None: the whole selection).
        full_walk_reason: why the last mined commit could not be used (None: it could, or
            there was none).
        candidates: mined candidates found.
        up_to: recorded as the last mined commit (None: the state keeps its earlier value:
            the walk was cut by the budget, or a candidate it found has no verdict yet).
        selection: the key of the commit selection walked (:func:`selection_key`).
    """

    scanned: int = 0
    since: str | None = None
    full_walk_reason: str | None = None
    candidates: int = 0
    up_to: str | None = None
    selection: str = ""


class RepoResult(Record):
    """How one repository's run ended, with the evidence of what was reused."""

    name: str
    status: RepoStatus
    error: str | None = None
    summary: RunSummary | None = None
    baseline_cached: bool = False
    judged_ids: tuple[str, ...] = ()  # candidates given a verdict by this run
    mining: MiningReport | None = None  # None: the run did not mine
    cached_stages: tuple[str, ...] = ()  # stages whose Prefect task run was Cached
    flow_run_id: str | None = None  # the repository's sub-flow run in Prefect
    reverify: ReverifyReport | None = None  # None: no environment of its tasks changed
    images: dict[str, str] = {}  # env ref -> identity, to record (RepoState.images)

    @property
    def image_reused(self) -> bool:
        return bool(self.summary and self.summary.image_reused)


class CorpusRun(Record):
    """What one corpus run did, per repository (in the order of the jobs)."""

    repos: tuple[RepoResult, ...]
    seconds: float = 0.0
    dask_address: str | None = None

    def by_name(self) -> dict[str, RepoResult]:
        return {r.name: r for r in self.repos}

    @property
    def failed(self) -> list[str]:
        return [r.name for r in self.repos if r.status is RepoStatus.failed]


# -- stages under Prefect --------------------------------------------------------------


class Placement(str, Enum):
    """Where a stage runs in a corpus sub-flow."""

    task = "task"  # a Prefect task of its own (retries, caching, a row in the UI)
    flow = "flow"  # in the flow itself: the stage makes its own tasks
    # in the flow when task results are kept (the stage makes its own cached task), else a task
    own_cached_task = "own_cached_task"


@dataclass(frozen=True)
class StagePolicy:
    """How the corpus runner runs one stage: retried (``retries`` times, for the failures
    ``retry_if`` calls transient), cached by its inputs, holding a build slot, or run in the
    flow (``placement``; ``on_dask``: only when the judge's tasks go to Dask workers)."""

    retries: int = 0
    retry_if: Callable[[RepogymError, RepoSpec], bool] | None = None
    cached: bool = False  # by clone_key: a checkout no longer at its commit is cloned again
    gated: bool = False  # holds one of the IMAGE_BUILDS slots while it runs
    placement: Placement = Placement.task
    on_dask: Placement | None = None  # the placement on Dask, when it differs


def _source_unreachable(exc: RepogymError, spec: RepoSpec) -> bool:
    """A remote that did not answer: worth trying again (a local path is not)."""
    return is_url(spec.source) and isinstance(exc, SourceError)


def _build_hiccup(exc: RepogymError, spec: RepoSpec) -> bool:
    """An image build that broke for the engine's sake, not because the install failed."""
    return isinstance(exc, ImageBuildError) and not isinstance(exc, InstallError)


STAGE_POLICIES: dict[str, StagePolicy] = {
    "clone": StagePolicy(retries=2, retry_if=_source_unreachable, cached=True),
    "env": StagePolicy(retries=2, retry_if=_build_hiccup, gated=True),
    "mine": StagePolicy(placement=Placement.own_cached_task),  # IncrementalMiner's task
    # on Dask, the judge's per-candidate tasks are the units shipped to the workers
    "judge": StagePolicy(on_dask=Placement.flow),
}
"""The corpus runner's policy per stage; a stage not listed is one plain task."""
DEFAULT_POLICY = StagePolicy()


def gated(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn`` run while holding one of the :data:`IMAGE_BUILDS` slots."""
    def run() -> T:
        with IMAGE_BUILDS:
            return fn()
    return run


def corpus_stage(spec: RepoSpec, on_dask: bool, settings: Settings | None = None,
                 cached: list[str] | None = None) -> StageRunner:
    """The stage runner of a corpus sub-flow: Prefect tasks with retries and the build gate.

    On Dask the judge stage runs in the flow itself: its per-candidate tasks are the units
    shipped to the workers. With ``settings``, the clone stage is cached by its inputs
    (:func:`~repogym.corpus.cache.clone_key`; a checkout no longer at its commit is cloned
    again), the mine stage runs in the flow (:class:`IncrementalMiner` makes its own task),
    and ``cached`` collects the stages served from the cache.
    """
    results = results_dir(settings) if settings is not None else None

    def run(stage: str, fn: Callable[[], T]) -> T:
        policy = STAGE_POLICIES.get(stage, DEFAULT_POLICY)
        placement = (policy.on_dask or policy.placement) if on_dask else policy.placement
        if placement is Placement.flow or (placement is Placement.own_cached_task
                                           and results is not None):
            return fn()
        check = policy.retry_if
        retry_if = None if check is None else (lambda exc: check(exc, spec))

        def as_task() -> T:
            if not policy.cached or settings is None:
                return prefect_stage(stage, fn, retries=policy.retries, retry_if=retry_if,
                                     retry_delay=RETRY_DELAY)
            value, hit = cached_stage(  # type: ignore[misc]  # the clone stage's T: Prepared
                stage, fn, key=clone_key(spec, settings), results=results, valid=_intact,
                retries=policy.retries, retry_if=retry_if, retry_delay=RETRY_DELAY)
            if hit and cached is not None:
                cached.append(stage)
            return value
        # the slot is taken before the task starts: a task run waiting for one is not Running
        return gated(as_task)() if policy.gated else as_task()
    return run


def _intact(prepared: Prepared) -> bool:
    return checkout_intact(prepared.checkout)


def resolve_source(job: RepoJob, cached: list[str]) -> RepoSpec:
    """The job's :class:`RepoSpec`; a sample's sdist is fetched here, in a ``resolve`` task
    cached by the sample's requirement, pin and folder (redone if the folder is gone).

    Raises:
        SourceError: the sdist cannot be downloaded or unpacked.
    """
    if isinstance(job.spec, RepoSpec):
        return job.spec
    sample, folder = job.spec, job.settings.cache_dir / "samples"
    spec, hit = cached_stage("resolve", lambda: sample.fetch(folder),
                             key=resolve_key(sample.requirement, sample.commit, sample.name,
                                             folder),
                             results=results_dir(job.settings), valid=git_folder_exists)
    if hit:
        cached.append("resolve")
    return spec


@dataclass
class CachedBaseline:
    """The baseline hook: read from :class:`StateStore`'s cache, else record and cache."""

    states: StateStore
    hit: bool = False

    def __call__(self, provider: SandboxProvider, env: EnvImage, prepared: Prepared,
                 settings: Settings) -> Baseline:
        repo, commit = prepared.checkout.name, prepared.checkout.commit
        key = StateStore.baseline_key(env.ref, commit, settings.baseline_runs,
                                      settings.test_timeout, provider.identity(env.ref) or "")
        cached = self.states.cached_baseline(repo, key)
        if cached is not None:
            self.hit = True
            return cached
        base = baseline_in(provider, env, prepared, settings)
        self.states.put_baseline(repo, key, base)
        return base


def selection_key(settings: Settings) -> str:
    """The key of the commits the mined generator looks at (range, since, last)."""
    return short_hash(commit_selection(settings).model_dump_json(), n=16)


@dataclass
class IncrementalMiner:
    """The mine hook: one ``mine`` task, cached by its inputs, that walks only the commits
    after the repository's last mined commit (when the selection is the one walked then).

    :meth:`report` then says what was walked and what the state may record as mined.
    """

    before: RepoState
    results: Path | None = None
    cached: list[str] = field(default_factory=list)
    walk: MiningResult | None = None
    selection: str = ""
    reason: str | None = None  # why the last mined commit was not used (hook level)

    def __call__(self, prepared: Prepared, settings: Settings,
                 store: DatasetStore) -> list[Candidate]:
        if not mining_enabled(settings):
            return []
        self.selection = selection_key(settings)
        marker = self.before.last_mined_commit
        if marker is not None and self.before.last_mined_selection != self.selection:
            self.reason, marker = "the commit selection changed since the last mined commit", None
        seen = mined_commits(store, prepared.checkout.name)
        key = mine_key(prepared.checkout, prepared.toolchain.name, commit_selection(settings),
                       settings.max_mined, marker, seen) if self.results else None
        walk, hit = cached_stage(
            "mine", lambda: mine_commits(prepared, settings, seen, marker), key=key,
            results=self.results)
        self.walk = walk
        if hit:
            self.cached.append("mine")
        walked = f"after {marker[:12]}" if marker and walk.since else "(the whole selection)"
        why = walk.full_walk_reason or self.reason
        say = run_logger().warning if why else run_logger().info
        say("%s: mined %d commit(s) %s%s", prepared.checkout.name, walk.scanned, walked,
            f": {why}" if why else "")
        return walk.candidates

    def report(self, store: DatasetStore) -> MiningReport | None:
        """What was walked (None: nothing), and the commit the state may record as mined: the
        walk's tip when it reached the end of the selection and every candidate it found has
        a verdict in the dataset; else None, and the next run walks those commits again."""
        walk = self.walk
        if walk is None:
            return None
        decided = store.verdict_ids()
        pending = [c.provenance.get("commit", "")[:12] for c in walk.candidates
                   if c.instance_id not in decided]
        if pending:
            run_logger().info("mined commits without a verdict (%s): they are walked again "
                              "next run", ", ".join(pending))
        return MiningReport(scanned=walk.scanned, since=walk.since,
                            full_walk_reason=walk.full_walk_reason or self.reason,
                            candidates=len(walk.candidates), selection=self.selection,
                            up_to=None if pending else walk.mined_up_to)


@dataclass
class RecordingJudge:
    """The judge hook: delegates to ``inner`` and keeps every Judged it returns."""

    inner: JudgeFn
    judged: list[Judged] = field(default_factory=list)

    def __call__(self, *args: Any, **kwargs: Any) -> list[Judged]:
        out = self.inner(*args, **kwargs)
        self.judged += out
        return out

    def decided_ids(self) -> tuple[str, ...]:
        return tuple(sorted(j.candidate.instance_id for j in self.judged
                            if j.verdict.status is not Status.infra_error))


# -- judging on Dask -------------------------------------------------------------------


class CandidateJob(Record):
    """Everything a Dask worker needs to judge one candidate (no live objects)."""

    settings: Settings
    env: EnvImage
    toolchain: str
    baseline: Baseline
    coverage: CoverageMap | None = None
    candidate: Candidate


@task(name="judge-candidate", cache_policy=NO_CACHE, persist_result=False, tags=["docker"])
def judge_candidate(job: CandidateJob) -> Judged:
    """Judge one candidate in a sandbox of its own, opened from the env image.

    A sandbox that cannot be opened is an ``infra_error`` verdict (judged again next run).
    """
    settings, cand = job.settings, job.candidate
    toolchain = TOOLCHAINS.get(job.toolchain)()
    jset = judge_settings(settings)
    try:
        with provider_for(settings).open(job.env, limits_for(settings)) as sandbox:
            judgement = Judge(sandbox, toolchain, job.baseline, jset, job.coverage,
                              probe_sets=ProbeSets(settings.cache_dir / "probes"),
                              image=job.env.ref).judge(cand)
            verdict, evidence = judgement.verdict, judgement.evidence
    except InfraError as exc:
        verdict = Verdict(instance_id=cand.instance_id, status=Status.infra_error,
                          reason=Reason.infra.code("sandbox"), detail=one_line(exc)[:2000])
        evidence = None
    return judged_with_statement(cand, verdict, job.env.ref, llm_client(settings), evidence)


def judge_on_dask(provider: SandboxProvider, env: EnvImage, prepared: Prepared,
                  baseline: Baseline, candidates: Sequence[Candidate], settings: Settings,
                  progress: Callable[[str, int, int], None] | None = None,
                  client: object = None, coverage: CoverageMap | None = None) -> list[Judged]:
    """:func:`~repogym.pipeline.judge_all`'s contract, one ``judge-candidate`` task per
    candidate on the flow's task runner (Dask); results in the candidates' order."""
    futures = [judge_candidate.submit(CandidateJob(
        settings=settings, env=env, toolchain=prepared.toolchain.name, baseline=baseline,
        coverage=coverage, candidate=cand)) for cand in candidates]
    out = []
    for done, future in enumerate(futures, 1):
        out.append(future.result())
        if progress:
            progress("judge", done, len(futures))
    return out


# -- one repository --------------------------------------------------------------------


@flow(name="repogym-corpus-repo", persist_result=False, log_prints=True)
def corpus_repo_flow(job: RepoJob, dask_address: str | None = None) -> RepoResult | State:
    """One repository of the corpus, incrementally; Failed (one line) when it fails.

    The repository's state is saved whether the run succeeds or fails.
    """
    states = StateStore(job.settings.out)
    before = states.load(job.name)
    baseline = CachedBaseline(states)
    judge = RecordingJudge(judge_on_dask if dask_address else judge_all)
    cached: list[str] = []
    miner = IncrementalMiner(before, results_dir(job.settings), cached)
    progress = ui_progress(job.name, progress_for(job.name))
    try:
        spec = resolve_source(job, cached)
        runner = corpus_stage(spec, bool(dask_address), job.settings, cached)
        summary = run_repo(spec, job.settings, progress, runner=runner,
                           hooks=Hooks(baseline=baseline, judge=judge, mine=miner))
        images, report = reverify_stage(job.settings, summary.repo, before, judge.judged)
    except RepogymError as exc:
        error = one_line(exc)
        error = error if job.name in error else f"{job.name}: {error}"
        states.save(before.with_run(RunRecord(error=error)))
        return Failed(message=error)
    result = RepoResult(name=job.name, status=RepoStatus.ok, summary=summary,
                        baseline_cached=baseline.hit, judged_ids=judge.decided_ids(),
                        mining=miner.report(DatasetStore(job.settings.out)),
                        cached_stages=tuple(cached), flow_run_id=_flow_run_id(),
                        reverify=report, images=images)
    states.save(state_after(before, result))
    return result


def reverify_stage(settings: Settings, repo: str, before: RepoState,
                   judged: Sequence[Judged]) -> tuple[dict[str, str], ReverifyReport | None]:
    """The ``reverify`` stage: the repository's tasks whose environment changed since the
    state recorded it are graded again (a Prefect task, only when there are some); the
    environments to record and the report. Off (nothing recorded, nothing graded) when
    ``settings.reverify_changed`` is False."""
    if not settings.reverify_changed:
        return dict(before.images), None
    provider = provider_for(settings)
    store = DatasetStore(settings.out)
    just = [j.candidate.instance_id for j in judged]
    check = changed_images(store.column("image", "tasks", repo), before.images,
                           provider.identity, just)  # one column read: every run does this
    report = None
    if check.stale_ids:
        run_logger().warning("%s: %d task(s) in %d rebuilt environment(s) (%s): re-verifying",
                             repo, len(check.stale_ids), len(check.stale),
                             ", ".join(check.stale))
        report = prefect_stage("reverify", lambda: reverify(
            store, repo=repo, ids=check.stale_ids, workers=max(settings.workers, 1),
            provider=settings.provider, settings=settings))
        for line in report.lines():
            run_logger().info("%s", line)
    if check.missing:
        run_logger().info("%s: environment(s) gone, their tasks not checked: %s", repo,
                          ", ".join(check.missing))
    return check.recorded(before.images, report), report


def record_reverified(out: Path, report: ReverifyReport, provider: SandboxProvider,
                      repo: str | None = None) -> list[str]:
    """After a re-verification outside the flow (``repogym dataset reverify``, of ``repo``'s
    tasks or every task): each repository's corpus state records the environments its tasks
    were just checked in, as :func:`reverify_stage` does, so the next corpus run does not
    grade them once more. An environment where a task stayed undecided keeps its old
    identity (the next run tries again); a repository never run as a corpus has no state
    and gets none. Returns the repositories whose state changed."""
    states, store = StateStore(out), DatasetStore(out)
    changed = []
    for name in [repo] if repo else states.repos():
        if not states.path(name).is_file():
            continue
        before = states.load(name)
        check = changed_images(store.column("image", "tasks", name), before.images,
                               provider.identity)
        images = check.recorded(before.images, report)
        if images != before.images:
            states.save(before.model_copy(update={"images": images}))
            changed.append(name)
    return changed


PIPELINE_STAGES = ("clone", "env", "baseline", "coverage", "generate", "mine", "judge",
                   "combine", "write")


def ui_progress(repo: str, also: Callable[[str, int, int], None] | None
                ) -> Callable[[str, int, int], None]:
    """Live progress in the Prefect UI: a progress artifact per repository
    (``repogym-progress-<repo>``) updated as stages advance, plus ``also`` (the CLI's bars).

    The artifact is best effort: a failing update never fails the run.
    """
    key = "repogym-progress-" + "".join(c if c.isalnum() else "-" for c in repo.lower())
    shown: dict[str, Any] = {"id": None, "at": -1.0}  # the artifact's id, the percent shown
    lock = threading.Lock()

    def report(stage: str, done: int, total: int) -> None:
        if also is not None:
            also(stage, done, total)
        index = PIPELINE_STAGES.index(stage) if stage in PIPELINE_STAGES else 0
        percent = round(100.0 * (index + min(done / max(total, 1), 1.0)) / len(PIPELINE_STAGES), 1)
        with lock:
            if percent < shown["at"] + 5 and percent < 100:
                return
            shown["at"] = percent
            text = f"{repo}: {stage} {done}/{total}"
            try:
                if shown["id"] is None:
                    shown["id"] = create_progress_artifact(percent, key=key, description=text)
                else:
                    update_progress_artifact(shown["id"], percent, description=text)
            except Exception as exc:  # noqa: BLE001 - the UI is a view, never a reason to fail
                log.debug("progress artifact for %s not updated: %s", repo, exc)

    return report


def state_after(before: RepoState, result: RepoResult) -> RepoState:
    """The repository's state once ``result`` (a successful run) is recorded; the last
    mined commit moves only as :meth:`IncrementalMiner.report` allows."""
    s, mining = result.summary, result.mining
    assert s is not None
    run = RunRecord(commit=s.commit, image=s.image, image_reused=s.image_reused,
                    baseline_cached=result.baseline_cached, candidates=s.candidates,
                    judged=s.judged, accepted=s.accepted,
                    mined_scanned=mining.scanned if mining else None)
    return before.with_run(run, result.judged_ids,
                           mined_up_to=mining.up_to if mining else None,
                           mined_selection=mining.selection if mining else None,
                           images=result.images)


@task(name="repo", cache_policy=NO_CACHE, persist_result=False)
def repo_task(job: RepoJob, dask_address: str | None) -> RepoResult:
    """Run a repository's sub-flow and turn any way it can end into a :class:`RepoResult`."""
    sub = corpus_repo_flow.with_options(flow_run_name=f"repo-{job.name}")
    if dask_address:
        from prefect_dask import DaskTaskRunner

        sub = sub.with_options(task_runner=DaskTaskRunner(  # type: ignore[arg-type]
            address=dask_address))
    state = sub(job, dask_address, return_state=True)
    if state.is_completed():
        return state.result()  # type: ignore[return-value]
    error = state.message or f"{job.name}: the run ended as {state.name}"
    run_id = state.state_details.flow_run_id
    return RepoResult(name=job.name, status=RepoStatus.failed, error=error,
                      flow_run_id=str(run_id) if run_id else None)


def _flow_run_id() -> str | None:
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    return str(ctx.flow_run.id) if ctx is not None and ctx.flow_run is not None else None


# -- the corpus ------------------------------------------------------------------------


@flow(name="repogym-corpus", persist_result=False, log_prints=True,
      task_runner=ThreadPoolTaskRunner(max_workers=REPO_WORKERS))  # type: ignore[arg-type]
def corpus_flow(entries: Sequence[RepoJob], settings: Settings,
                dask_address: str | None = None) -> CorpusRun:
    """Run every repository (up to :data:`REPO_WORKERS` at once) and publish the summary.

    Args:
        entries: the repositories, each with its own settings (whose ``out`` should be
            ``settings.out``: the dataset and the state live there).
        settings: the corpus-wide settings (the data folder of the run).
        dask_address: a Dask scheduler (``tcp://host:8786``) to judge candidates on.

    Returns:
        One :class:`RepoResult` per entry, in order; failed repositories included.
    """
    start = time.monotonic()
    jobs = list(entries)
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ValueError(f"repository names must be unique in a corpus run: {names}")
    futures = [repo_task.submit(job, dask_address) for job in jobs]
    run = CorpusRun(repos=tuple(f.result() for f in futures), dask_address=dask_address,
                    seconds=round(time.monotonic() - start, 2))
    publish(run)
    return run


def summary_rows(run: CorpusRun) -> list[dict[str, Any]]:
    """One row per repository: the figures of the run's artifact."""
    rows = []
    for r in run.repos:
        s = r.summary or RunSummary(repo=r.name)
        rows.append({"repo": r.name, "status": r.status.value, "commit": s.commit[:12],
                     "image_reused": r.image_reused, "baseline_cached": r.baseline_cached,
                     "candidates": s.candidates, "judged": s.judged, "accepted": s.accepted,
                     "rejected": ", ".join(f"{k}={v}" for k, v in s.rejected.items()),
                     "yield": f"{s.yield_rate:.0%}", "mined": mined_walk(r.mining),
                     "cached": ", ".join(r.cached_stages),
                     "reverified": reverified(r.reverify), "error": r.error or ""})
    return rows


def reverified(report: ReverifyReport | None) -> str:
    """``"12 held, 3 retired"`` (and undecided, if any) or ``""`` when nothing was checked."""
    if report is None:
        return ""
    out = f"{len(report.held)} held, {len(report.retired)} retired"
    return out + (f", {len(report.undecided)} undecided" if report.undecided else "")


def mined_walk(mining: MiningReport | None) -> str:
    """``"3 new"`` (commits walked after the last mined one), ``"40 (full)"`` or ``""``."""
    if mining is None:
        return ""
    return f"{mining.scanned} new" if mining.since else f"{mining.scanned} (full)"


def markdown(run: CorpusRun) -> str:
    """The run's summary as a Markdown table."""
    rows = summary_rows(run)
    head = ["repo", "status", "candidates", "judged", "accepted", "rejected", "yield", "mined",
            "cached", "reverified", "error"]
    lines = ["# repogym corpus run", "", f"{len(run.repos)} repositories, "
             f"{len(run.failed)} failed, {run.seconds:.1f}s", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(row[h]).replace("|", "\\|") for h in head) + " |"
              for row in rows]
    return "\n".join(lines) + "\n"


def publish(run: CorpusRun) -> None:
    """The run's Prefect artifacts: a table and a Markdown report under one key each."""
    create_table_artifact(summary_rows(run), key=ARTIFACT_KEY,
                          description="repogym corpus run: per repository")
    create_markdown_artifact(markdown(run), key=f"{ARTIFACT_KEY}-report",
                             description="repogym corpus run: report")


def jobs_from_config(config: Any, base: Settings) -> list[RepoJob]:
    """The jobs of a :class:`repogym.corpus.config.CorpusConfig`: each entry's source and its
    settings (``base`` with the entry's generators and budgets applied).

    Nothing is fetched or checked here: a sample's sdist is fetched, and a local path or URL
    cloned, by the repository's own sub-flow, so a bad entry fails that repository only.
    """
    return [RepoJob(name=entry.derived_name(), spec=entry.source_spec(),
                    settings=entry.settings(base))
            for entry in config.entries()]


@flow(name="repogym-scheduled-corpus", persist_result=False, log_prints=True)
def scheduled_corpus(corpus_file: str, out: str, dask_address: str | None = None) -> CorpusRun:
    """The corpus flow from plain parameters (what a deployment and its schedule can hold):
    the corpus file is read at each run, so edits to it apply to the next scheduled run."""
    from repogym.corpus.config import CorpusConfig

    settings = Settings().model_copy(update={"out": Path(out)})
    jobs = jobs_from_config(CorpusConfig.load(Path(corpus_file), check_paths=False), settings)
    return corpus_flow(jobs, settings, dask_address)


def corpus_deployment(corpus_file: Path, out: Path, *, name: str, cron: str,
                      dask_address: str | None = None) -> Any:
    """A Prefect deployment of :func:`scheduled_corpus` on a cron schedule (not yet applied).

    Raises:
        ValueError: ``cron`` is not a valid cron expression.
    """
    from prefect.client.schemas.schedules import CronSchedule

    CronSchedule(cron=cron)  # validates
    return scheduled_corpus.to_deployment(
        name=name, cron=cron, parameters={"corpus_file": str(corpus_file.resolve()),
                                          "out": str(out.resolve()),
                                          "dask_address": dask_address},
        description="repogym: grow the corpus from the repositories in the corpus file")
