"""Whole pipeline on real PyPI sdists, then every accepted row re-checked WITHOUT the judge.

The re-check uses only the docker SDK, git and pytest's own JUnit XML: a fresh container from
the row's image, ``bug_patch`` applied (each FAIL_TO_PASS test must fail), then ``patch``
applied on top (each must pass).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor

import pytest

from repogym.config import Settings
from repogym.datasets import DatasetStore
from repogym.flows.repo_flow import repo_flow
from repogym.samples import sample_repo
from repogym.schemas.records import RepoSpec

pytestmark = [pytest.mark.docker, pytest.mark.slow]
SAMPLES = ["inflection", "iniconfig"]  # two at once: concurrent writers to one store


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, base_image):
    out = tmp_path_factory.mktemp("e2e")
    settings = Settings(out=out, max_candidates=4, baseline_runs=2, oracle_runs=2, seed=1,
                        max_combined=2, probes=0)  # the probe set: the mined end-to-end
    paths = {name: sample_repo(name, out / "samples") for name in SAMPLES}
    # the repositories at once, as a corpus run does: one store, concurrent writers
    with ThreadPoolExecutor(len(SAMPLES)) as pool:
        futures = {name: pool.submit(repo_flow, RepoSpec(source=str(path)), settings)
                   for name, path in paths.items()}
        summaries = {name: f.result() for name, f in futures.items()}
    return settings, summaries


def test_each_sample_yields_accepted_tasks(corpus):
    settings, summaries = corpus
    store = DatasetStore(settings.out)
    rows = store.rows("tasks")
    for name in SAMPLES:
        assert summaries[name].accepted >= 1, summaries[name]
        assert any(r.repo == name for r in rows)
    assert len(rows) == sum(s.accepted for s in summaries.values())


def test_rerun_adds_no_duplicates(corpus):
    settings, summaries = corpus
    store = DatasetStore(settings.out)
    before = {r.instance_id for r in store.judged_rows()}
    pending = sum(r.status == "infra_error" for r in store.judged_rows("iniconfig"))
    again = repo_flow(RepoSpec(source=str(settings.out / "samples" / "iniconfig")), settings)
    assert again.skipped_seen == again.candidates - pending  # only infra errors are judged again
    after = [r.instance_id for r in store.judged_rows()]
    assert sorted(after) == sorted(before)  # each candidate once, none new


def junit_outcomes(container, tests: list[str]) -> dict[str, bool]:
    """Which of ``tests`` pass under a plain pytest run with JUnit XML ({} when pytest died
    before writing it: a bug that hangs or crashes the interpreter passes nothing)."""
    cmd = ["timeout", "-s", "KILL", "300", "python", "-m", "pytest", "-q", "-p",
           "no:cacheprovider", "--junitxml=/tmp/j.xml", *tests]
    # no .pyc: a bug and its fix of equal size, written in the same second, would otherwise
    # be served from a stale cache
    container.exec_run(["rm", "-f", "/tmp/j.xml"], user="root")
    _, log = container.exec_run(cmd, workdir="/repo", user="repogym",
                                environment={"PYTHONDONTWRITEBYTECODE": "1"})
    code, xml = container.exec_run(["cat", "/tmp/j.xml"])
    if code != 0:
        print(log.decode(errors="replace")[-3000:])
        return {}
    passed = {}
    for case in ET.fromstring(xml).iter("testcase"):
        ok = not any(child.tag in ("failure", "error", "skipped") for child in case)
        passed[(case.get("classname"), case.get("name"))] = ok
    return passed


def to_key(nodeid: str) -> tuple[str, str]:
    path, _, rest = nodeid.partition("::")
    parts = rest.split("::")
    module = path.removesuffix(".py").replace("/", ".")
    return (".".join([module, *parts[:-1]]), parts[-1])


def apply(container, patch: str) -> None:
    import io
    import tarfile

    data = patch.encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("p.diff")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    container.put_archive("/tmp", buf.getvalue())
    code, out = container.exec_run(["git", "apply", "/tmp/p.diff"], workdir="/repo", user="root")
    assert code == 0, out


def recheck(docker_client, row) -> None:
    """In a fresh container of the row's image, with only git and pytest's JUnit XML: the
    broken state (base_commit + bug_patch + test_patch) fails every FAIL_TO_PASS test and
    adding ``patch`` passes them all."""
    container = docker_client.containers.run(row.image, ["sleep", "infinity"], detach=True,
                                             network_mode="none", labels={"repogym": "sandbox"})
    try:
        code, out = container.exec_run(["git", "checkout", "-q", "-f", row.base_commit],
                                       workdir="/repo", user="root")
        assert code == 0, out
        container.exec_run(["chown", "-R", "repogym:repogym", "/repo"], user="root")
        for patch in (row.bug_patch, row.test_patch):
            if patch:
                apply(container, patch)
        broken = junit_outcomes(container, list(row.FAIL_TO_PASS))
        assert not any(broken.get(to_key(t), False) for t in row.FAIL_TO_PASS), row.instance_id
        apply(container, row.patch)
        fixed = junit_outcomes(container, list(row.FAIL_TO_PASS))
        assert all(fixed.get(to_key(t)) for t in row.FAIL_TO_PASS), (row.instance_id, fixed)
    finally:
        container.remove(force=True)


def test_every_accepted_row_rechecked_independently(corpus, docker_client):
    settings, _ = corpus
    rows = DatasetStore(settings.out).rows("tasks")
    assert rows
    for row in rows:
        recheck(docker_client, row)


def test_statements_never_quote_the_patch(corpus):
    from repogym.generators.statements import leaks

    settings, _ = corpus
    for row in DatasetStore(settings.out).rows("tasks"):
        assert row.problem_statement.strip()
        assert not leaks(row.problem_statement, row.patch), row.instance_id


def test_verify_command_grades_gold_one_and_empty_zero(corpus, tmp_path):
    import json
    import os
    import subprocess
    import sys

    settings, _ = corpus
    row = DatasetStore(settings.out).rows("tasks")[0]
    rewards = {}
    for name, patch in (("gold", row.patch), ("empty", "")):
        path = tmp_path / f"{name}.diff"
        path.write_text(patch)
        proc = subprocess.run([sys.executable, "-m", "repogym", "verify", row.instance_id,
                               str(path), "--dataset", str(settings.out)],
                              capture_output=True, text=True, timeout=600, env=os.environ)
        assert proc.returncode == 0, proc.stderr
        rewards[name] = json.loads(proc.stdout.strip().splitlines()[-1])["reward"]
    assert rewards == {"gold": 1.0, "empty": 0.0}


def test_verify_unknown_task_is_one_line_error(corpus, tmp_path):
    import subprocess
    import sys

    settings, _ = corpus
    (tmp_path / "p.diff").write_text("")
    proc = subprocess.run([sys.executable, "-m", "repogym", "verify", "nope", str(tmp_path / "p.diff"),
                           "--dataset", str(settings.out)], capture_output=True, text=True)
    assert proc.returncode == 2 and "no such task" in proc.stderr and "Traceback" not in proc.stderr
