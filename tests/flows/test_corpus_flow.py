"""Issue 6's "done when" for the corpus flow: three small repositories (and one that does
not exist) through :func:`corpus_flow` three times, on Docker.

1. First run: the three repositories are judged, the missing one is marked failed.
2. Second run, nothing new: no image is built, no sandbox is even opened (the baseline and
   coverage come from their caches), the judge is never called, the dataset is unchanged.
3. A fix commit lands in one repository: the third run builds only that repository's new
   image and judges only that repository's new candidates (its mined fix included).

Mining is incremental (run 1 walks each repository's history, run 2 walks nothing, run 3
walks the one new commit) and the clone and mine stages are Prefect tasks cached by their
inputs: a rerun with the same inputs finds them ``Cached``.

Evidence is counted, not timed: the provider's ``build_env`` and ``open`` and the judge's
``judge`` are wrapped with counters (the flow runs in this process, in threads).
Commits use fixed dates, so each repository's sha, hence its image tag, is the same in every
session: later sessions reuse the images (the counters still prove run 2 built nothing).
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from repogym.config import Settings
from repogym.corpus.state import RepoState, RunRecord, StateStore
from repogym.datasets import DatasetStore
from repogym.errors import DatasetError, ImageBuildError, InstallError, SourceError
from repogym.flows import corpus_flow as corpus_module
from repogym.flows.corpus_flow import (
    ARTIFACT_KEY,
    CorpusRun,
    RepoJob,
    RepoStatus,
    corpus_flow,
    markdown,
)
from repogym.flows.repo_flow import prefect_stage
from repogym.judges.judge import Judge
from repogym.sandboxes.docker import DockerProvider
from repogym.schemas.records import CandidateKind, RepoSpec, Status
from tests.conftest import TINY_PROJECT, commit_files

OPS = TINY_PROJECT["tinycalc/ops.py"]
REPOS = {
    "corpa": TINY_PROJECT,
    # a bug with no test yet: the commit added in run 3 fixes it and proves it with a test
    "corpb": {**TINY_PROJECT, "tinycalc/ops.py": OPS + "\n\ndef neg(x):\n    return x\n"},
    "corpc": {**TINY_PROJECT,
              "tinycalc/ops.py": OPS + "\n\ndef double(x):\n    return 2 * x\n",
              "tests/test_double.py": "from tinycalc.ops import double\n\n\n"
                                      "def test_double():\n    assert double(4) == 8\n"},
}
FIX = {"tinycalc/ops.py": REPOS["corpb"]["tinycalc/ops.py"].replace(
           "def neg(x):\n    return x", "def neg(x):\n    return -x"),
       "tests/test_neg.py": "from tinycalc.ops import neg\n\n\n"
                            "def test_neg():\n    assert neg(3) == -3\n"}
FIX_MESSAGE = "neg(x) returned x unchanged instead of its negation"


class Counters:
    """Calls into the provider and the judge, recorded while a run is going on."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.builds: list[str] = []  # env images built (not reused), by repository
        self.opened: list[str] = []  # image refs sandboxes were opened on
        self.judged: list[str] = []  # candidate ids given to Judge.judge

    def reset(self) -> None:
        self.builds, self.opened, self.judged = [], [], []

    def add(self, what: list[str], item: str) -> None:
        with self.lock:
            what.append(item)


@pytest.fixture(scope="module")
def counters():
    mp = pytest.MonkeyPatch()
    c = Counters()
    build, open_, judge = DockerProvider.build_env, DockerProvider.open, Judge.judge

    def counted_build(self, spec, repo_path, log_dir):
        env = build(self, spec, repo_path, log_dir)
        if not env.reused:
            c.add(c.builds, spec.repo)
        return env

    def counted_open(self, env, limits=None):
        c.add(c.opened, env.ref)
        return open_(self, env, limits)

    def counted_judge(self, cand):
        c.add(c.judged, cand.instance_id)
        return judge(self, cand)

    mp.setattr(DockerProvider, "build_env", counted_build)
    mp.setattr(DockerProvider, "open", counted_open)
    mp.setattr(Judge, "judge", counted_judge)
    yield c
    mp.undo()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, base_image):
    root = tmp_path_factory.mktemp("corpus")
    mp = pytest.MonkeyPatch()
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        mp.setenv(var, "2024-01-01T00:00:00Z")
    for name, files in REPOS.items():
        commit_files(root / name, files)
    mp.undo()
    settings = Settings(out=root / "out", base_image=base_image, generators=("procedural", "mined"),
                        max_candidates=2, max_mined=5, max_combined=0, baseline_runs=1,
                        oracle_runs=1, probes=0, test_timeout=60)
    jobs = [RepoJob.of(RepoSpec(source=str(root / name)), settings) for name in REPOS]
    jobs.append(RepoJob.of(RepoSpec(source=str(root / "missing")), settings))
    return root, settings, jobs


@pytest.fixture(scope="module")
def runs(corpus, counters):
    """The three runs, with the counters of each."""
    root, settings, jobs = corpus
    out: dict[int, tuple[CorpusRun, Counters, dict]] = {}

    def run(n: int) -> None:
        counters.reset()
        result = corpus_flow(jobs, settings)
        snapshot = Counters()
        snapshot.builds, snapshot.opened, snapshot.judged = (
            list(counters.builds), list(counters.opened), list(counters.judged))
        out[n] = (result, snapshot, {r: StateStore(settings.out).load(r) for r in REPOS})

    run(1)
    run(2)
    mp = pytest.MonkeyPatch()
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        mp.setenv(var, "2024-01-02T00:00:00Z")
    commit_files(root / "corpb", FIX, message=FIX_MESSAGE)
    mp.undo()
    run(3)
    return out


@pytest.mark.docker
@pytest.mark.slow
def test_first_run_judges_every_repo_and_isolates_the_missing_one(runs):
    result, counted, states = runs[1][0], runs[1][1], runs[1][2]
    by = result.by_name()
    assert result.failed == ["missing"]
    assert "no such path" in by["missing"].error
    for name in REPOS:
        assert by[name].status is RepoStatus.ok, by[name].error
        assert by[name].summary.judged >= 1, by[name].summary
        assert states[name].judged_ids == by[name].judged_ids
        assert states[name].last_commit == by[name].summary.commit
        mining = by[name].mining
        assert (mining.scanned, mining.since, mining.up_to) == (1, None, by[name].summary.commit)
        assert states[name].last_mined_commit == by[name].summary.commit
        assert by[name].cached_stages == ()  # a fresh data folder: nothing cached yet
    assert sum(by[n].summary.accepted for n in REPOS) >= 2
    assert len(counted.judged) == sum(by[n].summary.judged for n in REPOS)


@pytest.mark.docker
@pytest.mark.slow
def test_second_run_rebuilds_nothing_opens_no_sandbox_and_judges_nothing(runs, corpus):
    _, settings, _ = corpus
    first, second = runs[1][0].by_name(), runs[2][0].by_name()
    counted = runs[2][1]
    assert counted.builds == [] and counted.opened == [] and counted.judged == []
    for name in REPOS:
        r = second[name]
        assert r.status is RepoStatus.ok and r.image_reused and r.baseline_cached, r
        assert r.summary.image == first[name].summary.image
        assert r.summary.judged == 0 and r.judged_ids == ()
        assert r.summary.candidates == r.summary.skipped_seen > 0  # all seen before
        assert (r.mining.scanned, r.mining.since) == (0, r.summary.commit)  # nothing new
        assert r.cached_stages == ("clone",)  # mine: another start commit, another key
        assert r.summary.commit == first[name].summary.commit
        state = runs[2][2][name]
        assert state.judged_ids == runs[1][2][name].judged_ids
        assert state.runs[-1].image_reused and state.runs[-1].baseline_cached
    assert second["missing"].status is RepoStatus.failed


@pytest.mark.docker
@pytest.mark.slow
def test_third_run_judges_only_the_new_commit(runs, corpus):
    _, settings, _ = corpus
    result, counted, states = runs[3]
    by = result.by_name()
    new_head = states["corpb"].last_commit
    assert new_head != runs[2][2]["corpb"].last_commit
    assert set(counted.builds) <= {"corpb"}  # an image from an earlier session may be reused
    corpb_image = by["corpb"].summary.image
    assert set(counted.opened) == {corpb_image}
    for name in ("corpa", "corpc"):
        assert by[name].summary.judged == 0 and by[name].image_reused and by[name].baseline_cached
        assert states[name].judged_ids == runs[2][2][name].judged_ids
        assert by[name].cached_stages == ("clone", "mine")  # the same inputs as run 2
        assert by[name].mining.scanned == 0
    old_head = runs[2][2]["corpb"].last_commit
    assert by["corpb"].cached_stages == ()  # a new commit: cloned and mined afresh
    assert (by["corpb"].mining.scanned, by["corpb"].mining.since) == (1, old_head)
    assert not by["corpb"].baseline_cached  # new commit, new image: recorded afresh
    new_ids = set(states["corpb"].judged_ids) - set(runs[2][2]["corpb"].judged_ids)
    assert new_ids and new_ids == set(by["corpb"].judged_ids)
    assert Counter(counted.judged) == Counter(by["corpb"].judged_ids)  # each judged once
    store = DatasetStore(settings.out)
    rows = {r.instance_id: r for r in store.judged_rows()}
    mined = [rows[i] for i in new_ids if rows[i].kind is CandidateKind.mined]
    assert [r.provenance["commit"] for r in mined] == [new_head]
    assert all(rows[i].repo == "corpb" for i in new_ids)
    synthetic = [rows[i] for i in new_ids if rows[i].kind is not CandidateKind.mined]
    assert synthetic and all(r.base_commit == new_head for r in synthetic)
    assert states["corpb"].last_mined_commit == new_head
    assert rows[mined[0].instance_id].status is Status.accept, rows[mined[0].instance_id].reason


@pytest.mark.docker
@pytest.mark.slow
def test_dataset_has_no_duplicates_after_three_runs(runs, corpus):
    _, settings, _ = corpus
    store = DatasetStore(settings.out)
    ids = [r.instance_id for r in store.judged_rows()]
    assert len(ids) == len(set(ids))
    judged = [i for n in (1, 2, 3) for r in runs[n][0].repos for i in r.judged_ids]
    assert len(judged) == len(set(judged))  # no candidate judged twice over the three runs


@pytest.mark.docker
@pytest.mark.slow
def test_each_run_publishes_its_summary_artifact(runs):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def fetch():
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[ARTIFACT_KEY])))

    import asyncio

    artifacts = asyncio.run(fetch())
    assert len(artifacts) >= 3
    latest = max(artifacts, key=lambda a: a.created)
    assert "corpb" in str(latest.data) and "missing" in str(latest.data)
    report = markdown(runs[3][0])
    assert "| corpb | ok |" in report and "| missing | failed |" in report


def test_each_repo_shows_live_progress_in_the_ui(runs):
    """A progress artifact per repository, updated as its stages advance, ends at 100 %."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def fetch(key):
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))

    import asyncio

    for repo in ("corpa", "corpb", "corpc"):
        found = asyncio.run(fetch(f"repogym-progress-{repo}"))
        assert found, repo
        latest = max(found, key=lambda a: a.created)
        assert float(latest.data) == 100.0 and repo in (latest.description or "")


@pytest.mark.docker
@pytest.mark.slow
def test_env_stages_never_overlap(runs):
    """The image-build gate, read off Prefect's own records of the env task runs."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName

    async def fetch():
        async with get_client() as client:
            return await client.read_task_runs(
                task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_="env")))

    spans = sorted((r.start_time, r.end_time) for r in asyncio.run(fetch())
                   if r.name.startswith("env") and r.start_time and r.end_time)
    assert len(spans) >= 9  # three repositories, three runs
    assert all(prev_end <= start for (_, prev_end), (start, _) in zip(spans, spans[1:])), spans


# -- fast: no Docker -------------------------------------------------------------------


def flaky(errors: list[Exception], result: str = "built"):
    """A stage body that raises each of ``errors`` in turn, then returns ``result``."""
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return result

    return fn, calls


@pytest.fixture
def no_delay(monkeypatch):
    monkeypatch.setattr(corpus_module, "RETRY_DELAY", 0.0)


def test_transient_engine_failure_is_retried(no_delay):
    spec = RepoSpec(source="/nowhere")
    fn, calls = flaky([ImageBuildError("engine hiccup")])
    run = corpus_module.corpus_stage(spec, on_dask=False)
    assert run("env", fn) == "built" and len(calls) == 2


def test_failed_install_and_bad_source_are_not_retried(no_delay):
    spec = RepoSpec(source="/nowhere")
    run = corpus_module.corpus_stage(spec, on_dask=False)
    fn, calls = flaky([InstallError(repo="r", step="pip install -e .", log_path=None)])
    with pytest.raises(InstallError):
        run("env", fn)
    assert len(calls) == 1
    fn, calls = flaky([SourceError("/nowhere: no such path")])
    with pytest.raises(SourceError):
        run("clone", fn)
    assert len(calls) == 1


def test_remote_clone_failure_is_retried_then_reported(no_delay):
    run = corpus_module.corpus_stage(RepoSpec(source="https://example.invalid/a/b.git"), False)
    fn, calls = flaky([SourceError("cannot clone")] * 3)
    with pytest.raises(SourceError):
        run("clone", fn)
    assert len(calls) == 1 + corpus_module.STAGE_POLICIES["clone"].retries


def test_prefect_stage_without_retries_raises_the_first_failure():
    fn, calls = flaky([ImageBuildError("boom")])
    with pytest.raises(ImageBuildError):
        prefect_stage("env", fn)
    assert len(calls) == 1


def test_state_round_trip_and_failed_run_keeps_the_last_good_state(tmp_path):
    states = StateStore(tmp_path)
    assert states.load("demo") == RepoState(repo="demo")
    good = RepoState(repo="demo").with_run(RunRecord(commit="c1", image="img:1", judged=2),
                                           judged=["b", "a"], mined_up_to="c1")
    states.save(good)
    assert states.load("demo") == good and good.judged_ids == ("a", "b")
    failed = states.load("demo").with_run(RunRecord(error="demo: boom"))
    states.save(failed)
    again = states.load("demo")
    assert (again.last_commit, again.image, again.judged_ids) == ("c1", "img:1", ("a", "b"))
    assert [r.error for r in again.runs] == [None, "demo: boom"]
    assert states.repos() == ["demo"] and not list(states.root.glob(".tmp-*"))


def test_corrupt_state_is_a_clear_error(tmp_path):
    states = StateStore(tmp_path)
    states.path("demo").parent.mkdir(parents=True)
    states.path("demo").write_text("{not json")
    with pytest.raises(DatasetError, match="demo.json: not a valid repogym repository state"):
        states.load("demo")
    with pytest.raises(ValueError, match="not a repository name"):
        states.path("../escape")


def test_baseline_key_changes_with_every_input():
    key = StateStore.baseline_key
    base = key("img:1", "c1", 3, 600)
    assert len({base, key("img:2", "c1", 3, 600), key("img:1", "c2", 3, 600),
                key("img:1", "c1", 2, 600), key("img:1", "c1", 3, 60),
                key("img:1", "c1", 3, 600, "sha256:rebuilt")}) == 6


def test_baseline_key_changes_with_the_way_baselines_are_recorded(monkeypatch):
    import repogym.baseline

    before = StateStore.baseline_key("img:1", "c1", 3, 600)
    monkeypatch.setattr(repogym.baseline, "baseline_format", lambda: "another plugin")
    assert StateStore.baseline_key("img:1", "c1", 3, 600) != before
