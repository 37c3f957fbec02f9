"""rewrite/modify/llm_statement end to end through litellm's mock_response (no network)."""

from __future__ import annotations

from pathlib import Path

from repogym.generators.llm import (
    LLMClient,
    LLMSettings,
    llm_statement,
    modify_candidates,
    rewrite_candidates,
)
from repogym.generators.llm.issue_writer import statement_prompt
from repogym.generators.statements import evidence_from_messages, offline_statement
from repogym.patches import unified_diff
from repogym.schemas.calls import CallRecord, CallTrace, StatementEvidence
from repogym.schemas.records import Candidate, CandidateKind, Checkout
from repogym.toolchains.python import PythonToolchain
from tests.generators.llm.conftest import ANSWERS, LIB

F2P = ["tests/test_lib.py::test_clamp_low"]
MESSAGES = {F2P[0]: "AssertionError: assert 3 == 0\n where 3 = clamp(-5, 0, 10)"}
EVIDENCE = evidence_from_messages(F2P, {**MESSAGES, "oracle": "reran x3"})


def _client(tmp_path: Path, mock: str | None, model: str = "openai/mock") -> LLMClient:
    return LLMClient(LLMSettings(model=model, mock_response=mock), cache_dir=tmp_path / "c")


def _clamp_candidate() -> Candidate:
    broken = LIB.replace("    if x < lo:\n        return lo\n", "    if x < lo:\n        return x\n")
    return Candidate(kind=CandidateKind.synthetic, repo="demo", base_commit="0" * 40,
                     bug_patch=unified_diff("demo/lib.py", LIB, broken),
                     gold_patch=unified_diff("demo/lib.py", broken, LIB),
                     generator="llm_rewrite", files=("demo/lib.py",),
                     provenance={"function": "clamp"})


def test_without_a_model_nothing_is_generated(demo_checkout: Checkout, tmp_path: Path,
                                              toolchain: PythonToolchain) -> None:
    client = LLMClient(LLMSettings(), cache_dir=tmp_path)
    for gen in (rewrite_candidates, modify_candidates):
        assert gen(demo_checkout, toolchain, client, seed=0, max_candidates=5) == []
        assert gen(demo_checkout, toolchain, None, seed=0, max_candidates=5) == []
    assert not (tmp_path / "c").exists()


def test_without_a_model_the_statement_is_offline(tmp_path: Path) -> None:
    cand = _clamp_candidate()
    expected = offline_statement(cand, EVIDENCE)
    assert llm_statement(cand, EVIDENCE, LLMClient(LLMSettings(), tmp_path)) == (expected, 0.0)
    assert llm_statement(cand, EVIDENCE, None) == (expected, 0.0)


def test_rewrite_via_mock_response(demo_checkout: Checkout, tmp_path: Path,
                                   toolchain: PythonToolchain) -> None:
    client = _client(tmp_path, ANSWERS["clamp"])
    cands = rewrite_candidates(demo_checkout, toolchain, client, seed=0, max_candidates=3,
                               max_attempts=10)
    assert len(cands) == 1  # the one answer only fits clamp; the others are rejected
    (cand,) = cands
    assert (cand.generator, cand.mutator, cand.files) == ("llm_rewrite", "", ("demo/lib.py",))
    assert cand.provenance["function"] == "clamp" and cand.provenance["cached"] == "false"
    assert cand.provenance["model"] and cand.provenance["cost_usd"] == "0.000000"
    assert "+    return min(x, hi)" in cand.bug_patch and "-    return min(x, hi)" in cand.gold_patch
    assert '"""Limit x."""' not in cand.bug_patch  # the file keeps its docstring
    assert cand.lines and all(n > 5 for n in cand.lines)
    again = rewrite_candidates(demo_checkout, toolchain, client, seed=0, max_candidates=3,
                               max_attempts=10)
    assert again[0].bug_patch == cand.bug_patch and again[0].provenance["cached"] == "true"


def test_modify_via_mock_response_strips_the_telltale_comment(
        demo_checkout: Checkout, tmp_path: Path, toolchain: PythonToolchain) -> None:
    client = _client(tmp_path, ANSWERS["Stack.push_all"])
    (cand,) = modify_candidates(demo_checkout, toolchain, client, seed=0, max_candidates=3,
                                max_attempts=10)
    assert cand.generator == "llm_modify" and cand.provenance["function"] == "Stack.push_all"
    assert "BUG" not in cand.bug_patch and "+        self.items.extend(values[1:])\n" in cand.bug_patch


def test_statement_via_mock_response(tmp_path: Path) -> None:
    issue = ("# clamp returns values below the lower bound\n\nCalling `clamp(-5, 0, 10)` "
             "gives -5; I expected 0.\n")
    text, cost = llm_statement(_clamp_candidate(), EVIDENCE, _client(tmp_path, issue))
    assert text == issue and cost == 0.0


def test_statement_that_quotes_the_patch_falls_back(tmp_path: Path) -> None:
    cand = _clamp_candidate()
    leaky = "# clamp is broken\n\nSomeone wrote\n\n    return x\n\nbut it should be `return lo`.\n"
    text, _ = llm_statement(cand, EVIDENCE, _client(tmp_path, leaky))
    assert text == offline_statement(cand, EVIDENCE)


def test_statement_that_names_a_test_falls_back(tmp_path: Path) -> None:
    cand = _clamp_candidate()
    named = "# clamp is broken\n\ntest_clamp_low fails since the last release.\n"
    text, _ = llm_statement(cand, EVIDENCE, _client(tmp_path, named))
    assert text == offline_statement(cand, EVIDENCE)


def test_statement_falls_back_on_an_llm_error(tmp_path: Path) -> None:
    cand = _clamp_candidate()
    text, cost = llm_statement(cand, EVIDENCE, _client(tmp_path, None, "no-such-provider/x"))
    assert (text, cost) == (offline_statement(cand, EVIDENCE), 0.0)


def test_the_prompt_shows_the_observed_calls_the_right_way_round() -> None:
    def call(result: str) -> CallRecord:
        return CallRecord(test=F2P[0], index=0, function="demo.lib.clamp",
                          args=("-5", "0", "10"), result=result)

    evidence = StatementEvidence(fail_to_pass=tuple(F2P), messages=MESSAGES,
                                 broken=CallTrace(calls={F2P[0]: (call("-5"),)}),
                                 gold=CallTrace(calls={F2P[0]: (call("0"),)}))
    prompt = statement_prompt(_clamp_candidate(), evidence)[1]["content"]
    assert "`demo.lib.clamp(-5, 0, 10)` returns `-5`; it should return `0`." in prompt
    assert "test_clamp_low" not in prompt and "test_lib.py" not in prompt
