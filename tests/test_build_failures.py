"""Environments that do not install at a mined fix's commit: counted per spec, rejected once
the failure repeats, and not built again (:mod:`repogym.build_failures`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.build_failures import ATTEMPTS, BuildLedger
from repogym.config import Settings
from repogym.datasets import DatasetStore
from repogym.errors import EnvDoesNotInstall, InstallError
from repogym.pipeline import _env_at, prepare, run_repo, unseen
from repogym.sandboxes import get_provider
from repogym.schemas.records import EnvSpec, RepoSpec, Status
from tests.histories import (
    GONE_API,
    MISSING_DIST,
    build_history_that_did_not_install,
    build_history_whose_old_suite_does_not_run,
)


def spec(commit: str = "a" * 40, recipe: str = "r1") -> EnvSpec:
    return EnvSpec(repo="shopcart", commit=commit, base_image="base:1", toolchain="python",
                   install_steps=("pip install -e .",), recipe_version=recipe)


def failed(step: str = "pip install -e .") -> InstallError:
    return InstallError("shopcart", step, Path("/logs/step.log"),
                        tail=f"ERROR: No matching distribution found for {MISSING_DIST}")


def test_failures_are_counted_per_spec_and_settle_at_the_limit(tmp_path):
    ledger = BuildLedger(tmp_path)
    assert ledger.get(spec()) is None
    first = ledger.record(spec(), failed())
    assert (first.attempts, first.settled) == (1, False)
    again = ledger.record(spec(), failed())
    assert again.attempts == ATTEMPTS and again.settled
    assert again.first_seen == first.first_seen and again.last_seen >= first.last_seen
    assert BuildLedger(tmp_path).get(spec()) == again  # kept on disk for later runs
    assert ledger.get(spec(recipe="r2")) is None  # another recipe is tried afresh
    assert ledger.get(spec(commit="b" * 40)) is None
    text = again.describe()
    assert "does not install at aaaaaaaaaaaa" in text and "in 2 builds" in text
    assert MISSING_DIST in text and "pip install -e ." in text
    ledger.clear(spec())
    assert ledger.get(spec()) is None


def test_an_unreadable_record_counts_as_none(tmp_path):
    ledger = BuildLedger(tmp_path)
    (tmp_path / f"{spec().digest()}.json").write_text("{not json")
    assert ledger.get(spec()) is None
    assert ledger.record(spec(), failed()).attempts == 1


@pytest.fixture
def history(tmp_path):
    return build_history_that_did_not_install(tmp_path / "shopcart")


def docker_settings(out: Path, base_image: str) -> Settings:
    """Docker: the HEAD environment is an image kept between test runs (same commit, same
    tag); the failing builds are made afresh every time."""
    return Settings(out=out, base_image=base_image, generators=("mined",), baseline_runs=1,
                    oracle_runs=1, max_combined=0, probes=0)


@pytest.mark.docker
@pytest.mark.slow
def test_a_fix_whose_env_does_not_install_is_rejected_when_the_failure_repeats(history,
                                                                              tmp_path,
                                                                              base_image):
    """Run 1: the fix's parent does not install -- an infra error (the next run tries once
    more). Run 2: it fails again -- rejected with the step and the log's end. After that the
    spec is known: asked for again, it is not built."""
    settings = docker_settings(tmp_path / "out", base_image)
    store = DatasetStore(settings.out)
    fix = history.fix_commits[0]

    first = run_repo(RepoSpec(source=str(history.root)), settings)
    assert first.candidates == 1, first
    [row] = store.judged_rows()
    assert (row.status, row.reason) == (Status.infra_error, "infra:env"), row.detail
    assert row.provenance["commit"] == fix

    second = run_repo(RepoSpec(source=str(history.root)), settings)
    assert second.candidates == 1, second  # an infra error is judged again
    [row] = store.judged_rows()
    assert (row.status, row.reason) == (Status.reject, "env:does_not_install"), row.detail
    assert f"does not install at {history.initial_commit[:12]}" in row.detail
    assert MISSING_DIST in row.detail and "in 2 builds" in row.detail
    assert unseen([row.to_candidate()], store) == []  # decided: no later run judges it

    prepared = prepare(RepoSpec(source=str(history.root)), settings)
    logs = [p for p in (settings.logs_dir / "shopcart").rglob("*") if p.is_file()]
    assert logs  # the two builds kept their logs
    stamps = {p: p.stat().st_mtime_ns for p in logs}
    with pytest.raises(EnvDoesNotInstall) as known:
        _env_at(get_provider("docker", settings), prepared, history.initial_commit, settings)
    assert known.value.failure.attempts == ATTEMPTS  # not counted again ...
    assert {p: p.stat().st_mtime_ns for p in logs} == stamps  # ... nor built


@pytest.mark.slow
def test_a_fix_whose_commit_suite_does_not_run_is_rejected_when_that_repeats(
        tmp_path, shared_local_envs):
    """iniconfig's old commits: the environment installs, but the suite of the fix's parent
    cannot run in it (its conftest imports what today's pytest lacks). Run 1: an infra error
    (maybe the sandbox). Run 2: the same -- rejected as ``env_mismatch:suite_does_not_run``
    with the runner's complaint, and no later run judges it again."""
    history = build_history_whose_old_suite_does_not_run(tmp_path / "shopcart")
    settings = Settings(out=tmp_path / "out", provider="local", local_envs=shared_local_envs,
                        generators=("mined",), baseline_runs=1, oracle_runs=1,
                        max_combined=0, probes=0)
    store = DatasetStore(settings.out)

    first = run_repo(RepoSpec(source=str(history.root)), settings)
    assert first.candidates == 1, first
    [row] = store.judged_rows()
    assert row.provenance["commit"] == history.fix_commits[0]
    assert (row.status, row.reason) == (Status.infra_error, "infra:suite_does_not_run"), \
        row.detail
    assert f"at {history.initial_commit[:12]} the commit's own suite does not run" in row.detail

    second = run_repo(RepoSpec(source=str(history.root)), settings)
    assert second.candidates == 1, second  # an infra error is judged again
    [row] = store.judged_rows()
    assert (row.status, row.reason) == (Status.reject, "env_mismatch:suite_does_not_run"), \
        row.detail
    assert f"the suite of {history.initial_commit[:12]} does not run" in row.detail
    assert GONE_API in row.detail and "in 2 runs" in row.detail
    assert unseen([row.to_candidate()], store) == []  # decided: no later run judges it
