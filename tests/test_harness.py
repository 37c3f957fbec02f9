"""The test harness's own housekeeping (``tests/conftest.py``): it must never fail a session."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from pathlib import Path

from repogym.sandboxes.local import MARKER
from tests.conftest import prune_local_envs

DAY = 86400.0


def _env(root: Path, name: str, recipe: str, age_s: float) -> Path:
    env = root / name
    env.mkdir()
    marker = env / MARKER
    marker.write_text(json.dumps({"recipe_version": recipe}))
    then = time.time() - age_s
    os.utime(marker, (then, then))
    return env


def test_old_one_run_envs_go_and_the_rest_stay(tmp_path: Path) -> None:
    kept = _env(tmp_path, "kept", "3", age_s=3600)
    one_run = _env(tmp_path, "one-run", "test-abc", age_s=4 * 3600)
    fresh_one_run = _env(tmp_path, "fresh-one-run", "test-abc", age_s=60)
    stale = _env(tmp_path, "stale", "3", age_s=30 * DAY)
    prune_local_envs(tmp_path, keep_days=14)
    assert kept.is_dir() and fresh_one_run.is_dir()
    assert not one_run.exists() and not stale.exists()


def test_an_env_removed_by_another_worker_meanwhile_is_skipped(tmp_path: Path,
                                                              monkeypatch) -> None:
    """The CI failure of 2026-12-02: two xdist workers pruned at once, one removed a
    half-built env the other had listed, and ``stat`` on it failed every test's setup.
    An env that vanishes under the pruning is passed over, and the rest still go."""
    import tests.conftest as harness

    first = _env(tmp_path, "a-gone", "test-abc", age_s=4 * 3600)
    second = _env(tmp_path, "b-old", "test-abc", age_s=4 * 3600)
    real = harness._prune_env

    def racing(env: Path, now: float, keep_days: float) -> None:
        if env == first:
            shutil.rmtree(env)  # another worker got there first
            env.stat()  # what the old code did next: FileNotFoundError
        real(env, now, keep_days)

    monkeypatch.setattr(harness, "_prune_env", racing)
    prune_local_envs(tmp_path, keep_days=14)
    assert not first.exists() and not second.exists()


def test_one_worker_prunes_the_others_go_on(tmp_path: Path) -> None:
    one_run = _env(tmp_path, "one-run", "test-abc", age_s=4 * 3600)
    with (tmp_path / ".prune.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        prune_local_envs(tmp_path, keep_days=14)  # returns at once, pruning nothing
        assert one_run.is_dir()
    prune_local_envs(tmp_path, keep_days=14)
    assert not one_run.exists()


def test_an_env_being_built_stays(tmp_path: Path) -> None:
    half_built = tmp_path / "half"
    half_built.mkdir()
    then = time.time() - 5 * 3600
    os.utime(half_built, (then, then))
    with (tmp_path / "half.build.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        prune_local_envs(tmp_path, keep_days=14)
    assert half_built.is_dir()
