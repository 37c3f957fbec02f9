"""Java tasks through the ``harbor`` and ``swebench`` exports, graded in their own
containers by the stdlib-only grader with the Java toolchain's own run
(``repogym_maven.py``: its plan, script and reading), on a real task: a bug planted by
hand in apache/commons-cli (``Option.hashCode`` forgets the short option), judged, less
the PASS_TO_PASS tests of other test classes (a Maven run costs the same whatever it
selects, about 15 s here; fewer tests keep each part's report small).

The gold and the empty patch are graded with ``repogym.grading.grade_in`` (verify's path)
in a repogym sandbox while the task is made, and every grade of them here is compared with
that one: reward, every listed test's outcome, the discarded files and the problems.

* harbor: the task's environment/Dockerfile built, the solution and the verifier run the
  way Harbor runs them (test_harbor.py's ``trial``): the oracle scores 1, doing nothing 0,
  and three Java probes (``repogym.judges.probes_java``, applied by the solver in
  ``/repo``) 0, one of each kind: a POM change (discarded), a test JVM that exits from a
  static initializer (no report vouches for the failing test), reports rewritten after
  Surefire wrote them (the extension's digests: tamper). Every probe scoring 0 through
  ``grade_in`` is the judge's own test's; a Java grading costs ~15 s.
* swebench: the instance's ``eval_script`` in a fresh container of its ``image_name``: gold
  1 with ``[PASSED] <id>`` lines (SWE-bench's ``parse_log_jest_json`` reads them whole).
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
from tests.exports.conftest import TEST_LABELS, same_grade
from tests.exports.test_harbor import trial
from tests.exports.test_javascript import eval_in, result_of

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPOS = Path(__file__).resolve().parents[3] / "shared" / "repos"
CLI = "src/test/java/org/apache/commons/cli"
BUG = ("src/main/java/org/apache/commons/cli/Option.java",
       "return Objects.hash(longOption, option);", "return Objects.hash(longOption);")
FAILING = f"{CLI}/OptionTest.java::OptionTest#testHashCode"
JEST_LINE = re.compile(r"^\[(PASSED|FAILED)\] (.+)$")  # the lines parse_log_jest_json reads
PROBES = ("java_surefire_excludes", "java_exit_static_init", "java_rewrite_reports")


@dataclass
class JavaTask:
    """The judged task, its probes' patches, and what ``grade_in`` gave the gold and the
    empty patch."""

    row: TaskRow
    probes: dict[str, str]  # probe name -> its patch
    verified: dict[str, Result]  # "gold", "empty" -> grade_in's grade


@pytest.fixture(scope="module")
def java_task(tmp_path_factory, base_image) -> JavaTask:
    from repogym.baseline import record_baseline
    from repogym.config import Settings
    from repogym.datasets.verify import spec_of
    from repogym.grading import grade_in
    from repogym.judges.judge import Judge, JudgeSettings
    from repogym.judges.probes import context_in, probe_patches
    from repogym.pipeline import build_env, prepare, provider_for
    from repogym.schemas.records import Candidate, CandidateKind, Judged, RepoSpec, Status

    root = tmp_path_factory.mktemp("export-java")
    source = root / "commons-cli"
    subprocess.run(["git", "clone", "-q", str(REPOS / "apache+commons-cli.bundle"),
                    str(source)], check=True)
    settings = Settings(out=root / "out", base_image=base_image)
    prepared = prepare(RepoSpec(source=str(source)), settings)
    provider = provider_for(settings)
    env = build_env(provider, prepared, settings)
    path, old, new = BUG
    text = (source / path).read_text()
    assert text.count(old) == 1
    bug = unified_diff(path, text, text.replace(old, new))
    cand = Candidate(kind=CandidateKind.synthetic, repo=prepared.checkout.name,
                     language="java", base_commit=prepared.checkout.commit, bug_patch=bug,
                     gold_patch=reverse_diff(bug), generator="test", files=(path,))
    tc = prepared.toolchain
    with provider.open(env) as sandbox:
        base = record_baseline(sandbox, tc, repo=cand.repo, commit=cand.base_commit,
                               image=env.ref, runs=1, timeout=600)
        judge = Judge(sandbox, tc, base, JudgeSettings(oracle_runs=1, timeout=600, probes=0))
        verdict = judge.judge(cand).verdict
        assert verdict.status is Status.accept, verdict
        assert FAILING in verdict.fail_to_pass
        verdict = verdict.model_copy(update={"pass_to_pass": tuple(
            t for t in verdict.pass_to_pass if tc.test_file(t) == tc.test_file(FAILING))})
        row = TaskRow.from_judged(Judged(
            candidate=cand, verdict=verdict, image=env.ref,
            statement="Two options with the same long name but different short names have "
                      "the same hashCode(), although they are not equal()."))
        spec = spec_of(row)
        patches = probe_patches(context_in(sandbox, spec, (path,)))
        verified = {"gold": grade_in(sandbox, tc, spec, row.patch),
                    "empty": grade_in(sandbox, tc, spec, "")}
    assert verified["gold"].reward == 1.0, verified["gold"].problems
    assert verified["empty"].reward == 0.0
    return JavaTask(row, {name: patches[name] for name in PROBES}, verified)


@pytest.fixture(scope="module")
def java_harbor(java_task, docker_client, tmp_path_factory):
    """The harbor export of the Java task and its built image."""
    out = tmp_path_factory.mktemp("java-harbor") / "tasks"
    export_rows("harbor", [java_task.row], out)
    tag = f"repogym-test/harbor-java-{secrets.token_hex(4)}:latest"
    docker_client.images.build(path=str(out / task_dirname(java_task.row) / "environment"),
                               tag=tag, labels=TEST_LABELS, rm=True, forcerm=True)
    try:
        yield out, {java_task.row.instance_id: tag}
    finally:
        docker_client.images.remove(tag, force=True)


def test_the_task_carries_the_java_plan_and_the_maven_run(java_task, java_harbor):
    out, _ = java_harbor
    task = out / task_dirname(java_task.row)
    spec = json.loads((task / "tests/spec.json").read_text())
    assert spec["language"] == "java" and spec["java"]["protection"]["test_dirs"] == [".mvn"]
    assert "rust" not in spec and "span_guarded" not in spec and "stdlib_modules" not in spec
    assert sorted(p.name for p in (task / "tests").iterdir()) == [
        "grader.py", "repogym_maven.py", "spec.json", "test.sh"]
    assert '--maven "$here/repogym_maven.py"' in (task / "tests/test.sh").read_text()
    assert "mvn -o" in (task / "instruction.md").read_text()


def test_oracle_scores_one_and_doing_nothing_zero(java_task, java_harbor, container_factory):
    reward, container = trial(container_factory, java_harbor, java_task.row, solve=True)
    assert reward == "1", result_of(container)["problems"]
    same_grade(result_of(container), java_task.verified["gold"])
    reward, container = trial(container_factory, java_harbor, java_task.row, solve=False,
                              verifier_user="repogym")  # as the unprivileged user too
    assert reward == "0"
    result = result_of(container)
    same_grade(result, java_task.verified["empty"])
    assert result["trusted"] and result["problems"] == []  # a real run: the fix is missing
    assert result["outcomes"][FAILING] == "failed"


def test_three_java_probes_score_zero(java_task, java_harbor, container_factory):
    """Each probe's patch applied by the solver in /repo, then Harbor's verifier."""
    for name, patch in sorted(java_task.probes.items()):
        agent = f"cd /repo && git apply <<'REPOGYM_PROBE'\n{patch}REPOGYM_PROBE\n"
        reward, container = trial(container_factory, java_harbor, java_task.row, solve=False,
                                  agent=agent)
        assert reward == "0", name
        result = result_of(container)
        if name == "java_surefire_excludes":  # the POM is thrown away: a real run follows
            assert result["trusted"] and set(result["discarded"]) == patch_paths(patch)
            assert result["outcomes"][FAILING] == "failed", result
        elif name == "java_rewrite_reports":  # a report changed after Surefire wrote it
            assert not result["trusted"], result
            assert any("tampered" in p for p in result["problems"]), result
        else:  # the test JVM exits: nothing vouches for a pass of the failing test
            assert result["outcomes"][FAILING] != "passed", result


def test_swebench_eval_script_grades_gold_one(java_task, tmp_path, container_factory):
    """The gold patch only (doing nothing scores 0 through the same grader above)."""
    export_rows("swebench", [java_task.row], tmp_path / "export")
    [inst] = [json.loads(line) for line in
              (tmp_path / "export/instances.jsonl").read_text().splitlines()]
    assert inst["language"] == "java" and inst["log_parser"] == "parse_log_jest_json"
    container = container_factory(inst["image_name"])  # the env image: builds the task first
    result, log = eval_in(container, inst, inst["patch"])
    same_grade(result, java_task.verified["gold"])
    parsed = {m.group(2): m.group(1) for m in map(JEST_LINE.match, log.splitlines()) if m}
    tests = json.loads(inst["FAIL_TO_PASS"]) + json.loads(inst["PASS_TO_PASS"])
    assert parsed == dict.fromkeys(tests, "PASSED")
