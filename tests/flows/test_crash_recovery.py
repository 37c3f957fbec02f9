"""Issue 5's "done when": a run killed with SIGKILL halfway, then a second run over the same
repository, leave a clean store.

The real CLI runs as a subprocess on a small git repository. Once its first batch is on
disk and it is judging the next one, the whole process group is killed (SIGKILL: no
handler, no cleanup), its leftover sandbox containers are removed, and a second run goes to
completion. Then the store has no
``instance_id`` twice (checked on the raw files, not through the store's de-duplicating
reader), no temp or journal file, every task accepted before the kill, and a manifest true
to its files.

Commits use fixed dates, so the repository's sha, and hence its env image, is the same on
every run of this test: the image is built once and reused.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import docker.errors
import pyarrow.parquet as pq
import pytest

from repogym.datasets import TABLES, DatasetStore, read_part
from tests.conftest import TINY_PROJECT, commit_files

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = "crashcalc"  # unique to this test: its containers are found by their image name
FIXED_DATE = "2024-01-01T00:00:00Z"
RUN_ARGS = ("--max-candidates", "3", "--max-combined", "3", "--runs", "1",
            "--generators", "procedural")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_AUTHOR_DATE", FIXED_DATE)
    monkeypatch.setenv("GIT_COMMITTER_DATE", FIXED_DATE)
    commit_files(tmp_path / REPO, TINY_PROJECT)
    return tmp_path / REPO


def cli_env(tmp_path: Path) -> dict[str, str]:
    """The environment of the CLI: its own PREFECT_HOME, the session's Prefect server."""
    from prefect.settings import PREFECT_API_URL

    home = tmp_path / "prefect-home"
    home.mkdir(exist_ok=True)
    return {**os.environ, "PREFECT_HOME": str(home), "PREFECT_API_URL": PREFECT_API_URL.value()
            or "", "COLUMNS": "200", "REPOGYM_PROBES": "0"}  # the probe set: tests/judges


def run_command(repo: Path, out: Path) -> list[str]:
    """``repogym run`` through the installed console script (``python -m`` without one)."""
    script = Path(sys.executable).with_name("repogym")
    prefix = [str(script)] if script.is_file() else [sys.executable, "-m", "repogym"]
    return [*prefix, "run", str(repo), "--out", str(out), *RUN_ARGS]


def part_files(out: Path) -> list[Path]:
    return sorted(p for t in TABLES for p in (out / t).glob("*/part-*.parquet"))


def start_and_kill_mid_judging(cmd: list[str], env: dict[str, str], out: Path, log: Path,
                               docker_client, timeout: float = 240) -> float:
    """Start ``cmd`` in its own session; once a part file is on disk and the run has a
    sandbox up again (judging its next batch), SIGKILL the whole process group. The seconds
    until the kill. Fails if the run ends (or stalls) before that."""
    start = time.monotonic()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        for ready in (lambda: bool(part_files(out)),
                      lambda: bool(part_files(out)) and bool(our_containers(docker_client))):
            while not ready():
                if proc.poll() is not None:
                    pytest.fail(f"the run ended before it could be killed:\n{log.read_text()}")
                if time.monotonic() - start > timeout:
                    pytest.fail(f"not killed after {timeout}s:\n{log.read_text()}")
                time.sleep(0.1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return time.monotonic() - start


def our_containers(docker_client) -> list:
    """Sandbox and build containers of this test's repository (its env image is unique).

    ``repogym cleanup`` would remove every repogym container on this machine, including
    those of other test sessions running at the same time, so the test picks its own.
    """
    found = []
    for kind in ("sandbox", "build"):
        for container in docker_client.containers.list(all=True, ignore_removed=True,
                                                       filters={"label": f"repogym={kind}"}):
            image = container.attrs.get("Config", {}).get("Image", "")
            if image.startswith(f"repogym-env/{REPO}:"):
                found.append(container)
    return found


def remove_leftover_containers(docker_client) -> int:
    """Remove the sandboxes the killed run left behind (nothing stops them: no handler ran)."""
    leftovers = our_containers(docker_client)
    for container in leftovers:
        with contextlib.suppress(docker.errors.NotFound):  # gone on its own meanwhile
            container.remove(force=True)
    return len(leftovers)


def raw_ids(out: Path, table: str) -> list[str]:
    """Every instance_id of a table as stored, repeats included (no de-duplicating reader)."""
    return [i for p in sorted((out / table).glob("*/*.parquet"))
            for i in pq.read_table(p, columns=["instance_id"]).column(0).to_pylist()]


def debris(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*")
                  if p.name.startswith(".tmp-") or p.name == ".compaction.json")


def test_sigkill_halfway_then_rerun_leaves_a_clean_store(tmp_path, repo, base_image,
                                                         docker_client):
    out, env = tmp_path / "out", cli_env(tmp_path)
    remove_leftover_containers(docker_client)  # of an earlier, interrupted session
    killed_after = start_and_kill_mid_judging(run_command(repo, out), env, out,
                                              tmp_path / "run1.log", docker_client)
    for path in part_files(out):  # whole files only, even before any recovery
        read_part(path)
    store = DatasetStore(out)
    accepted_before = store.instance_ids("tasks")
    judged_before = accepted_before | store.instance_ids("rejected")
    procedural_before = {r.instance_id for t in ("tasks", "rejected") for r in store.rows(t)
                         if r.generator == "procedural" and r.status.value != "infra_error"}
    leftovers = remove_leftover_containers(docker_client)
    assert leftovers >= 1 and our_containers(docker_client) == []

    start = time.monotonic()
    second = subprocess.run(run_command(repo, out), env=env, capture_output=True, text=True,
                            timeout=300)
    rerun_seconds = time.monotonic() - start
    assert second.returncode == 0, second.stdout + second.stderr

    tasks, rejected = raw_ids(out, "tasks"), raw_ids(out, "rejected")
    for table in TABLES:
        assert [i for i, n in Counter(raw_ids(out, table)).items() if n > 1] == []
    assert debris(out) == []
    assert accepted_before <= set(tasks)
    assert judged_before <= set(tasks) | set(rejected)
    assert len(set(tasks) | set(rejected)) > len(judged_before)  # the rerun judged the rest
    m = store.manifest()
    assert m is not None
    assert (m.tables["tasks"].rows, m.tables["rejected"].rows) == (len(tasks), len(rejected))
    summary = json.loads((out / "runs" / f"{REPO}.json").read_text())
    assert summary["skipped_seen"] == len(procedural_before) > 0  # not judged twice
    print(f"killed after {killed_after:.1f}s with {len(judged_before)} judged "
          f"({len(accepted_before)} accepted), {leftovers} container(s) left behind; "
          f"rerun {rerun_seconds:.1f}s; final {len(tasks)} tasks, {len(rejected)} rejected")
