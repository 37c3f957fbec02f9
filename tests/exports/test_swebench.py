"""SWE-bench round trip in Docker: each exported instance's own ``eval_script``, run as root in
a fresh container of its ``image_name`` with the patch at /tmp/patch.diff (where SWE-bench
harnesses put it), gives reward 1 for the gold patch and 0 for the empty one."""

from __future__ import annotations

import json

import pytest

from repogym.datasets.exports import export_dataset
from tests.exports.conftest import sh, tar_of

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def instances(real_tasks, tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("swebench") / "export"
    export_dataset("swebench", out, dataset=real_tasks.store.root)
    lines = (out / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    return {i["instance_id"]: i for i in map(json.loads, lines)}


def evaluate(container_factory, inst: dict, patch: str) -> tuple[str, str]:
    """(reward.txt, stdout) of one eval_script run."""
    container = container_factory(inst["image_name"])
    container.put_archive("/", tar_of({"eval.sh": inst["eval_script"].encode(),
                                       "tmp/patch.diff": patch.encode()}))
    code, log = sh(container, "bash /eval.sh")
    assert code == 0, log
    return sh(container, "cat /tmp/repogym-eval/reward.txt")[1].strip(), log


@pytest.mark.parametrize("which", ["synthetic", "mined"])
def test_gold_patch_scores_one(which, real_tasks, instances, container_factory):
    row = getattr(real_tasks, which)
    inst = instances[row.instance_id]
    reward, log = evaluate(container_factory, inst, inst["patch"])
    assert reward == "1" and "REPOGYM_REWARD=1" in log
    for test in json.loads(inst["FAIL_TO_PASS"]) + json.loads(inst["PASS_TO_PASS"]):
        assert f"PASSED {test}\n" in log  # SWE-bench's pytest log parser reads these lines


@pytest.mark.parametrize("which", ["synthetic", "mined"])
def test_empty_patch_scores_zero(which, real_tasks, instances, container_factory):
    row = getattr(real_tasks, which)
    inst = instances[row.instance_id]
    reward, log = evaluate(container_factory, inst, "")
    assert reward == "0" and "REPOGYM_REWARD=0" in log
    for test in json.loads(inst["FAIL_TO_PASS"]):
        assert f"FAILED {test}\n" in log


def test_patch_editing_the_tests_scores_zero(real_tasks, instances, container_factory):
    """A diff that rewrites the failing test (the mined task's test comes from test_patch,
    so the solver's version of that file is discarded)."""
    from repogym.generators.diffs import new_file_diff

    inst = instances[real_tasks.mined.instance_id]
    hack = new_file_diff("tests/test_scale.py", "def test_scale_all():\n    pass\n")
    reward, log = evaluate(container_factory, inst, hack)
    assert reward == "0", log
    assert "tests/test_scale.py" in json.loads(log.split("REPOGYM_RESULT=")[1])["discarded"]
