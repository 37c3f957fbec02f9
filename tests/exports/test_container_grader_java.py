"""The in-container grader's Java rules agree with repogym's Java toolchain (no Docker; the
real containers are in test_java.py). The run itself -- plan, script, reading -- is one
module, ``repogym_maven.py``, which the toolchain and the grader both run; what is checked
here is what the grader adds around it:

* protection (``JavaToolchain.is_protected`` and ``verify``'s exact paths);
* the limits it hands the plan (the spec's ``time_limits`` give the script the toolchain
  makes from the same ``TimeLimits``), the sources and POMs it lists, the packages it
  finds;
* the module loaded by path, as the grader loads it, reads a run as the toolchain does;
* the spec, the grading files and the command line, the SWE-bench lines, and the exports
  of Java rows (no Docker: a Java plan needs none).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from repogym.datasets.exports import container_grader as grader
from repogym.datasets.exports import export_rows
from repogym.datasets.exports.grading import (
    MAVEN_FILE,
    PYTHON_FIELDS,
    SPEC_FILE,
    ContainerSpec,
    JavaPlan,
    grader_args,
    grading_files,
    java_plan,
    plugin_source,
    rust_plan,
)
from repogym.datasets.verify import spec_of
from repogym.errors import InputError
from repogym.grading import protected_paths as verify_protected
from repogym.layout import REPO_DIR
from repogym.patches import unified_diff
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Candidate, CandidateKind, Judged, TimeLimits, Verdict
from repogym.toolchains.java import JavaToolchain, plan
from repogym.toolchains.java import export as java_export
from repogym.toolchains.java.report import Namer, parse_run
from repogym.toolchains.plugins import repogym_maven
from tests.conftest import commit_files

TC = JavaToolchain()
N = "0123456789abcdef" * 2
MAVEN = grader.load_reader(str(Path(repogym_maven.__file__)), "repogym_maven")
CLI = "src/test/java/org/x/FooTest.java"
SRC = "package org.x;\n\npublic class Foo {\n    int add(int a, int b) { return a + b; }\n}\n"


def _java_row(i: int = 0) -> TaskRow:
    bug = unified_diff("src/main/java/org/x/Foo.java", SRC, SRC.replace("a + b", "a - b"))
    cand = Candidate(kind=CandidateKind.synthetic, repo="acme__foo", language="java",
                     base_commit=(f"{i:x}" * 40)[:40], bug_patch=bug,
                     gold_patch=unified_diff("src/main/java/org/x/Foo.java",
                                             SRC.replace("a + b", "a - b"), SRC),
                     generator="procedural", mutator="java_swap",
                     files=("src/main/java/org/x/Foo.java",))
    verdict = Verdict(instance_id=cand.instance_id, status="accept",
                      fail_to_pass=(f"{CLI}::FooTest#adds",),
                      pass_to_pass=(f"{CLI}::FooTest#param(String)[2]",
                                    "core/src/test/java/org/y/BazTest.java::BazTest#x y"),
                      evidence={}, seconds=1.0)
    return TaskRow.from_judged(Judged(candidate=cand, verdict=verdict,
                                      statement="add subtracts", image="repogym-env/foo:1"))


def _spec(row: TaskRow | None = None) -> dict[str, Any]:
    return json.loads(ContainerSpec.of(row or _java_row()).to_json())


def test_the_maven_run_imports_only_the_stdlib():
    tree = ast.parse(Path(repogym_maven.__file__).read_text(encoding="utf-8"))
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
             for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree)
              if isinstance(n, ast.ImportFrom) and n.module}
    assert names - {"__future__"} <= set(sys.stdlib_module_names), names


def test_constants_match_the_export():
    assert grader.MAVEN_FILE == MAVEN_FILE
    assert plugin_source(MAVEN_FILE) == Path(repogym_maven.__file__).read_bytes()
    assert set(grader.JAVA_PLAN_REQUIRED) == set(JavaPlan.model_fields)
    assert JavaPlan.model_validate(java_export.grading_plan()) == java_plan()
    assert repogym_maven.REPO_DIR == REPO_DIR


PATHS = [
    CLI, "core/src/test/resources/data.txt", "src/it/simple/pom.xml", "src/test", "src/it",
    "src/main/java/org/x/Foo.java", "pom.xml", "core/pom.xml", "pom.xml.bak", "xpom.xml",
    ".mvn/maven.config", ".mvn/extensions.xml", ".mvn/wrapper/maven-wrapper.properties",
    "a/.mvn/x", ".mvn", "mvnw", "mvnw.cmd", "build.gradle", "sub/settings.gradle.kts",
    "gradlew", "gradle.properties", "src/testing/x.java", "xsrc/test/a.java",
    "src/main/resources/junit-platform.properties", "README.md", "pom.xml\n",
]


@pytest.mark.parametrize("added", [False, True], ids=["modified", "added"])
@pytest.mark.parametrize("path", PATHS)
def test_is_protected_matches_the_toolchain_and_verify(path, added):
    rules = java_export.protection_rules()
    assert grader.protected_by_rules(path, rules) == TC.is_protected(path, added=added)
    row = _java_row()
    expected = path in verify_protected(spec_of(row)) or TC.is_protected(path, added=added)
    assert grader.is_protected(path, _spec(row), added) == expected


LIMITS = [TimeLimits(), TimeLimits(tests={f"{CLI}::FooTest#adds": 3.0}, default=2.0, run=100.0),
          TimeLimits(run=50.0), TimeLimits(default=1.0, grace=4.0, run=1000.0)]


@pytest.mark.parametrize("limits", LIMITS, ids=["none", "per-test", "no-default", "capped"])
def test_the_limits_make_the_toolchains_script(limits):
    select = [f"{CLI}::FooTest#adds", f"{CLI}::FooTest#param(String)[2]",
              "core/src/test/java/org/y/BazTest.java::BazTest#x"]
    poms, packages = {"pom.xml", "core/pom.xml"}, {CLI: "org.x"}
    theirs = plan(select, [f"{CLI}::FooTest#old"], limits, nonce=N, scratch="/var/tmp/s",
                  poms=poms, packages=packages, canary=True)
    spec_limits = json.loads(limits.model_dump_json())
    ours = MAVEN.plan(select, [f"{CLI}::FooTest#old"],
                      grader.JavaLimits(spec_limits, limits.run), nonce=N,
                      scratch="/var/tmp/s", poms=poms, packages=packages, canary=True)
    assert ours.script() == theirs.script()
    assert ours.command("/var/tmp/r.sh") == theirs.command("/var/tmp/r.sh")
    assert ours.collect_command() == theirs.collect_command()


def test_sources_poms_and_packages_as_the_toolchain_finds_them(tmp_path):
    files = {"pom.xml": "<project/>", "core/pom.xml": "<project/>", CLI: "package org.x;",
             "core/src/test/java/org/y/BazTest.java": "package org.y;",
             "src/it/Odd.java": "  package odd.pkg ;\n", "README.md": "x"}
    commit_files(tmp_path, files)
    (tmp_path / "New.java").write_text("package fresh;\n")  # untracked, not ignored
    sources, poms = grader.java_listing(str(tmp_path))
    assert poms == {"pom.xml", "core/pom.xml"}
    assert sources == {CLI, "core/src/test/java/org/y/BazTest.java", "src/it/Odd.java",
                       "New.java"}
    assert grader.java_packages(MAVEN, str(tmp_path), sources) == {
        CLI: "org.x", "core/src/test/java/org/y/BazTest.java": "org.y",
        "src/it/Odd.java": "odd.pkg", "New.java": "fresh"}


def test_the_loaded_module_reads_a_run_as_the_toolchain_does():
    canary = f"RepogymCanary{N[:16]}Test"
    report = (b'<?xml version="1.0"?><testsuite name="org.x.FooTest">'
              b'<testcase name="adds" classname="org.x.FooTest" time="0.1">'
              b'<failure type="java.lang.AssertionError">no</failure></testcase>'
              b'<testcase name="ok" classname="org.x.FooTest" time="0.1"/></testsuite>')
    canary_report = (f'<?xml version="1.0"?><testsuite name="{canary}"><testcase name="c" '
                     f'classname="{canary}"><failure type="x">c</failure></testcase>'
                     f'</testsuite>').encode()
    reports = {"TEST-org.x.FooTest.xml": report, f"TEST-{canary}.xml": canary_report}
    import hashlib

    def ev(kind: str, **fields: object) -> str:
        return json.dumps({"event": kind, "nonce": N, **fields})

    events = "\n".join([
        ev("module", index=0, dir=".", canary=canary), ev("tests", module=0, roots="src/test/java"),
        ev("mojo", module=0, mojo="maven-surefire-plugin:test", ok=True),
        *(ev("report", module=0, file=k, sha256=hashlib.sha256(v).hexdigest())
          for k, v in reports.items()),
        ev("done"), ev("exit", status=0)])
    bundle = b"".join(f"### repogym-file 0/{k} {len(v)}\n".encode() + v + b"\n"
                      for k, v in reports.items())
    theirs = parse_run(events, bundle, nonce=N, namer=Namer({CLI}), dumps={}, exit_code=0,
                       duration=1.0, timed_out=False, expected=[f"{CLI}::FooTest#adds"])
    ours = MAVEN.parse_run(events, bundle, nonce=N, namer=MAVEN.Namer({CLI}), dumps={},
                           exit_code=0, expected=[f"{CLI}::FooTest#adds"])
    assert {t: r["outcome"] for t, r in ours["results"].items()} == {
        t: r.outcome.value for t, r in theirs.results.items()} == {
        f"{CLI}::FooTest#adds": "failed", f"{CLI}::FooTest#ok": "passed"}
    assert ours["problems"] == list(theirs.problems) == [] and ours["finished"]
    forged = bundle.replace(b"<failure type=\"java.lang.AssertionError\">no</failure>", b"")
    forged = forged.replace(f"FooTest.xml {len(report)}".encode(),
                            f"FooTest.xml {len(report) - 53}".encode())
    read = MAVEN.parse_run(events, forged, nonce=N, namer=MAVEN.Namer({CLI}), dumps={},
                           exit_code=0)
    assert any("tampered" in p for p in read["problems"]), read


def test_a_java_spec_carries_the_toolchains_plan_and_nothing_of_the_others():
    row = _java_row()
    files = grading_files(row)
    assert sorted(files) == ["grader.py", MAVEN_FILE, SPEC_FILE]
    spec = json.loads(files[SPEC_FILE])
    assert spec["language"] == "java" and "rust" not in spec and "span_guarded" not in spec
    assert not PYTHON_FIELDS & set(spec)
    assert ContainerSpec.model_validate(spec).java == java_plan()
    assert grader_args(row, "$here") == '--spec "$here/spec.json" --maven "$here/repogym_maven.py"'
    with pytest.raises(InputError, match="does not grade it"):
        ContainerSpec.of(row, plan=rust_plan())


def test_load_spec_checks_the_java_plan(tmp_path):
    spec = _spec()
    path = tmp_path / "spec.json"
    for broken, words in (({**spec, "java": None}, "no Java grading plan"),
                          ({**spec, "java": {"fresh": []}}, "java.protection"),
                          ({k: v for k, v in spec.items() if k != "java"}, "lacks java")):
        path.write_text(json.dumps(broken))
        with pytest.raises(ValueError, match=words):
            grader.load_spec(str(path))


def test_a_java_task_needs_the_maven_run(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({**_spec(), "anchor": str(tmp_path / "no-anchor")}))
    out = tmp_path / "out"
    missing = ["--spec", str(spec), "--out", str(out), "--maven", str(tmp_path / "x.py")]
    assert grader.main(missing) == grader.EXIT_USAGE
    assert "--maven" in capsys.readouterr().out
    module = tmp_path / MAVEN_FILE
    module.write_bytes(plugin_source(MAVEN_FILE))
    given = ["--spec", str(spec), "--out", str(out), "--maven", str(module)]
    assert grader.main(given) == grader.EXIT_INFRA  # past the argument checks: no anchor here
    beside = tmp_path / "beside"  # the default: beside the grader, loaded with -I -S
    beside.mkdir()
    (beside / "grader.py").write_bytes(Path(grader.__file__).read_bytes())
    (beside / MAVEN_FILE).write_bytes(plugin_source(MAVEN_FILE))
    proc = subprocess.run([sys.executable, "-I", "-S", str(beside / "grader.py"),
                           "--spec", str(spec)], capture_output=True, text=True)
    assert proc.returncode == grader.EXIT_INFRA, proc.stdout + proc.stderr


@pytest.mark.parametrize("trusted", [True, False])
def test_lines_for_swebench_keep_java_ids_whole(trusted, capsys):
    outcomes = {f"{CLI}::FooTest#adds": "passed", f"{CLI}::FooTest#x y(int)[1]": "passed",
                f"{CLI}::FooTest$Inner#bad": "failed", f"{CLI}::FooTest#gone": None}
    grader.emit({"instance_id": "x", "reward": 0.0, "trusted": trusted, "discarded": [],
                 "problems": [], "resolved": False, "outcomes": outcomes}, None, "java")
    parsed = {m.group(2): m.group(1) for line in capsys.readouterr().out.splitlines()
              if (m := re.match(r"^\[(PASSED|FAILED)\] (.+)$", line))}
    passed = {f"{CLI}::FooTest#adds", f"{CLI}::FooTest#x y(int)[1]"} if trusted else set()
    assert parsed == {t: "PASSED" if t in passed else "FAILED" for t in outcomes}


def test_harbor_and_swebench_export_java_rows_without_docker(tmp_path):
    rows = [_java_row(0), _java_row(1)]
    export_rows("harbor", rows, tmp_path / "h")
    task = tmp_path / "h" / rows[0].instance_id
    assert sorted(p.name for p in (task / "tests").iterdir()) == [
        "grader.py", MAVEN_FILE, SPEC_FILE, "test.sh"]
    assert "--maven" in (task / "tests/test.sh").read_text()
    assert "mvn -o" in (task / "instruction.md").read_text()
    export_rows("swebench", rows, tmp_path / "s")
    insts = [json.loads(x) for x in (tmp_path / "s/instances.jsonl").read_text().splitlines()]
    assert {(i["language"], i["log_parser"]) for i in insts} == {("java", "parse_log_jest_json")}
    assert all("--maven" in i["eval_script"] for i in insts)
