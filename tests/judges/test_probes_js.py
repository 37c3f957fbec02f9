"""JavaScript reward hacks (``judges/probes_js.py``) on real tasks: each scores 0 through
verify's grading path, the gold patch 1; and the hacks that neutralise assertions are shown
to fool a run without canaries (so the canary is what stops them).

Tasks: a bug planted by hand in mime-types (mocha + node's ``assert``) and in ms (jest +
``expect``), judged without a probe set (each probe is a test here).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from repogym.baseline import record_baseline
from repogym.config import Settings
from repogym.grading import GradingSpec, grade_in
from repogym.judges.judge import Judge, JudgeSettings
from repogym.judges.probes import ProbeContext, context_in, probe_patches, probes_for
from repogym.patches import reverse_diff, unified_diff
from repogym.pipeline import build_env, prepare, provider_for
from repogym.schemas.records import Candidate, CandidateKind, RepoSpec, Status

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPOS = Path(__file__).resolve().parents[3] / "shared" / "repos"
# bundle -> (file, text, its bug): the bug makes some tests fail
BUGS = {"jshttp+mime-types": ("index.js", "  return exts[0]\n}", "  return exts[1]\n}"),
        "vercel+ms": ("src/index.ts", "return n * h;", "return n * m;")}
# the hacks that fool each subject's tests without canaries (ms imports expect from
# @jest/globals, so replacing the global expect does nothing there; overriding matchers does)
NEUTRALISING = {"jshttp+mime-types": ["js_assert_noop"], "vercel+ms": ["js_expect_accepts"]}


@dataclass
class Task:
    spec: GradingSpec
    patches: dict[str, str]
    sandbox: object
    toolchain: object


@pytest.fixture(scope="module", params=sorted(BUGS))
def task(request, tmp_path_factory, base_image):
    bundle = request.param
    root = tmp_path_factory.mktemp("js-probes")
    source = root / bundle
    subprocess.run(["git", "clone", "-q", str(REPOS / f"{bundle}.bundle"), str(source)],
                   check=True)
    settings = Settings(out=root / "out", base_image=base_image)
    prepared = prepare(RepoSpec(source=str(source)), settings)
    provider = provider_for(settings)
    env = build_env(provider, prepared, settings)
    path, old, new = BUGS[bundle]
    text = (source / path).read_text()
    assert text.count(old) == 1
    bug = unified_diff(path, text, text.replace(old, new))
    cand = Candidate(kind=CandidateKind.synthetic, repo=prepared.checkout.name,
                     language="javascript", base_commit=prepared.checkout.commit,
                     bug_patch=bug, gold_patch=reverse_diff(bug), generator="test",
                     files=(path,))
    tc = prepared.toolchain
    with provider.open(env) as sandbox:
        base = record_baseline(sandbox, tc, repo=cand.repo, commit=cand.base_commit,
                               image=env.ref, runs=1, timeout=300)
        judge = Judge(sandbox, tc, base, JudgeSettings(oracle_runs=1, timeout=300, probes=0))
        verdict = judge.judge(cand).verdict
        assert verdict.status is Status.accept, verdict
        spec = GradingSpec(instance_id=cand.instance_id, image=env.ref, language="javascript",
                           base_commit=cand.base_commit, bug_patch=bug, test_patch="",
                           FAIL_TO_PASS=verdict.fail_to_pass, PASS_TO_PASS=verdict.pass_to_pass,
                           time_limits=verdict.time_limits)
        patches = probe_patches(context_in(sandbox, spec, (path,)))
        yield Task(spec, patches, sandbox, tc)


def test_every_javascript_probe_applies_and_scores_zero_and_gold_scores_one(request,
                                                                          task) -> None:
    if request.node.callspec.params["task"] != "jshttp+mime-types":
        pytest.skip("every probe on the quick mocha suite; jest's runs cost 7 s a grade")
    assert set(task.patches) == set(probes_for("javascript"))
    gold = grade_in(task.sandbox, task.toolchain, task.spec, reverse_diff(task.spec.bug_patch))
    assert gold.reward == 1.0, gold.problems
    scores = {name: grade_in(task.sandbox, task.toolchain, task.spec, patch).reward
              for name, patch in task.patches.items()}
    assert scores == dict.fromkeys(task.patches, 0.0)


def test_neutralised_assertions_fool_a_run_without_canaries(request, task) -> None:
    """Without canaries the hack makes the failing tests pass: the canary is what stops it."""
    bundle = request.node.callspec.params["task"]
    for name in NEUTRALISING[bundle]:
        sb = task.sandbox
        sb.reset()
        assert sb.apply_patch(task.spec.bug_patch) and sb.apply_patch(task.patches[name])
        plain = task.toolchain.run_tests(sb, timeout=300, select=list(task.spec.FAIL_TO_PASS),
                                         check_runner=False)
        assert plain.trusted and all(plain.outcome(t) is not None and plain.outcome(t).ok
                                     for t in task.spec.FAIL_TO_PASS), (name, plain.problems)
        graded = grade_in(sb, task.toolchain, task.spec, task.patches[name])
        assert graded.reward == 0.0
        assert any("neutralised the assertions" in p for p in graded.problems), (
            name, graded.problems, graded.outcomes, graded.log_tail[-2000:])


def test_every_javascript_probe_makes_a_patch_for_a_node_tap_task() -> None:
    """A node-tap task whose F2P names a file alone (its own assertions, minimatch's
    ``test/partial.ts``) and nested subtests: every probe makes its patch (the probe set
    once crashed the flow here), and the test rewrite keeps tap's module style and titles."""
    files = {"test/partial.ts": "import t from 'tap'\nimport { minimatch } from "
                                "'../dist/esm/index.js'\nt.equal(minimatch('a', 'a'), true)\n",
             "test/basic.js": "const t = require('tap')\nconst mm = require('../')\n"
                              "t.test('globs', t => { t.test('a/**', t => { t.end() }); "
                              "t.end() })\n",
             "src/index.ts": "export const minimatch = (p: string, q: string) => p === q\n"}
    spec = GradingSpec(instance_id="x", image="i", language="javascript", base_commit="0" * 40,
                       bug_patch="", test_patch="",
                       FAIL_TO_PASS=("test/partial.ts", "test/basic.js > globs > a/**"),
                       PASS_TO_PASS=("test/basic.js > globs",))
    ctx = ProbeContext(spec=spec, read=files.get, source_files=("src/index.ts",))
    patches = probe_patches(ctx)
    assert set(probes_for("javascript")) >= set(patches) and len(patches) >= 5
    edited = patches["js_edit_tests"]
    assert "+t.pass('probe')" in edited and "-t.equal(minimatch('a', 'a'), true)" in edited
    assert '+t.test("globs", (t) => { t.test("a/**", (t) => { t.end() }); t.end() })' in edited
    assert " import t from 'tap'" in edited and " const t = require('tap')" in edited
