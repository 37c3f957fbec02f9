"""The ``swebench`` export graded by the **official SWE-bench harness** (PyPI ``swebench`` 5.x).

The export's own ``build_images.sh`` builds the task images of two real accepted tinycalc
tasks; the harness, installed in a separate venv (``~/.cache/repogym-test/swebench-venv``,
made once: ``python -m venv`` + ``pip install 'swebench>=5,<6'``), then grades predictions
with ``run_instance(make_test_spec(instance), ...)``, as its ``run_evaluation`` does: it
creates a container of ``image`` as root, applies the patch with ``git apply`` in
``/testbed``, runs the rewritten ``eval_script`` and parses the log with ``log_parser``.
The gold patch is resolved; an empty patch (the harness's ``patch`` fallback takes it), a
patch that only rewrites the tests and gold + a skipped PASS_TO_PASS test are not. The
documented command line (``python -m swebench.harness.run_evaluation``) is run too. A
JavaScript task (mime-types, mocha; ``log_parser`` ``parse_log_jest_json``, which reads its
``[PASSED] <id>`` lines whole) is graded the same way: gold resolved, empty not. The
task images and the harness's containers are removed at teardown. Set
``REPOGYM_SWEBENCH_VENV`` to use another venv directory.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from repogym.datasets.exports import export_dataset, export_rows
from repogym.patches import new_file_diff, unified_diff
from tests.conftest import IN_CI, TINY_PROJECT
from tests.exports.conftest import TEST_UNITS

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SWEBENCH_REQUIREMENT = "swebench>=5,<6"
VENV = Path(os.environ.get("REPOGYM_SWEBENCH_VENV",
                           Path.home() / ".cache/repogym-test/swebench-venv"))
READY = ".repogym-ready"  # written once the install finished

DRIVER = """\
import json, sys
import docker
from swebench.harness.run_evaluation import run_instance
from swebench.harness.utils import make_test_spec

job = json.load(open(sys.argv[1]))
client = docker.from_env()
results = {}
for case in job["cases"]:
    inst = case["instance"]
    pred = {"instance_id": inst["instance_id"], "model_name_or_path": case["name"],
            "model_patch": case["patch"]}
    out = run_instance(make_test_spec(inst), pred, client, job["run_id"], timeout=300)
    results[case["name"]] = None if out is None else out[1][inst["instance_id"]]
print(json.dumps(results))
"""


def _install(venv: Path) -> None:
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                   capture_output=True, text=True)
    proc = subprocess.run([str(venv / "bin/pip"), "install", "-q", "--disable-pip-version-check",
                           SWEBENCH_REQUIREMENT], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        message = f"pip install {SWEBENCH_REQUIREMENT} failed: {proc.stderr.strip()[-2000:]}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    (venv / READY).write_text(SWEBENCH_REQUIREMENT + "\n")


@pytest.fixture(scope="session")
def swebench_python() -> Path:
    """The Python of a venv holding the official ``swebench`` 5.x (installed when missing;
    an interrupted install is redone; concurrent sessions wait on a lock)."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / (VENV.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (VENV / READY).is_file():
            _install(VENV)
    python = VENV / "bin/python"
    version = subprocess.run([str(python), "-c", "import swebench; print(swebench.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version.split(".")[0] == "5", version
    return python


@pytest.fixture(scope="module")
def exported(real_tasks, docker_client, tmp_path_factory):
    """The swebench export of the real tasks with its task images built by its own
    ``build_images.sh``; ``(out dir, {instance_id: instance})``. Images removed after."""
    out = tmp_path_factory.mktemp("swebench-harness") / "export"
    export_dataset("swebench", out, dataset=real_tasks.store.root)
    lines = (out / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    instances = {i["instance_id"]: i for i in map(json.loads, lines)}
    try:
        proc = subprocess.run(["bash", str(out / "build_images.sh")], capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        yield out, instances
    finally:
        for inst in instances.values():
            try:
                docker_client.images.remove(inst["image"], force=True)
            except Exception:  # noqa: BLE001 - a failed build left no image
                pass


@pytest.fixture(scope="module")
def js_exported(js_tasks, docker_client, tmp_path_factory):
    """The swebench export of the JavaScript tasks, task images built by its own
    ``build_images.sh``; ``{instance_id: instance}``. Images removed after."""
    out = tmp_path_factory.mktemp("swebench-harness-js") / "export"
    export_rows("swebench", js_tasks.rows, out)
    lines = (out / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    instances = {i["instance_id"]: i for i in map(json.loads, lines)}
    try:
        proc = subprocess.run(["bash", str(out / "build_images.sh")], capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        yield instances
    finally:
        for inst in instances.values():
            try:
                docker_client.images.remove(inst["image"], force=True)
            except Exception:  # noqa: BLE001 - a failed build left no image
                pass


@pytest.fixture(scope="module")
def run_id(docker_client):
    """This module's harness run id; the harness's containers (``sweb.eval.*.<run_id>``)
    are removed after, should one outlive ``run_instance``."""
    rid = f"repogym-test-{secrets.token_hex(4)}"
    yield rid
    for container in docker_client.containers.list(all=True, ignore_removed=True):
        if container.name.startswith("sweb.eval.") and rid in container.name:
            container.remove(force=True)


def harness(python: Path, workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the venv's Python in ``workdir`` (the harness writes ``logs/`` there)."""
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str(python), *args], cwd=workdir, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_the_image_holds_the_broken_state_at_testbed(real_tasks, exported, docker_client):
    _, instances = exported
    inst = instances[real_tasks.synthetic.instance_id]
    image = docker_client.images.get(inst["image"])
    assert image.labels["repogym"] == "task"
    assert image.labels["repogym.task"] == inst["instance_id"]
    assert inst["log_parser"] == "parse_log_jest_json" and inst["eval_type"] == "pass_and_fail"
    log = docker_client.containers.run(
        inst["image"], ["bash", "-c", "readlink /testbed; pwd -P; git log --oneline | wc -l; "
                        "grep -c -- '- 32' tinycalc/units.py; ls /opt/repogym-task"],
        remove=True, network_mode="none").decode()
    assert log.split() == ["/repo", "/repo", "1", "1", "commit", "post-install.tar", "task.git"]


def test_official_harness_grades_the_export(real_tasks, exported, run_id, swebench_python,
                                            tmp_path):
    """``run_instance`` on each task: gold resolved; an empty patch and a patch rewriting
    the tests (applied by the harness, discarded by repogym's grader) are not, nor is the
    gold patch plus a change that makes a PASS_TO_PASS test skip. The log's recorded test
    exit code is 0 exactly when repogym's reward is 1."""
    _, instances = exported
    hacks = {
        real_tasks.synthetic.instance_id: unified_diff(
            "tests/test_units.py", TEST_UNITS,
            TEST_UNITS.replace("== 32", "is not None").replace("== 212", "is not None")),
        real_tasks.mined.instance_id: new_file_diff(
            "tests/test_scale.py", "def test_scale_all():\n    pass\n"),
    }
    ops = TINY_PROJECT["tinycalc/ops.py"]
    skip = unified_diff("tinycalc/ops.py", ops, ops.replace(
        "def is_even(n):\n", "def is_even(n):\n    import pytest\n    pytest.skip('no')\n"))
    cases: list[dict[str, Any]] = []
    for iid, inst in instances.items():
        for name, patch in (("gold", inst["patch"]), ("empty", ""), ("tests", hacks[iid]),
                            ("skip", inst["patch"] + skip)):
            cases.append({"name": f"{name}.{iid}", "instance": inst, "patch": patch})
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"run_id": run_id, "cases": cases}))
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = harness(swebench_python, tmp_path / "run", str(tmp_path / "driver.py"), str(job))
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for iid in instances:
        gold = results[f"gold.{iid}"]
        assert gold is not None and gold["resolved"] is True, gold
        assert gold["tests_status"]["FAIL_TO_PASS"]["failure"] == []
        assert exit_line(tmp_path, run_id, f"gold.{iid}", iid) == ("0", "1")
        for name in ("empty", "tests"):  # `patch` takes the empty diff: both are graded
            got = results[f"{name}.{iid}"]
            assert got is not None and got["patch_successfully_applied"], (name, got)
            assert got["resolved"] is False, (name, got)
            assert got["tests_status"]["FAIL_TO_PASS"]["failure"] == list(
                json.loads(instances[iid]["FAIL_TO_PASS"])), (name, got)
            assert exit_line(tmp_path, run_id, f"{name}.{iid}", iid) == ("1", "0")
        # gold + a PASS_TO_PASS test made to skip: SWE-bench's rules call a skipped P2P test
        # maintained, repogym's do not (reward 0): the grader prints it as failed, so the
        # harness agrees: not resolved
        skipped = results[f"skip.{iid}"]
        assert skipped is not None and skipped["resolved"] is False, skipped
        assert exit_line(tmp_path, run_id, f"skip.{iid}", iid) == ("1", "0")
        assert "[FAILED] tests/test_ops.py::test_is_even" in output(tmp_path, run_id,
                                                                    f"skip.{iid}", iid)


def output(tmp_path: Path, run_id: str, model: str, iid: str) -> str:
    """The eval script's output in one harness run (its ``test_output.txt``)."""
    return (tmp_path / "run/logs/run_evaluation" / run_id / model / iid
            / "test_output.txt").read_text()


def exit_line(tmp_path: Path, run_id: str, model: str, iid: str) -> tuple[str, str]:
    """(the harness's recorded test exit code, repogym's reward) in one run's log."""
    log = output(tmp_path, run_id, model, iid)
    code = re.findall(r"^>>>>> Test Exit Code: (-?\d+)$", log, re.M)
    reward = re.findall(r"^REPOGYM_REWARD=(\S+)$", log, re.M)
    assert len(code) == len(reward) == 1, log[-2000:]
    return code[0], reward[0]


def test_documented_command_line(real_tasks, exported, run_id, swebench_python, tmp_path):
    """``python -m swebench.harness.run_evaluation --dataset_name OUT/instances.jsonl``:
    the synthetic task's gold patch resolves, the mined task's test-only patch does not."""
    out, instances = exported
    syn, mined = real_tasks.synthetic.instance_id, real_tasks.mined.instance_id
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps(p) + "\n" for p in [
        {"instance_id": syn, "model_name_or_path": "cli", "model_patch": instances[syn]["patch"]},
        {"instance_id": mined, "model_name_or_path": "cli", "model_patch": new_file_diff(
            "tests/test_scale.py", "def test_scale_all():\n    pass\n")},
    ]))
    cli_run = f"{run_id}-cli"
    harness(swebench_python, tmp_path / "run", "-m", "swebench.harness.run_evaluation",
            "--dataset_name", str(out / "instances.jsonl"), "--predictions_path", str(preds),
            "--run_id", cli_run, "--max_workers", "2", "--timeout", "300")
    report = json.loads((tmp_path / "run" / f"cli.{cli_run}.json").read_text())
    assert report["resolved_ids"] == [syn] and report["unresolved_ids"] == [mined], report
    assert report["error_ids"] == [] and report["completed_ids"] == sorted([syn, mined])


def test_official_harness_grades_a_javascript_task(js_tasks, js_exported, run_id,
                                                   swebench_python, tmp_path):
    """``run_instance`` on the JavaScript tasks: each gold patch resolved (every
    FAIL_TO_PASS id, spaces and all, read back from the log), the synthetic task's empty
    patch not; the recorded test exit code is 0 exactly when repogym's reward is 1."""
    syn, mined = js_tasks.synthetic.instance_id, js_tasks.mined.instance_id
    assert {i["log_parser"] for i in js_exported.values()} == {"parse_log_jest_json"}
    cases = [{"name": f"gold.{iid}", "instance": js_exported[iid],
              "patch": js_exported[iid]["patch"]} for iid in (syn, mined)]
    cases.append({"name": f"empty.{syn}", "instance": js_exported[syn], "patch": ""})
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"run_id": run_id, "cases": cases}))
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = harness(swebench_python, tmp_path / "run", str(tmp_path / "driver.py"), str(job))
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for iid in (syn, mined):
        gold = results[f"gold.{iid}"]
        assert gold is not None and gold["resolved"] is True, gold
        f2p = json.loads(js_exported[iid]["FAIL_TO_PASS"])
        assert sorted(gold["tests_status"]["FAIL_TO_PASS"]["success"]) == sorted(f2p)
        assert any(" > " in t for t in f2p)  # ids with spaces survive the log parser
        assert exit_line(tmp_path, run_id, f"gold.{iid}", iid) == ("0", "1")
    empty = results[f"empty.{syn}"]
    assert empty is not None and empty["patch_successfully_applied"], empty
    assert empty["resolved"] is False
    assert sorted(empty["tests_status"]["FAIL_TO_PASS"]["failure"]) == sorted(
        json.loads(js_exported[syn]["FAIL_TO_PASS"]))
    assert exit_line(tmp_path, run_id, f"empty.{syn}", syn) == ("1", "0")
