"""Hostile repositories through the real pipeline, on the docker provider.

Each case (see :mod:`tests.hostile.conftest`) runs :func:`repogym.pipeline.run_repo` on a
repository whose test misbehaves, in the order a corpus run would meet them, with one
provider. For each it asserts:

* containment, as seen from the host: marked processes never exceed the pids limit, the
  disk never loses more than the sandbox's disk limit (plus what the guard's poll lets
  through), nothing reaches a listener on the host's bridge address, the run ends within
  its time limits;
* the report: a :class:`~repogym.errors.RepogymError` for the repository (a baseline that
  timed out, died or lost its sandbox) or verdicts, and no accepted task whose tests
  include the hostile one;
* nothing left behind: no container of this run's namespace, no marked process;

and, at the end, that a normal repository still yields accepted tasks with the same
provider (the corpus run continues).
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.datasets.store import DatasetStore
from repogym.errors import RepogymError, SandboxError, TestRunError
from repogym.pipeline import RunSummary, run_repo
from repogym.sandboxes.docker import DockerProvider, cleanup_images
from repogym.schemas.records import RepoSpec, Status
from repogym.toolchains import PythonToolchain
from tests.hostile.conftest import (CASES, DISK_CAP_MB, MARK, Case, Listener, Observer,
                                    bridge_address, derive_env, make_hostile_repo, marked_pids)
from tests.processes import wait_until

pytestmark = [pytest.mark.docker, pytest.mark.slow]

HOSTILE_TEST = "tests/test_hostile.py::test_hostile"
TEST_TIMEOUT = 8.0
PIDS = 96
MEMORY_MB = 512
DISK_MB = 256


class Corpus:
    """One provider, one data folder, one hostile repository with a branch per case."""

    def __init__(self, root: Path, client, base_image: str) -> None:
        self.namespace = f"hostile-{secrets.token_hex(4)}"
        self.settings = Settings(
            out=root / "data", provider="docker", base_image=base_image, max_candidates=2,
            baseline_runs=1, oracle_runs=1, probes=0, test_timeout=TEST_TIMEOUT,
            generators=("procedural",), max_combined=0, memory_mb=MEMORY_MB, pids=PIDS,
            disk_mb=DISK_MB)
        self.provider = DockerProvider(self.settings, client, namespace=self.namespace)
        self.listener = Listener(bridge_address(client))
        cases = {name: Case(name) for name in CASES}
        cases["network"] = Case("network", (bridge_address(client), str(self.listener.port)))
        self.src = root / "hostcalc"
        self.commits = make_hostile_repo(self.src, cases)
        self.seconds: dict[str, float] = {}
        self.results: dict[str, tuple[RunSummary | None, RepogymError | None, Observer]] = {}

    def prepare_images(self) -> None:
        """Build the benign env for real; derive each case's image from it."""
        from repogym.pipeline import build_env, prepare

        prepared = prepare(RepoSpec(source=str(self.src), commit=self.commits["none"]),
                           self.settings)
        shared = build_env(self.provider, prepared, self.settings)
        for name in CASES:
            derive_env(self.provider, shared, self.src, self.commits[name],
                       self.settings.cache_dir)

    def run(self, name: str) -> tuple[RunSummary | None, RepogymError | None, Observer]:
        if name in self.results:
            return self.results[name]
        spec = RepoSpec(source=str(self.src), commit=self.commits[name])
        start = time.monotonic()
        summary, error = None, None
        with Observer() as seen:
            try:
                summary = run_repo(spec, self.settings, provider=self.provider)
            except RepogymError as exc:
                error = exc
        self.seconds[name] = round(time.monotonic() - start, 1)
        self.results[name] = (summary, error, seen)
        return summary, error, seen

    def leftovers(self) -> list[str]:
        containers = self.provider.client.containers.list(
            all=True, filters={"label": f"repogym.namespace={self.namespace}"})
        return [c.name for c in containers]

    def close(self) -> None:
        self.listener.close()
        self.provider.cleanup()
        cleanup_images(self.provider.client, self.namespace)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, docker_client, base_image):
    corpus = Corpus(tmp_path_factory.mktemp("hostile"), docker_client, base_image)
    try:
        corpus.prepare_images()
        yield corpus
    finally:
        print("\nseconds per hostile case:", corpus.seconds)
        corpus.close()


def accepted_tests(corpus: Corpus, name: str) -> list[str]:
    """F2P + P2P of every accepted task of this case's commit."""
    rows = DatasetStore(corpus.settings.out).rows("tasks")
    return [t for r in rows if r.base_commit == corpus.commits[name]
            for t in (*r.FAIL_TO_PASS, *r.PASS_TO_PASS)]


def assert_clean(corpus: Corpus) -> None:
    assert corpus.leftovers() == [], "containers left behind"
    assert wait_until(lambda: not marked_pids(), 10), f"processes left: {marked_pids()}"


def assert_reported(corpus: Corpus, name: str, summary, error) -> None:
    """An error for the repo, or a finished run (its verdicts are written)."""
    assert (summary is None) != (error is None)
    if summary is not None:
        assert summary.candidates >= 1 and summary.baseline_tests == 7, summary


def test_fork_bomb_is_capped_by_the_pids_limit(corpus):
    summary, error, seen = corpus.run("forkbomb")
    assert 0 < seen.max_procs <= PIDS, seen.max_procs  # it ran, and hit the ceiling
    assert_reported(corpus, "forkbomb", summary, error)
    assert_clean(corpus)


@pytest.mark.parametrize("name", ["loop", "sleep"])
def test_endless_test_times_out_as_infra(corpus, name):
    summary, error, _ = corpus.run(name)
    assert isinstance(error, TestRunError) and "timed out" in str(error), (summary, error)
    assert corpus.seconds[name] < TEST_TIMEOUT + 30
    assert_clean(corpus)


def test_memory_hog_is_killed_at_the_memory_limit(corpus):
    summary, error, _ = corpus.run("memhog")
    assert isinstance(error, TestRunError), (summary, error)  # pytest itself was OOM-killed
    assert "timed out" not in str(error)
    assert_clean(corpus)


def test_disk_filler_is_stopped_at_the_disk_limit(corpus):
    summary, error, seen = corpus.run("diskfill")
    assert seen.disk_used_mb < DISK_MB + 400, seen.disk_used_mb  # far below what it tried
    assert isinstance(error, SandboxError) and "disk" in str(error), (summary, error)
    assert_clean(corpus)


def test_network_exfiltration_reaches_nothing(corpus):
    summary, error, _ = corpus.run("network")
    time.sleep(0.5)
    assert corpus.listener.received == []
    assert_reported(corpus, "network", summary, error)
    assert_clean(corpus)


def test_daemon_ignoring_sigterm_does_not_outlive_its_sandbox(corpus):
    summary, error, seen = corpus.run("daemon")
    assert seen.max_procs >= 1  # the daemon did start
    assert_reported(corpus, "daemon", summary, error)
    assert_clean(corpus)


def test_writes_outside_the_work_tree_do_not_survive(corpus):
    summary, error, _ = corpus.run("escape")
    assert_reported(corpus, "escape", summary, error)
    assert_clean(corpus)
    env = corpus.provider.env_for(_image_of(corpus, "escape"))
    tc = PythonToolchain()
    with corpus.provider.open(env) as sandbox:
        sandbox.reset()
        run = tc.run_tests(sandbox, timeout=30, select=[HOSTILE_TEST])
        assert run.results[HOSTILE_TEST].outcome.value == "passed", run.log_tail
        sandbox.reset()
        probe = sandbox.exec(
            "ls -d /etc/rg-hostile /opt/venv/rg-hostile /opt/venv/lib/*/site-packages/rg_* "
            "/opt/venv/lib/*/site-packages/sitecustomize.py ~/.local ~/rg-hostile /tmp/rg-* "
            "/var/tmp/rg-* /run/lock/rg-* /dev/shm/rg-* /opt/repogym/rg-* "
            ".git/hooks/post-checkout 2>/dev/null; grep -l rg-hostile ~/.bashrc; "
            "python -c pass; ls /tmp", timeout=30)
        assert probe.stdout.strip() == "", probe.stdout


def _image_of(corpus: Corpus, name: str) -> str:
    from repogym.pipeline import prepare
    from repogym.sandboxes.images import env_image_tag

    prepared = prepare(RepoSpec(source=str(corpus.src), commit=corpus.commits[name]),
                       corpus.settings)
    return env_image_tag(prepared.env_spec)


@pytest.mark.parametrize("name", ["network", "daemon", "escape"])  # forkbomb: either way
def test_misbehaving_passing_test_stays_out_of_accepted_tasks(corpus, name):
    summary, error, _ = corpus.run(name)  # already run above: the result is reused
    assert error is None and summary is not None, error
    assert (summary.baseline_passing, summary.baseline_misbehaving) == (6, 1), summary
    assert summary.accepted >= 1, summary  # the other tests still make tasks
    assert accepted_tests(corpus, name)
    assert HOSTILE_TEST not in accepted_tests(corpus, name)


def test_corpus_run_continues_with_a_normal_repo(corpus):
    """Last: after every hostile case, the same provider still makes accepted tasks."""
    summary, error, _ = corpus.run("none")
    assert error is None and summary is not None, error
    assert summary.accepted >= 1, summary
    assert summary.baseline_passing == 7, summary
    assert_clean(corpus)
