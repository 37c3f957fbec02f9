"""The optional LLM judge: a model scores an accepted task's statement, humans decide.

    accepted Verdict ──prompt──▶ LLMClient ──answer──▶ JSON ──▶ LLMJudgeAnswer (1-5, 1-5)
          │ off / no model: unchanged, no call        │ unusable: evidence llm_judge_error
          ▼                                           ▼
    both scores >= threshold: accept + evidence   a score < threshold: review + evidence

The model sees the problem statement, the FAIL_TO_PASS test names, the test patch when the
candidate has one (mined tasks) and, as *hidden context* for judging solvability only, the
gold patch. It answers with one JSON object::

    {"clarity": 4, "clarity_rationale": "...", "solvability": 2, "solvability_rationale": "..."}

Contract (ARCHITECTURE.md: "an LLM judge only flags for humans; it never accepts on its own"):

- Only a verdict whose status is ``accept`` is looked at; any other comes back unchanged,
  so the judge can neither accept nor reject.
- A score below ``LLMSettings.judge_threshold`` (default 3) sends the task to ``review``
  with reason ``llm_judge:unsolvable`` (solvability low; it wins when both are) or
  ``llm_judge:unclear`` (clarity low), the scores in evidence. Otherwise the status stays
  ``accept`` and the scores are evidence only.
- Off unless ``REPOGYM_LLM_JUDGE=true`` *and* ``REPOGYM_LLM_MODEL`` is set: without them no
  call is made and nothing is spent.
- A call that fails, a spent budget, or an answer that is not a valid JSON object of the
  shape above leaves the status as it was: the message is kept as ``llm_judge_error`` in
  evidence. It is not a task verdict (the task was not found wanting).
- Nothing the judge writes (evidence, detail) contains the gold patch: rationales that quote
  a line of the fix, or a code span only the fix's new lines contain, are redacted.

Evidence keys (all strings): ``llm_judge_clarity``, ``llm_judge_clarity_rationale``,
``llm_judge_solvability``, ``llm_judge_solvability_rationale``, ``llm_judge_threshold``,
``llm_judge_model``, ``llm_judge_cost_usd``, ``llm_judge_cached``; or ``llm_judge_error``
(with ``llm_judge_model``/``llm_judge_cost_usd`` when a call was made).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Annotated, Any, Literal, Sequence

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from repogym.generators.llm.client import Completion, LLMClient, Messages
from repogym.generators.llm.errors import BudgetExceeded, LLMError
from repogym.generators.statements import leaks
from repogym.schemas.reasons import Reason
from repogym.schemas.records import Candidate, Record, Status, Verdict

log = logging.getLogger(__name__)

JUDGE_TEMPERATURE = 0.0  # a grader, not a generator: the same task gets the same scores
PURPOSE = "llm_judge"
EVIDENCE_ERROR = "llm_judge_error"
REASON_UNCLEAR = Reason.llm_judge.code("unclear")
REASON_UNSOLVABLE = Reason.llm_judge.code("unsolvable")
MAX_RATIONALE_CHARS = 300
MAX_STATEMENT_CHARS = 6000
MAX_PATCH_CHARS = 8000
MAX_TEST_PATCH_CHARS = 4000
MAX_TESTS = 30
MIN_SPAN_CHARS = 3
REDACTED = "[redacted: quotes the fix]"
Aspect = Literal["clarity", "solvability"]

SYSTEM = ("You review tasks for a coding benchmark. A solver gets only the problem statement "
          "and the repository; hidden tests decide whether the solver's change is right. "
          "You judge the task, you do not solve it, and you reply with one JSON object.")

TASK = """\
## Problem statement (all the solver is told)
<statement>
{statement}
</statement>

## Hidden tests that must pass after the fix
{tests}
{test_patch}
## Reference fix (HIDDEN CONTEXT: the solver never sees it; use it only to judge solvability)
```diff
{gold}```

Score the task from 1 to 5 on two counts:
- "clarity": does the statement say clearly what is wrong and which behaviour is expected?
  1 = empty, incomprehensible or misleading; 3 = understandable with effort; 5 = precise.
- "solvability": could a skilled developer who sees only the statement and the repository
  write a change that makes the hidden tests pass? 1 = no (the tests need names, messages
  or behaviour the statement never implies); 3 = likely, with some guessing; 5 = certainly.
Each rationale is one sentence and must not quote, hint at or describe the reference fix.

Reply with exactly one JSON object and nothing else:
{{"clarity": <1-5>, "clarity_rationale": "<one sentence>", "solvability": <1-5>, \
"solvability_rationale": "<one sentence>"}}"""


def _one_line(text: str) -> str:
    """``text`` on one line (whitespace runs collapsed), at most MAX_RATIONALE_CHARS."""
    line = re.sub(r"\s+", " ", text).strip()
    if not line:
        raise ValueError("empty rationale")
    return line if len(line) <= MAX_RATIONALE_CHARS else line[:MAX_RATIONALE_CHARS - 1] + "…"


OneLine = Annotated[str, AfterValidator(_one_line)]


class LLMJudgeAnswer(BaseModel):
    """The model's answer, validated strictly (integers must be JSON integers, 1-5).

    Unknown keys are ignored; a missing key, a wrong type or an empty rationale is an error.
    """

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")

    clarity: int = Field(ge=1, le=5)
    clarity_rationale: OneLine
    solvability: int = Field(ge=1, le=5)
    solvability_rationale: OneLine


class MalformedJudgeAnswer(LLMError):
    """The model answered, but not with a JSON object of :class:`LLMJudgeAnswer`'s shape.

    Attributes:
        completion: the answer (paid for, and cached) when known.
    """

    def __init__(self, message: str, completion: Completion | None = None) -> None:
        super().__init__(message)
        self.completion = completion


class LowScore(Record):
    """One score below the threshold, with the model's (redacted) reason."""

    aspect: Aspect
    score: int
    rationale: str


class LLMJudgement(Record):
    """A scored task: the answer (rationales redacted) and what the call cost."""

    answer: LLMJudgeAnswer
    model: str
    cost_usd: float
    cached: bool

    def low_scores(self, threshold: int) -> list[LowScore]:
        """The scores below ``threshold``, solvability first."""
        a = self.answer
        scores = [LowScore(aspect="solvability", score=a.solvability,
                           rationale=a.solvability_rationale),
                  LowScore(aspect="clarity", score=a.clarity, rationale=a.clarity_rationale)]
        return [s for s in scores if s.score < threshold]

    def evidence(self, threshold: int) -> dict[str, str]:
        """The judgement as ``llm_judge_*`` evidence entries."""
        a = self.answer
        return {"llm_judge_clarity": str(a.clarity),
                "llm_judge_clarity_rationale": a.clarity_rationale,
                "llm_judge_solvability": str(a.solvability),
                "llm_judge_solvability_rationale": a.solvability_rationale,
                "llm_judge_threshold": str(threshold), **_call_evidence(self)}


def _call_evidence(call: LLMJudgement | Completion) -> dict[str, str]:
    return {"llm_judge_model": call.model, "llm_judge_cost_usd": f"{call.cost_usd:.6f}",
            "llm_judge_cached": str(call.cached).lower()}


def judge_enabled(client: LLMClient | None) -> bool:
    """Whether the LLM judge runs with ``client`` (``judge`` on and a model configured)."""
    return client is not None and client.settings.judge_enabled


# --- the prompt -----------------------------------------------------------------------------

def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n... [truncated]\n"


def _tests_block(f2p: Sequence[str]) -> str:
    if not f2p:
        return "(none recorded)\n"
    lines = [f"- {t}" for t in f2p[:MAX_TESTS]]
    if len(f2p) > MAX_TESTS:
        lines.append(f"- ... and {len(f2p) - MAX_TESTS} more")
    return "\n".join(lines) + "\n"


def _test_patch_block(test_patch: str) -> str:
    if not test_patch.strip():
        return ""
    return ("\n## Source of the hidden tests (the task's test patch)\n```diff\n"
            + _clip(test_patch, MAX_TEST_PATCH_CHARS) + "```\n")


def judge_prompt(cand: Candidate, f2p: Sequence[str], statement: str) -> Messages:
    """The chat messages asking the model to score ``cand`` with ``statement``.

    The gold patch appears once, in the section marked as hidden context.
    """
    task = TASK.format(statement=_clip(statement.strip(), MAX_STATEMENT_CHARS) or "(empty)",
                       tests=_tests_block(f2p), test_patch=_test_patch_block(cand.test_patch),
                       gold=_clip(cand.gold_patch, MAX_PATCH_CHARS))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]


# --- the answer -----------------------------------------------------------------------------

def json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects in ``text``: the whole text when it is one, else every object that
    starts at a ``{`` outside an earlier object (prose or code fences around it are fine).

    JSON's grammar is enforced (no single quotes, trailing commas or comments) except that
    a raw line break inside a string is accepted, as models often write one.
    """
    decoder = json.JSONDecoder(strict=False)
    try:
        whole = decoder.decode(text.strip())
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return [whole]
    found, pos = [], text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        pos = text.find("{", end)
    return found


def parse_answer(text: str) -> LLMJudgeAnswer:
    """The first JSON object in ``text`` that is a valid :class:`LLMJudgeAnswer`.

    Raises:
        MalformedJudgeAnswer: no JSON object in the text, or none of the right shape.
    """
    objects = json_objects(text)
    if not objects:
        raise MalformedJudgeAnswer(f"no JSON object in the answer ({len(text)} chars)")
    first_error: ValidationError | None = None
    for obj in objects:
        try:
            return LLMJudgeAnswer.model_validate(obj)
        except ValidationError as exc:
            first_error = first_error or exc
    assert first_error is not None
    problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}"
                         for e in first_error.errors())
    raise MalformedJudgeAnswer(f"answer is not a valid judgement: {problems}")


# --- redaction ------------------------------------------------------------------------------

def _side(patch: str, sign: str) -> list[str]:
    """The added (``sign="+"``) or removed (``"-"``) lines of ``patch``, without the sign."""
    return [ln[1:] for ln in patch.splitlines()
            if ln.startswith(sign) and not ln.startswith(sign * 3)]


def _loose(snippet: str) -> re.Pattern[str]:
    """``snippet`` as a pattern that matches it with any whitespace between its words."""
    return re.compile(r"\s+".join(re.escape(w) for w in snippet.split()))


def redact(text: str, cand: Candidate, statement: str) -> str:
    """``text`` without what it quotes of the fix: whole patch lines (as
    :func:`~repogym.generators.statements.leaks` finds them) and quoted code spans that
    only the fix's new code has (in its added lines, not in its removed ones, not in the
    statement: ``return`` is not redacted, ``return lo`` is)."""
    for line in dict.fromkeys(leaks(text, cand.gold_patch) + leaks(text, cand.bug_patch)):
        text = _loose(line).sub(REDACTED, text)
    added = "\n".join(_side(cand.gold_patch, "+"))
    removed = "\n".join(_side(cand.gold_patch, "-"))
    for span in dict.fromkeys(re.findall(r"`([^`]+)`|\"([^\"]+)\"|'([^']+)'", text)):
        code = next(s for s in span if s).strip()
        new_code = code in added and code not in removed and code not in statement
        if len(code) >= MIN_SPAN_CHARS and new_code:
            text = text.replace(code, REDACTED)
    return text


def _redacted(answer: LLMJudgeAnswer, cand: Candidate, statement: str) -> LLMJudgeAnswer:
    return answer.model_copy(update={
        "clarity_rationale": redact(answer.clarity_rationale, cand, statement),
        "solvability_rationale": redact(answer.solvability_rationale, cand, statement)})


# --- the judge ------------------------------------------------------------------------------

def score_task(cand: Candidate, f2p: Sequence[str], statement: str,
               client: LLMClient) -> LLMJudgement:
    """Ask the model to score the task; the rationales come back redacted.

    Raises:
        LLMError: the call failed, or (:class:`MalformedJudgeAnswer`, with the
            ``completion`` that was paid for) its answer is unusable.
        BudgetExceeded: the answer is not cached and the budget is spent.
    """
    completion = client.complete(judge_prompt(cand, f2p, statement), purpose=PURPOSE, seed=0,
                                 temperature=JUDGE_TEMPERATURE)
    try:
        answer = parse_answer(completion.text)
    except MalformedJudgeAnswer as exc:
        raise MalformedJudgeAnswer(str(exc), completion) from exc
    return LLMJudgement(answer=_redacted(answer, cand, statement), model=completion.model,
                        cost_usd=completion.cost_usd, cached=completion.cached)


def llm_judge(cand: Candidate, verdict: Verdict, statement: str,
              client: LLMClient | None) -> Verdict:
    """``verdict`` with the LLM judge's scores in evidence, sent to review when one is low.

    Args:
        cand: the candidate (its gold patch is shown to the model as hidden context only).
        verdict: the judge's verdict; only ``accept`` is looked at.
        statement: the problem statement the solver will get.
        client: the model; None, no model, or ``judge`` off: ``verdict`` unchanged, no call.

    Returns:
        ``verdict`` unchanged (not accepted, or judge off); with ``llm_judge_error`` in
        evidence (the call or its answer failed: status unchanged); with the scores in
        evidence and status ``review`` (a score below the threshold) or still ``accept``.
    """
    if verdict.status is not Status.accept or client is None or not judge_enabled(client):
        return verdict
    threshold = client.settings.judge_threshold
    try:
        judgement = score_task(cand, verdict.fail_to_pass, statement, client)
    except (LLMError, BudgetExceeded) as exc:
        log.warning("LLM judge of %s failed: %s", cand.instance_id, exc)
        return _with_error(verdict, redact(str(exc), cand, statement), exc)
    evidence = {**verdict.evidence, **judgement.evidence(threshold)}
    low = judgement.low_scores(threshold)
    if not low:
        return verdict.model_copy(update={"evidence": evidence})
    reason = REASON_UNSOLVABLE if low[0].aspect == "solvability" else REASON_UNCLEAR
    detail = "; ".join(f"LLM judge: {s.aspect} {s.score}/5 (below {threshold}): {s.rationale}"
                       for s in low)
    return verdict.model_copy(update={"status": Status.review, "reason": reason,
                                      "detail": detail, "evidence": evidence})


def _with_error(verdict: Verdict, message: str, exc: Exception) -> Verdict:
    evidence = {**verdict.evidence, EVIDENCE_ERROR: _clip(message, 500).strip()}
    if isinstance(exc, MalformedJudgeAnswer) and exc.completion is not None:
        evidence.update(_call_evidence(exc.completion))
    return verdict.model_copy(update={"evidence": evidence})
