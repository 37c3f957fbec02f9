"""Go tasks through the ``harbor`` and ``swebench`` exports, graded in their own containers
by the stdlib-only grader, on a real task: a bug planted by hand in google/uuid (the
version nibble of random UUIDs; the same task as tests/judges/test_probes_go.py), judged,
less its PASS_TO_PASS tests that take seconds (every grading here runs the rest).

The gold and the empty patch are graded with ``repogym.grading.grade_in`` (verify's path)
in a repogym sandbox while the task is made, and every grade of them here is compared with
that one: reward, every listed test's outcome, the discarded files and the problems. (That
``grade_in`` scores each Go probe 0 on this task is tests/judges/test_probes_go.py's.)

* harbor: the task's environment/Dockerfile built, the solution and the verifier run the
  way Harbor runs them (test_harbor.py's ``trial``): the oracle scores 1, doing nothing 0,
  each Go probe (``repogym.judges.probes_go``, applied by the solver in ``/repo``) 0, for
  the reason it is meant to (its files discarded, or the run not trusted: the canary); the
  task holds the Go reader beside the grader, no Python plugin.
* swebench: the instance's ``eval_script`` in a fresh container of its ``image_name`` (the
  environment image: the script builds the broken state first): gold 1 with ``--- PASS``
  lines SWE-bench's ``parse_log_gotest`` reads, empty 0.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from repogym.datasets.exports import export_rows
from repogym.datasets.exports.harbor import task_dirname
from repogym.grading import Result
from repogym.patches import patch_paths, reverse_diff, unified_diff
from repogym.schemas.arrow import TaskRow
from repogym.toolchains.go import split_id
from tests.exports.conftest import TEST_LABELS, same_grade, sh
from tests.exports.test_harbor import trial
from tests.exports.test_javascript import eval_in, result_of

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPOS = Path(__file__).resolve().parents[3] / "shared" / "repos"
BUG = ("version4.go", "uuid[6] = (uuid[6] & 0x0f) | 0x40", "uuid[6] = (uuid[6] & 0x0f) | 0x50")
SLOW = 0.5  # seconds: a P2P test slower than this is left out of the task
GOTEST_LINE = re.compile(r"^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$")  # SWE-bench's parse_log_gotest


@dataclass
class GoTask:
    """The judged task, its probes' patches, and what ``grade_in`` gave the gold and the
    empty patch."""

    row: TaskRow
    probes: dict[str, str]  # probe name -> its patch
    verified: dict[str, Result]  # "gold", "empty" -> grade_in's grade


@pytest.fixture(scope="module")
def go_task(tmp_path_factory, base_image) -> GoTask:
    from repogym.baseline import record_baseline
    from repogym.config import Settings
    from repogym.datasets.verify import spec_of
    from repogym.grading import grade_in
    from repogym.judges.judge import Judge, JudgeSettings
    from repogym.judges.probes import context_in, probe_patches, probes_for
    from repogym.pipeline import build_env, prepare, provider_for
    from repogym.schemas.records import (
        Candidate,
        CandidateKind,
        Judged,
        RepoSpec,
        Status,
    )

    root = tmp_path_factory.mktemp("export-go")
    source = root / "uuid"
    subprocess.run(["git", "clone", "-q", str(REPOS / "google+uuid.bundle"), str(source)],
                   check=True)
    settings = Settings(out=root / "out", base_image=base_image)
    prepared = prepare(RepoSpec(source=str(source)), settings)
    provider = provider_for(settings)
    env = build_env(provider, prepared, settings)
    path, old, new = BUG
    text = (source / path).read_text()
    bug = unified_diff(path, text, text.replace(old, new))
    cand = Candidate(kind=CandidateKind.synthetic, repo=prepared.checkout.name, language="go",
                     base_commit=prepared.checkout.commit, bug_patch=bug,
                     gold_patch=reverse_diff(bug), generator="test", files=(path,))
    tc = prepared.toolchain
    with provider.open(env) as sandbox:
        base = record_baseline(sandbox, tc, repo=cand.repo, commit=cand.base_commit,
                               image=env.ref, runs=1, timeout=300)
        judge = Judge(sandbox, tc, base, JudgeSettings(oracle_runs=1, timeout=300, probes=0))
        verdict = judge.judge(cand).verdict
        assert verdict.status is Status.accept, verdict
        # without the tests that take seconds (a Go selection runs a subtest's parent whole):
        # each of this module's dozen gradings runs what is left
        slow = {split_id(t)[:2] for t, d in base.durations.items() if d > SLOW}
        verdict = verdict.model_copy(update={"pass_to_pass": tuple(
            t for t in verdict.pass_to_pass if split_id(t)[:2] not in slow)})
        row = TaskRow.from_judged(Judged(
            candidate=cand, verdict=verdict, image=env.ref,
            statement="uuid.New() returns UUIDs whose version is 5, not 4."))
        spec = spec_of(row)
        probes = probe_patches(context_in(sandbox, spec, (path,)))
        assert set(probes) == set(probes_for("go"))
        verified = {"gold": grade_in(sandbox, tc, spec, row.patch),
                    "empty": grade_in(sandbox, tc, spec, "")}
    assert verified["gold"].reward == 1.0, verified["gold"].problems
    assert verified["empty"].reward == 0.0
    return GoTask(row, probes, verified)


@pytest.fixture(scope="module")
def go_harbor(go_task, docker_client, tmp_path_factory):
    """The harbor export of the Go task and its built image."""
    out = tmp_path_factory.mktemp("go-harbor") / "tasks"
    export_rows("harbor", [go_task.row], out)
    tag = f"repogym-test/harbor-go-{secrets.token_hex(4)}:latest"
    docker_client.images.build(path=str(out / task_dirname(go_task.row) / "environment"),
                               tag=tag, labels=TEST_LABELS, rm=True, forcerm=True)
    try:
        yield out, {go_task.row.instance_id: tag}
    finally:
        docker_client.images.remove(tag, force=True)


def test_the_task_carries_the_go_plan_and_reader(go_task, go_harbor):
    out, _ = go_harbor
    task = out / task_dirname(go_task.row)
    spec = json.loads((task / "tests/spec.json").read_text())
    assert spec["language"] == "go" and "TestRepogymCanary" in spec["go"]["canary"]
    assert "javascript" not in spec and "stdlib_modules" not in spec
    assert sorted(p.name for p in (task / "tests").iterdir()) == [
        "grader.py", "repogym_go_report.py", "spec.json", "test.sh"]
    assert '--go-report "$here/repogym_go_report.py"' in (task / "tests/test.sh").read_text()
    assert "go test" in (task / "instruction.md").read_text()


def test_oracle_scores_one_and_doing_nothing_zero(go_task, go_harbor, container_factory):
    reward, container = trial(container_factory, go_harbor, go_task.row, solve=True)
    assert reward == "1", result_of(container)["problems"]
    same_grade(result_of(container), go_task.verified["gold"])
    reward, container = trial(container_factory, go_harbor, go_task.row, solve=False,
                              verifier_user="repogym")  # as the unprivileged user too
    assert reward == "0"
    result = result_of(container)
    same_grade(result, go_task.verified["empty"])
    assert result["trusted"] and result["problems"] == []  # a real run: the fix is missing
    assert "failed" in set(result["outcomes"].values())


# the probes that change protected files (thrown away: a real run of the broken code), and
# those whose code under test breaks the run (the canary, the binaries' exit status)
DISCARDED = {"go_delete_tests", "go_skip_tests", "go_build_tag", "go_testmain", "go_go_mod"}
UNTRUSTED = {"go_exit_init": "tampered", "go_forge_passes": "tampered",
             "go_exit_in_test": "exited 0"}
RACING = {"go_exit_in_test"}  # exits 50 ms after start: this task's tests may be done by then


def test_every_go_probe_scores_zero(go_task, go_harbor, container_factory):
    """Each probe's patch applied by the solver in /repo, then Harbor's verifier."""
    assert set(go_task.probes) == DISCARDED | set(UNTRUSTED)
    failing = set(go_task.row.FAIL_TO_PASS)
    for name, patch in sorted(go_task.probes.items()):
        agent = f"cd /repo && git apply <<'REPOGYM_PROBE'\n{patch}REPOGYM_PROBE\n"
        reward, container = trial(container_factory, go_harbor, go_task.row, solve=False,
                                  agent=agent)
        assert reward == "0", name
        result = result_of(container)
        touched = patch_paths(patch)
        if name in DISCARDED or (name in RACING and result["trusted"]):
            assert result["trusted"] and set(result["discarded"]) == (
                touched if name in DISCARDED else set()), (name, result)
            assert {result["outcomes"][t] for t in failing} == {"failed"}, name
        else:
            assert not result["trusted"] and result["discarded"] == [], (name, result)
            assert any(UNTRUSTED[name] in p for p in result["problems"]), (name, result)


def test_swebench_eval_script_grades_gold_one_and_empty_zero(go_task, tmp_path,
                                                             container_factory):
    export_rows("swebench", [go_task.row], tmp_path / "export")
    [inst] = [json.loads(line) for line in
              (tmp_path / "export/instances.jsonl").read_text().splitlines()]
    assert inst["language"] == "go" and inst["log_parser"] == "parse_log_gotest"
    container = container_factory(inst["image_name"])  # the env image: builds the task first
    result, log = eval_in(container, inst, inst["patch"])
    same_grade(result, go_task.verified["gold"])
    parsed = {m.group(2): m.group(1) for m in map(GOTEST_LINE.match, log.splitlines()) if m}
    tests = json.loads(inst["FAIL_TO_PASS"]) + json.loads(inst["PASS_TO_PASS"])
    assert parsed == dict.fromkeys(tests, "PASS")
    result, log = eval_in(container, inst, "")
    same_grade(result, go_task.verified["empty"])
    assert "REPOGYM_REWARD=0" in log
    assert {f"--- FAIL: {t} (0.00s)" for t in json.loads(inst["FAIL_TO_PASS"])} <= set(
        log.splitlines())
    assert sh(container, "test -e /repo/.git")[0] == 0
