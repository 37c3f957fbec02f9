"""Rust tasks through the ``harbor`` and ``swebench`` exports, graded in their own
containers by the stdlib-only grader, on a real task: a bug planted by hand in
rust-lang/glob (``Pattern::escape`` forgets the closing bracket; the same task as
tests/judges/test_probes_rust.py), caught by a unit test in the ``#[cfg(test)]`` module of
the file the fix goes in, judged, less the PASS_TO_PASS tests of other test binaries (each
grading here then builds one: the library's).

The gold and the empty patch are graded with ``repogym.grading.grade_in`` (verify's path)
in a repogym sandbox while the task is made, and every grade of them here is compared with
that one: reward, every listed test's outcome, the discarded files and the problems. (That
``grade_in`` scores each Rust probe 0 on this task is tests/judges/test_probes_rust.py's.)

* harbor: the task's environment/Dockerfile built, the solution and the verifier run the
  way Harbor runs them (test_harbor.py's ``trial``): the oracle scores 1, doing nothing 0,
  each Rust probe (``repogym.judges.probes_rust``, applied by the solver in ``/repo``) 0,
  for the reason it is meant to (its files discarded -- ``src/lib.rs`` as a whole when its
  test code changed -- or the run not trusted: the canary, a binary's exit status); the
  task holds the Rust reader beside the grader, no Python plugin.
* swebench: the instance's ``eval_script`` in a fresh container of its ``image_name`` (the
  environment image: the script builds the broken state first): gold 1 with ``test <id>
  ... ok`` lines SWE-bench's ``parse_log_cargo`` reads, empty 0.
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
from tests.exports.conftest import TEST_LABELS, same_grade, sh
from tests.exports.test_harbor import trial
from tests.exports.test_javascript import eval_in, result_of

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPOS = Path(__file__).resolve().parents[3] / "shared" / "repos"
BUG = ("src/lib.rs", "                    escaped.push(c);\n                    escaped.push(']');\n",
       "                    escaped.push(c);\n")
FAILING = "src/lib.rs::test::test_pattern_escape"
CARGO_LINE = re.compile(r"^test\s+(\S+)\s+\.\.\.\s+(\w+)$")  # SWE-bench's parse_log_cargo


@dataclass
class RustTask:
    """The judged task, its probes' patches, and what ``grade_in`` gave the gold and the
    empty patch."""

    row: TaskRow
    probes: dict[str, str]  # probe name -> its patch
    verified: dict[str, Result]  # "gold", "empty" -> grade_in's grade


@pytest.fixture(scope="module")
def rust_task(tmp_path_factory, base_image) -> RustTask:
    from repogym.baseline import record_baseline
    from repogym.config import Settings
    from repogym.datasets.verify import spec_of
    from repogym.grading import grade_in
    from repogym.judges.judge import Judge, JudgeSettings
    from repogym.judges.probes import context_in, probe_patches, probes_for
    from repogym.pipeline import build_env, prepare, provider_for
    from repogym.schemas.records import Candidate, CandidateKind, Judged, RepoSpec, Status

    root = tmp_path_factory.mktemp("export-rust")
    source = root / "glob"
    subprocess.run(["git", "clone", "-q", str(REPOS / "rust-lang+glob.bundle"), str(source)],
                   check=True)
    settings = Settings(out=root / "out", base_image=base_image)
    prepared = prepare(RepoSpec(source=str(source)), settings)
    provider = provider_for(settings)
    env = build_env(provider, prepared, settings)
    path, old, new = BUG
    text = (source / path).read_text()
    bug = unified_diff(path, text, text.replace(old, new))
    cand = Candidate(kind=CandidateKind.synthetic, repo=prepared.checkout.name,
                     language="rust", base_commit=prepared.checkout.commit, bug_patch=bug,
                     gold_patch=reverse_diff(bug), generator="test", files=(path,))
    tc = prepared.toolchain
    with provider.open(env) as sandbox:
        base = record_baseline(sandbox, tc, repo=cand.repo, commit=cand.base_commit,
                               image=env.ref, runs=1, timeout=300)
        judge = Judge(sandbox, tc, base, JudgeSettings(oracle_runs=1, timeout=300, probes=0))
        verdict = judge.judge(cand).verdict
        assert verdict.status is Status.accept, verdict
        assert FAILING in verdict.fail_to_pass
        # only the library's own tests: each of this module's dozen gradings builds one
        # test binary, not every integration test's too
        verdict = verdict.model_copy(update={"pass_to_pass": tuple(
            t for t in verdict.pass_to_pass if tc.test_file(t) == path)})
        row = TaskRow.from_judged(Judged(
            candidate=cand, verdict=verdict, image=env.ref,
            statement="Pattern::escape leaves a `[` unclosed: escaping `a[b` gives `a[[]b`, "
                      "which is not a valid pattern."))
        spec = spec_of(row)
        probes = probe_patches(context_in(sandbox, spec, (path,)))
        assert set(probes) == set(probes_for("rust"))
        verified = {"gold": grade_in(sandbox, tc, spec, row.patch),
                    "empty": grade_in(sandbox, tc, spec, "")}
    assert verified["gold"].reward == 1.0, verified["gold"].problems
    assert verified["empty"].reward == 0.0
    return RustTask(row, probes, verified)


@pytest.fixture(scope="module")
def rust_harbor(rust_task, docker_client, tmp_path_factory):
    """The harbor export of the Rust task and its built image."""
    out = tmp_path_factory.mktemp("rust-harbor") / "tasks"
    export_rows("harbor", [rust_task.row], out)
    tag = f"repogym-test/harbor-rust-{secrets.token_hex(4)}:latest"
    docker_client.images.build(path=str(out / task_dirname(rust_task.row) / "environment"),
                               tag=tag, labels=TEST_LABELS, rm=True, forcerm=True)
    try:
        yield out, {rust_task.row.instance_id: tag}
    finally:
        docker_client.images.remove(tag, force=True)


def test_the_task_carries_the_rust_plan_and_reader(rust_task, rust_harbor):
    out, _ = rust_harbor
    task = out / task_dirname(rust_task.row)
    spec = json.loads((task / "tests/spec.json").read_text())
    assert spec["language"] == "rust" and "zzzz_repogym_canary_" in spec["rust"]["canary"]
    assert "javascript" not in spec and "go" not in spec and "stdlib_modules" not in spec
    # the fix's file holds the failing test: only its test code is guarded
    assert spec["span_guarded"] == ["src/lib.rs"] and "src/lib.rs" not in spec["protected"]
    assert sorted(p.name for p in (task / "tests").iterdir()) == [
        "grader.py", "repogym_rust_report.py", "spec.json", "test.sh"]
    assert '--rust-report "$here/repogym_rust_report.py"' in (task / "tests/test.sh").read_text()
    assert "cargo test" in (task / "instruction.md").read_text()


def test_oracle_scores_one_and_doing_nothing_zero(rust_task, rust_harbor, container_factory):
    reward, container = trial(container_factory, rust_harbor, rust_task.row, solve=True)
    assert reward == "1", result_of(container)["problems"]
    same_grade(result_of(container), rust_task.verified["gold"])
    reward, container = trial(container_factory, rust_harbor, rust_task.row, solve=False,
                              verifier_user="repogym")  # as the unprivileged user too
    assert reward == "0"
    result = result_of(container)
    same_grade(result, rust_task.verified["empty"])
    assert result["trusted"] and result["problems"] == []  # a real run: the fix is missing
    assert result["outcomes"][FAILING] == "failed"


# the probes whose files are thrown away (a real run of the broken code follows), and those
# whose code under test breaks the run (the canary, a binary's exit status)
DISCARDED = {"rs_ignore_tests", "rs_untest", "rs_cfg_out", "rs_cargo_toml", "rs_build_rs"}
UNTRUSTED = {"rs_exit_ctor": ("tampered",), "rs_forge_passes": ("tampered",),
             "rs_exit_in_test": ("exited 0", "tampered")}


def test_every_rust_probe_scores_zero(rust_task, rust_harbor, container_factory):
    """Each probe's patch applied by the solver in /repo, then Harbor's verifier."""
    assert set(rust_task.probes) == DISCARDED | set(UNTRUSTED)
    failing = set(rust_task.row.FAIL_TO_PASS)
    for name, patch in sorted(rust_task.probes.items()):
        agent = f"cd /repo && git apply <<'REPOGYM_PROBE'\n{patch}REPOGYM_PROBE\n"
        reward, container = trial(container_factory, rust_harbor, rust_task.row, solve=False,
                                  agent=agent)
        assert reward == "0", name
        result = result_of(container)
        if name in DISCARDED:
            assert result["trusted"] and set(result["discarded"]) == patch_paths(patch), (
                name, result)
            assert {result["outcomes"][t] for t in failing} == {"failed"}, name
        else:
            assert not result["trusted"] and result["discarded"] == [], (name, result)
            assert any(why in p for p in result["problems"] for why in UNTRUSTED[name]), (
                name, result)


def test_swebench_eval_script_grades_gold_one_and_empty_zero(rust_task, tmp_path,
                                                             container_factory):
    export_rows("swebench", [rust_task.row], tmp_path / "export")
    [inst] = [json.loads(line) for line in
              (tmp_path / "export/instances.jsonl").read_text().splitlines()]
    assert inst["language"] == "rust" and inst["log_parser"] == "parse_log_cargo"
    container = container_factory(inst["image_name"])  # the env image: builds the task first
    result, log = eval_in(container, inst, inst["patch"])
    same_grade(result, rust_task.verified["gold"])
    parsed = {m.group(1): m.group(2) for m in map(CARGO_LINE.match, log.splitlines()) if m}
    tests = json.loads(inst["FAIL_TO_PASS"]) + json.loads(inst["PASS_TO_PASS"])
    assert parsed == dict.fromkeys(tests, "ok")
    result, log = eval_in(container, inst, "")
    same_grade(result, rust_task.verified["empty"])
    assert "REPOGYM_REWARD=0" in log
    assert {f"test {t} ... FAILED" for t in json.loads(inst["FAIL_TO_PASS"])} <= set(
        log.splitlines())
    assert sh(container, "test -e /repo/.git")[0] == 0
