"""The optional LLM judge: flags accepted tasks for review, never accepts or rejects.

Most tests answer through litellm's ``mock_response`` (no network); the stub tests go over
real HTTP to the OpenAI-compatible stub on 127.0.0.1 of ``tests/generators/llm``; the last
one runs the whole pipeline on the tiny repo (local provider) with the judge switched on by
``REPOGYM_LLM_*`` variables and reads the verdicts back from the Parquet dataset.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from repogym.config import Settings
from repogym.datasets import DatasetStore
from repogym.generators.llm import LLMClient, LLMSettings
from repogym.generators.statements import leaks
from repogym.judges.llm_judge import (
    EVIDENCE_ERROR,
    LLMJudgeAnswer,
    MalformedJudgeAnswer,
    judge_prompt,
    llm_judge,
    parse_answer,
    redact,
)
from repogym.patches import reverse_diff, unified_diff
from repogym.pipeline import judged_with_statement, run_repo
from repogym.schemas.records import Candidate, CandidateKind, RepoSpec, Status, Verdict
from tests.conftest import TINY_PROJECT
from tests.generators.llm.conftest import StubServer, prompt_of, stub_server  # noqa: F401

OPS = TINY_PROJECT["tinycalc/ops.py"]
BUG = unified_diff("tinycalc/ops.py", OPS, OPS.replace("        return lo\n",
                                                       "        return hi\n", 1))
GOLD = reverse_diff(BUG)
F2P = ("tests/test_ops.py::test_clamp_low",)
STATEMENT = ("# clamp ignores the lower bound\n\n`clamp(-5, 0, 10)` gives 10; I expected 0, "
             "the lower bound.\n")
HIDDEN = "HIDDEN CONTEXT"


def answer(clarity: int = 4, solvability: int = 5, **extra: Any) -> str:
    return json.dumps({"clarity": clarity, "clarity_rationale": "Says what and what is expected.",
                       "solvability": solvability,
                       "solvability_rationale": "The expected value is stated.", **extra})


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the tests only, never from the developer's REPOGYM_LLM_*."""
    for name in list(os.environ):
        if name.startswith("REPOGYM_LLM_"):
            monkeypatch.delenv(name)


@pytest.fixture
def cand() -> Candidate:
    return Candidate(kind=CandidateKind.synthetic, repo="tinycalc", base_commit="c0ffee" * 5,
                     bug_patch=BUG, gold_patch=GOLD, statement=STATEMENT, generator="test",
                     files=("tinycalc/ops.py",), provenance={"function": "clamp"})


def accepted(cand: Candidate) -> Verdict:
    return Verdict(instance_id=cand.instance_id, status=Status.accept, fail_to_pass=F2P,
                   pass_to_pass=("tests/test_ops.py::test_add",), evidence={"kept": "yes"})


def mock_client(tmp_path: Path, reply: str | None, **overrides: Any) -> LLMClient:
    settings = LLMSettings(**{"model": "openai/mock", "mock_response": reply, "judge": True,
                              **overrides})
    return LLMClient(settings, cache_dir=tmp_path / "cache")


def gold_lines_in(text: str) -> list[str]:
    """The fix's lines that ``text`` quotes (what no output of the judge may contain)."""
    return leaks(text, GOLD) + [ln for ln in ("return lo",) if ln in text]


# --- mock_response: what each answer does to the verdict ------------------------------------

def test_good_answer_adds_evidence_only(cand: Candidate, tmp_path: Path) -> None:
    before = accepted(cand)
    after = llm_judge(cand, before, STATEMENT, mock_client(tmp_path, answer(4, 5)))
    assert (after.status, after.reason, after.detail) == (Status.accept, "", "")
    assert after.fail_to_pass == before.fail_to_pass and after.evidence["kept"] == "yes"
    ev = after.evidence
    assert (ev["llm_judge_clarity"], ev["llm_judge_solvability"]) == ("4", "5")
    assert ev["llm_judge_clarity_rationale"] == "Says what and what is expected."
    assert ev["llm_judge_threshold"] == "3" and ev["llm_judge_cached"] == "false"
    assert ev["llm_judge_model"] and EVIDENCE_ERROR not in ev


@pytest.mark.parametrize("clarity, solvability, reason", [
    (2, 4, "llm_judge:unclear"),
    (4, 1, "llm_judge:unsolvable"),
    (1, 2, "llm_judge:unsolvable"),  # both low: unsolvability is the reason, both in detail
])
def test_low_score_sends_to_review(cand: Candidate, tmp_path: Path, clarity: int,
                                   solvability: int, reason: str) -> None:
    after = llm_judge(cand, accepted(cand), STATEMENT,
                      mock_client(tmp_path, answer(clarity, solvability)))
    assert (after.status, after.reason) == (Status.review, reason)
    assert after.evidence["llm_judge_clarity"] == str(clarity)
    assert after.evidence["llm_judge_solvability"] == str(solvability)
    assert after.evidence["kept"] == "yes" and after.fail_to_pass == F2P
    for aspect, score in (("clarity", clarity), ("solvability", solvability)):
        assert (f"{aspect} {score}/5" in after.detail) is (score < 3)


@pytest.mark.parametrize("threshold, score, status", [
    (5, 4, Status.review), (4, 4, Status.accept), (1, 1, Status.accept)])
def test_threshold_is_configurable(cand: Candidate, tmp_path: Path, threshold: int, score: int,
                                   status: Status) -> None:
    client = mock_client(tmp_path, answer(score, score), judge_threshold=threshold)
    assert llm_judge(cand, accepted(cand), STATEMENT, client).status is status


def test_threshold_outside_the_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="judge_threshold"):
        LLMSettings(judge_threshold=6)


@pytest.mark.parametrize("garbage", [
    "Looks like a fine task to me!",
    "[4, 5]",
    '{"clarity": 4, "clarity_rationale": "ok"',                      # truncated
    answer(4, 5).replace('"solvability": 5', '"solvability": "5"'),   # a string, not a number
    answer(4, 5).replace('"clarity": 4', '"clarity": 4.5'),
    answer(0, 5),
    answer(4, 7),
    json.dumps({"clarity": 4, "clarity_rationale": "ok", "solvability": 5}),  # a key missing
    answer(4, 5).replace('"Says what and what is expected."', '"  \\n "'),     # empty rationale
])
def test_garbage_answer_is_evidence_and_leaves_the_verdict(cand: Candidate, tmp_path: Path,
                                                           garbage: str) -> None:
    before = accepted(cand)
    after = llm_judge(cand, before, STATEMENT, mock_client(tmp_path, garbage))
    assert after.model_dump(exclude={"evidence"}) == before.model_dump(exclude={"evidence"})
    assert after.evidence[EVIDENCE_ERROR]
    assert "llm_judge_clarity" not in after.evidence and after.evidence["kept"] == "yes"
    assert after.evidence["llm_judge_cost_usd"]  # the call was made (and paid for)


def test_failing_call_is_evidence_and_leaves_the_verdict(cand: Candidate, tmp_path: Path) -> None:
    client = mock_client(tmp_path, None, model="no-such-provider/x", num_retries=0)
    before = accepted(cand)
    after = llm_judge(cand, before, STATEMENT, client)
    assert after.status is Status.accept and after.reason == ""
    assert "no-such-provider/x" in after.evidence[EVIDENCE_ERROR]


def test_answer_wrapped_in_prose_and_a_fence_is_extracted(cand: Candidate, tmp_path: Path) -> None:
    wrapped = f"Here is my review:\n```json\n{answer(2, 4)}\n```\nLet me know {{if}} needed."
    after = llm_judge(cand, accepted(cand), STATEMENT, mock_client(tmp_path, wrapped))
    assert (after.status, after.reason) == (Status.review, "llm_judge:unclear")


def test_parse_takes_the_first_object_of_the_right_shape() -> None:
    text = 'Format: {"clarity": "<1-5>"}. Answer: ' + answer(3, 2) + " and {not json"
    assert parse_answer(text) == LLMJudgeAnswer(
        clarity=3, clarity_rationale="Says what and what is expected.", solvability=2,
        solvability_rationale="The expected value is stated.")
    assert parse_answer(answer(5, 5, extra_key="ignored")).clarity == 5
    long = parse_answer(answer(5, 5).replace("Says what", "line one\nline two " + "x" * 400))
    assert "\n" not in long.clarity_rationale and len(long.clarity_rationale) <= 300
    with pytest.raises(MalformedJudgeAnswer, match="clarity"):
        parse_answer('{"clarity": "<1-5>"}')


@pytest.mark.parametrize("settings", [
    {"judge": False},                     # a model, but the judge is not asked for
    {"judge": True, "model": ""},         # asked for, but no model: nothing to call
])
def test_disabled_judge_makes_no_call(cand: Candidate, tmp_path: Path,
                                      settings: dict[str, Any]) -> None:
    client = mock_client(tmp_path, answer(1, 1), **settings)
    before = accepted(cand)
    assert llm_judge(cand, before, STATEMENT, client) is before
    assert llm_judge(cand, before, STATEMENT, None) is before
    assert not (tmp_path / "cache").exists() and client.spent_usd == 0.0  # nothing asked


@pytest.mark.parametrize("status", [Status.reject, Status.review, Status.infra_error])
def test_verdicts_not_accepted_are_never_looked_at(cand: Candidate, tmp_path: Path,
                                                   status: Status) -> None:
    before = accepted(cand).model_copy(update={"status": status, "reason": "other"})
    assert llm_judge(cand, before, STATEMENT, mock_client(tmp_path, answer(5, 5))) is before
    assert not (tmp_path / "cache").exists()


# --- what the model sees and what comes out -------------------------------------------------

def test_prompt_has_statement_tests_and_the_gold_patch_only_as_hidden_context(
        cand: Candidate) -> None:
    mined = cand.model_copy(update={"test_patch": unified_diff(
        "tests/test_more.py", "", "def test_clamp_floor():\n    assert clamp(-1, 0, 1) == 0\n")})
    prompt = prompt_of({"messages": list(judge_prompt(mined, F2P, STATEMENT))})
    assert STATEMENT.strip() in prompt and F2P[0] in prompt
    assert "def test_clamp_floor" in prompt  # the test source, when the candidate has it
    assert prompt.count(GOLD) == 1
    hidden = prompt.index(HIDDEN)
    assert prompt.index(GOLD) > hidden
    assert not gold_lines_in(prompt[:hidden])  # statement and tests come before, fix-free
    assert "def test_clamp_floor" not in prompt_of(
        {"messages": list(judge_prompt(cand, F2P, STATEMENT))})


def test_long_inputs_are_clipped(cand: Candidate) -> None:
    many = tuple(f"tests/test_ops.py::test_{i}" for i in range(100))
    prompt = prompt_of({"messages": list(judge_prompt(cand, many, "word " * 5000))})
    assert "and 70 more" in prompt and "test_99" not in prompt and "[truncated]" in prompt
    assert len(prompt) < 12000


def test_rationales_quoting_the_fix_are_redacted_from_evidence_and_detail(
        cand: Candidate, tmp_path: Path) -> None:
    """Nothing sent to review (evidence, detail) contains the gold patch, even when the
    model quotes it."""
    quoting = answer(4, 2).replace("The expected value is stated.",
                                   "Needs `return lo` for x < lo, i.e.\\n  if x < lo:\\n"
                                   "        return lo")
    after = llm_judge(cand, accepted(cand), STATEMENT, mock_client(tmp_path, quoting))
    assert (after.status, after.reason) == (Status.review, "llm_judge:unsolvable")
    outputs = [after.detail, *after.evidence.values()]
    assert all(not gold_lines_in(text) for text in outputs), outputs
    assert "[redacted: quotes the fix]" in after.evidence["llm_judge_solvability_rationale"]
    assert GOLD not in "".join(outputs)


def test_redaction_takes_only_the_fix_s_new_code(cand: Candidate) -> None:
    assert redact("The `return` of `clamp(-5, 0, 10)` is off.", cand, STATEMENT) == (
        "The `return` of `clamp(-5, 0, 10)` is off.")  # in the old code too, or not code
    assert redact("Use 'return lo'.", cand, STATEMENT) == "Use '[redacted: quotes the fix]'."
    assert redact("It needs `turn l`.", cand, STATEMENT) == (
        "It needs `[redacted: quotes the fix]`.")  # a part of a new line
    assert redact("It needs `turn l`.", cand, STATEMENT + "turn l") == "It needs `turn l`."


# --- in the pipeline ------------------------------------------------------------------------

def test_pipeline_judges_accepted_tasks_after_the_statement_checks(cand: Candidate,
                                                                   tmp_path: Path) -> None:
    client = mock_client(tmp_path, answer(2, 5))
    judged = judged_with_statement(cand, accepted(cand), "img", client)
    assert (judged.verdict.status, judged.verdict.reason) == (Status.review, "llm_judge:unclear")
    assert judged.statement == STATEMENT
    # a statement that leaks the fix is flagged first; the LLM judge does not look at it
    leaky = cand.model_copy(update={"statement": "Fix it: `if x < lo:\n        return lo`"})
    judged = judged_with_statement(leaky, accepted(leaky), "img", client)
    assert judged.verdict.reason == "statement_leak"
    assert not any(k.startswith("llm_judge") for k in judged.verdict.evidence)


# --- real HTTP to the stub ------------------------------------------------------------------

def stub_llm(stub: StubServer, tmp_path: Path, **overrides: Any) -> LLMClient:
    settings = LLMSettings(**{"model": "openai/stub", "base_url": stub.url, "num_retries": 0,
                              "timeout": 10, "judge": True, **overrides})
    return LLMClient(settings, cache_dir=tmp_path / "stub-cache")


def test_judge_over_http_sends_the_prompt_and_caches_the_answer(
        cand: Candidate, tmp_path: Path, stub_server: StubServer) -> None:  # noqa: F811
    stub_server.reply = lambda body: "Verdict:\n" + answer(5, 1)
    after = llm_judge(cand, accepted(cand), STATEMENT, stub_llm(stub_server, tmp_path))
    assert (after.status, after.reason) == (Status.review, "llm_judge:unsolvable")
    (body,) = stub_server.requests
    assert body["model"] == "stub" and GOLD in prompt_of(body) and HIDDEN in prompt_of(body)
    assert body["temperature"] == 0.0  # a grader: same task, same scores
    again = llm_judge(cand, accepted(cand), STATEMENT, stub_llm(stub_server, tmp_path))
    assert len(stub_server.requests) == 1 and again.evidence["llm_judge_cached"] == "true"
    assert again.status is Status.review


def test_server_error_and_spent_budget_leave_the_verdict(
        cand: Candidate, tmp_path: Path, stub_server: StubServer) -> None:  # noqa: F811
    stub_server.status = 500
    after = llm_judge(cand, accepted(cand), STATEMENT, stub_llm(stub_server, tmp_path))
    assert after.status is Status.accept and "stub failure" in after.evidence[EVIDENCE_ERROR]
    stub_server.status, stub_server.reply = 200, lambda body: answer(1, 1)
    # 100 prompt + 50 completion tokens at these prices: $0.20 a call, over a $0.10 budget
    client = stub_llm(stub_server, tmp_path / "b", input_cost_per_token=0.001,
                      output_cost_per_token=0.002, budget_usd=0.1)
    first = llm_judge(cand, accepted(cand), STATEMENT, client)
    assert first.status is Status.review and first.evidence["llm_judge_cost_usd"] == "0.200000"
    other = cand.model_copy(update={"statement": "another statement"})
    second = llm_judge(other, accepted(other), "another statement", client)
    assert second.status is Status.accept and "budget" in second.evidence[EVIDENCE_ERROR]
    assert len(stub_server.requests) == 2  # the 500, then one paid call; no call over budget


ISSUE = ("# A helper returns a wrong value\n\n"
         "Calling it with ordinary inputs gives a wrong result.\n")


def stub_reply(body: dict[str, Any]) -> str:
    """The statement writer gets an issue; the judge finds tasks on clamp unsolvable."""
    prompt = prompt_of(body)
    if HIDDEN not in prompt:
        return ISSUE
    return answer(4, 2) if "test_clamp" in prompt else answer(5, 5)


def test_run_repo_with_the_judge_on_flags_tasks_into_the_dataset(
        tiny_repo: Path, tmp_path: Path, stub_server: StubServer,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    stub_server.reply = stub_reply
    for name, value in (("MODEL", "openai/stub"), ("BASE_URL", stub_server.url),
                        ("JUDGE", "true"), ("NUM_RETRIES", "0"), ("TIMEOUT", "20")):
        monkeypatch.setenv(f"REPOGYM_LLM_{name}", value)
    settings = Settings(out=tmp_path / "out", provider="local", generators=("procedural",),
                        max_candidates=10, max_combined=0, baseline_runs=1, oracle_runs=1,
                        probes=0, test_timeout=60)
    summary = run_repo(RepoSpec(source=str(tiny_repo)), settings)
    store = DatasetStore(settings.out)
    rows = [r for r in store.judged_rows()
            if "llm_judge_solvability" in r.evidence]
    judge_calls = [b for b in stub_server.requests if HIDDEN in prompt_of(b)]
    assert rows and len(judge_calls) == len(rows), summary
    flagged = [r for r in rows if any("test_clamp" in t for t in r.FAIL_TO_PASS)]
    assert flagged and len(flagged) < len(rows), [r.FAIL_TO_PASS for r in rows]
    for row in rows:
        clamp = row in flagged
        assert row.status is (Status.review if clamp else Status.accept), row.reason
        assert row.reason == ("llm_judge:unsolvable" if clamp else "")
        assert row.evidence["llm_judge_solvability"] == ("2" if clamp else "5")
        assert row.problem_statement == ISSUE
        texts = [row.problem_statement, row.detail, *row.evidence.values()]
        assert not any(leaks(t, row.patch) for t in texts), texts
    assert summary.accepted == len(rows) - len(flagged)
    assert summary.rejected.get("llm_judge:unsolvable") == len(flagged)
