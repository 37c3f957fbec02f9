"""SWE-bench round trip in Docker: each exported instance's own ``eval_script``, run as root in
a fresh container of its ``image_name`` with the patch at /tmp/patch.diff (where SWE-bench
harnesses put it), gives reward 1 for the gold patch and 0 for the empty one.

Also the in-sandbox hardening, in the container: a listed test that hangs fails at the
judge's time limit (binary grading stops at 0; ``--partial`` runs the rest again), and a
``pytest.toml`` that loads a plugin forcing passes scores 0 -- discarded as runner
configuration, and, with that rule off, still never read, because the launcher pins the
configuration to what the broken commit holds (the solver's own commits do not count).
"""

from __future__ import annotations

import json

import pytest

from repogym.datasets.exports import export_dataset
from repogym.datasets.exports.grading import SPEC_FILE, grading_files
from repogym.patches import new_file_diff, unified_diff
from tests.exports.conftest import UNITS, sh, stopped_at_a_failure, tar_of

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
        assert f"[PASSED] {test}\n" in log  # SWE-bench's parse_log_jest_json reads these


@pytest.mark.parametrize("which", ["synthetic", "mined"])
def test_empty_patch_scores_zero(which, real_tasks, instances, container_factory):
    row = getattr(real_tasks, which)
    inst = instances[row.instance_id]
    reward, log = evaluate(container_factory, inst, "")
    assert reward == "0" and "REPOGYM_REWARD=0" in log
    for test in json.loads(inst["FAIL_TO_PASS"]):
        assert f"[FAILED] {test}\n" in log


def test_patch_editing_the_tests_scores_zero(real_tasks, instances, container_factory):
    """A diff that rewrites the failing test (the mined task's test comes from test_patch,
    so the solver's version of that file is discarded)."""
    from repogym.patches import new_file_diff

    inst = instances[real_tasks.mined.instance_id]
    hack = new_file_diff("tests/test_scale.py", "def test_scale_all():\n    pass\n")
    reward, log = evaluate(container_factory, inst, hack)
    assert reward == "0", log
    assert "tests/test_scale.py" in json.loads(log.split("REPOGYM_RESULT=")[1])["discarded"]


# -- the hardened grading path, in the container --------------------------------------------

BROKEN_UNITS = UNITS.replace("+ 32", "- 32")
# 0 °C hangs (so test_freezing does), any other value is right (test_boiling passes)
HANG_SOFT = ("import time\n\n\ndef celsius_to_fahrenheit(celsius):\n"
             "    if celsius == 0:\n        time.sleep(3600)\n"
             "    return celsius * 9 / 5 + 32\n")
HANG_HARD = ("import signal\nimport time\n\n\ndef celsius_to_fahrenheit(celsius):\n"
             "    if celsius == 0:\n"
             "        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n"
             "        time.sleep(3600)\n"
             "    return celsius * 9 / 5 + 32\n")  # deaf to the soft limit's SIGALRM
HACK_TOML = '[pytest]\naddopts = ["-p", "hackmod"]\n'
HACK_MODULE = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
               "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
               "    outcome.get_result().outcome = \"passed\"\n")
HACK = new_file_diff("pytest.toml", HACK_TOML) + new_file_diff("hackmod.py", HACK_MODULE)


def eval_in(container, inst: dict, patch: str) -> dict:
    """The grader's result of one eval_script run in ``container`` (reusable: the first
    run builds the broken state, each one restores it)."""
    container.put_archive("/", tar_of({"eval.sh": inst["eval_script"].encode(),
                                       "tmp/patch.diff": patch.encode()}))
    code, log = sh(container, "bash /eval.sh")
    assert code == 0, log
    return json.loads(log.split("REPOGYM_RESULT=")[1].splitlines()[0])


def grade_with(container, files: dict[str, bytes], *args: str) -> dict:
    """The grader's result, run as the exported scripts run it, from ``files`` in /grading."""
    container.put_archive("/", tar_of({f"grading/{k}": v for k, v in files.items()}))
    code, log = sh(container, "python3 -I -S /grading/grader.py --spec /grading/spec.json "
                              "--plugin /grading/repogym_report.py --out /tmp/rg-out "
                              + " ".join(args))
    assert code == 0, log
    return json.loads(log.split("REPOGYM_RESULT=")[1].splitlines()[0])


def test_a_hanging_test_fails_at_its_limit(real_tasks, instances, container_factory):
    row = real_tasks.synthetic
    inst = instances[row.instance_id]
    limits = row.time_limits
    assert limits is not None and all(s < 30 for s in limits.tests.values())  # the judge's
    hanging = "tests/test_units.py::test_freezing"
    container = container_factory(inst["image_name"])
    for source in (HANG_SOFT, HANG_HARD):  # interrupted at its limit / killed with the run
        result = eval_in(container, inst, unified_diff("tinycalc/units.py", BROKEN_UNITS,
                                                       source))
        assert result["reward"] == 0 and result["outcomes"][hanging] == "failed", result
        assert any(p.startswith(hanging) and "timed out" in p for p in result["problems"])
        # binary grading stops at the first test that does not pass: never ran
        assert result["outcomes"]["tests/test_units.py::test_boiling"] is None
    wanted = len(row.FAIL_TO_PASS) + len(row.PASS_TO_PASS)
    container.put_archive("/", tar_of({"tmp/hang.diff": unified_diff(
        "tinycalc/units.py", BROKEN_UNITS, HANG_HARD).encode()}))
    result = grade_with(container, grading_files(row), "--partial", "--patch /tmp/hang.diff")
    assert result["reward"] == pytest.approx((wanted - 1) / wanted), result  # the rest ran
    assert result["outcomes"]["tests/test_units.py::test_boiling"] == "passed"


def test_a_pytest_toml_plugin_does_not_score(real_tasks, instances, container_factory):
    row = real_tasks.synthetic
    inst = instances[row.instance_id]
    container = container_factory(inst["image_name"])
    hacked = eval_in(container, inst, HACK)
    assert hacked["reward"] == 0 and "pytest.toml" in hacked["discarded"], hacked
    assert eval_in(container, inst, inst["patch"])["reward"] == 1
    assert eval_in(container, inst, inst["patch"] + HACK)["reward"] == 1
    # Harbor style, the discard rule off: the solver commits the hack in /repo; the hack
    # works for a plain pytest run, but the grader's launcher reads no pytest.toml
    files = grading_files(row)
    spec = json.loads(files[SPEC_FILE])
    spec["runner_config"] = [n for n in spec["runner_config"] if not n.endswith("pytest.toml")]
    files[SPEC_FILE] = json.dumps(spec).encode()
    container.put_archive("/tmp", tar_of({"pytest.toml": HACK_TOML.encode(),
                                          "hackmod.py": HACK_MODULE.encode()}))
    code, log = sh(container, "set -e; cd /repo; git reset -q --hard; git clean -qfd; "
                              "cp /tmp/pytest.toml /tmp/hackmod.py .; git add -A; "
                              "git -c user.name=a -c user.email=a@b commit -qm hack; "
                              "PYTHONDONTWRITEBYTECODE=1 python -m pytest -q "
                              "-p no:cacheprovider tests/test_units.py", user="repogym")
    assert code == 0 and "2 passed" in log, log  # the hack is real
    result = grade_with(container, files)
    assert result["reward"] == 0 and "pytest.toml" not in result["discarded"], result
    assert stopped_at_a_failure(result, row.FAIL_TO_PASS)
