"""Statements through the judge and the pipeline's writer, on suites that compare both ways.

Each project's tests call the same function; one writes ``assert expected == actual``, the
other is unittest-style (``assertEqual(expected, actual)``). A bug makes ``ordinal(-11)``
return ``'st'`` where ``'th'`` is right: the statement must say the call returns ``'st'``
and should return ``'th'`` -- never the other way round, and without the tests' names.
"""

from __future__ import annotations

import re

import pytest

from repogym.baseline import record_baseline
from repogym.judges.judge import Judge, JudgeSettings
from repogym.patches import reverse_diff, unified_diff
from repogym.pipeline import judged_with_statement
from repogym.schemas.records import Candidate, CandidateKind, Status
from tests.conftest import build_tiny_env, commit_files

pytestmark = pytest.mark.docker

PYPROJECT = ('[build-system]\nrequires = ["setuptools>=61"]\n'
             'build-backend = "setuptools.build_meta"\n\n'
             '[project]\nname = "ordinals"\nversion = "0.1"\n\n'
             '[tool.setuptools]\npackages = ["ordinals"]\n')
CODE = ("def ordinal(n):\n"
        "    n = abs(int(n))\n"
        "    if n % 100 in (11, 12, 13):\n"
        "        return 'th'\n"
        "    return {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')\n")
BUGGY = CODE.replace("    if n % 100 in (11, 12, 13):\n        return 'th'\n", "")
SUITES = {
    "expected_first": ("from ordinals import ordinal\n\n\n"
                       "def test_teens():\n    assert 'th' == ordinal(-11)\n\n\n"
                       "def test_ones():\n    assert 'st' == ordinal(1)\n"),
    "unittest": ("import unittest\n\nfrom ordinals import ordinal\n\n\n"
                 "class TestOrdinal(unittest.TestCase):\n"
                 "    def test_teens(self):\n        self.assertEqual('th', ordinal(-11))\n\n"
                 "    def test_ones(self):\n        self.assertEqual('st', ordinal(1))\n"),
}


@pytest.fixture(params=sorted(SUITES))
def judged(request, tmp_path, base_image):
    src = tmp_path / "ordinals"
    commit_files(src, {"pyproject.toml": PYPROJECT, "ordinals/__init__.py": CODE,
                       "tests/test_ordinal.py": SUITES[request.param]})
    tiny = build_tiny_env("docker", src, tmp_path)
    bug = unified_diff("ordinals/__init__.py", CODE, BUGGY)
    cand = Candidate(kind=CandidateKind.synthetic, repo="ordinals",
                     base_commit=tiny.checkout.commit, bug_patch=bug,
                     gold_patch=reverse_diff(bug), generator="test",
                     files=("ordinals/__init__.py",), provenance={"function": "ordinal"})
    with tiny.provider.open(tiny.env) as sandbox:
        base = record_baseline(sandbox, tiny.toolchain, repo="ordinals",
                               commit=tiny.checkout.commit, image=tiny.env.ref, runs=1,
                               timeout=120)
        judgement = Judge(sandbox, tiny.toolchain, base,
                          JudgeSettings(oracle_runs=1, timeout=60, probes=0)).judge(cand)
    return judged_with_statement(cand, judgement.verdict, tiny.env.ref,
                                 evidence=judgement.evidence)


def test_the_statement_says_what_the_call_returns_and_should_return(judged):
    assert judged.verdict.status is Status.accept, judged.verdict
    text = judged.statement
    assert "ordinal(-11)" in text, text
    got = re.search(r"returns `'st'`|gives `'st'`|it returns `'st'`", text)
    assert got, text
    assert re.search(r"`'th'`", text) and not re.search(r"returns `'th'`", text), text
    assert "test_teens" not in text and "0x" not in text
