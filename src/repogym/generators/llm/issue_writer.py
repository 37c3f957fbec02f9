"""Problem statements written by a model, checked, with the offline writer as a net.

The model sees the bug's diff (to understand it), what the failing tests observe (the
calls they make, what those return now and should return: the offline writer's reading
of the :class:`~repogym.schemas.calls.StatementEvidence`) and the failing checks' output
(with the tests' names blanked), and writes the issue a user would file. Its text is thrown
away for :func:`~repogym.generators.statements.offline_statement` when it gives the fix
away (:func:`~repogym.generators.leaks.statement_leaks`: a quoted line of the gold patch, a
name the fix introduces, an approach sentence), quotes a line of the bug patch, names a
failing test or its file, is empty, or when the call fails or the budget is spent.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence

from repogym.generators.leaks import LeakKind, statement_leaks, verbatim_lines
from repogym.generators.llm.client import LLMClient, Messages
from repogym.generators.llm.errors import BudgetExceeded, LLMError
from repogym.generators.statements import observations, offline_statement
from repogym.schemas.calls import StatementEvidence
from repogym.schemas.records import Candidate

log = logging.getLogger(__name__)

PURPOSE = "llm_statement"
MAX_FAILURES = 3
MAX_FAILURE_CHARS = 1500
_OUTER_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n?```\s*$", re.DOTALL)

SYSTEM = ("You write GitHub issues as a user of a Python project who ran into a bug. You "
          "describe what you saw and what you expected, never how to fix it.")

TASK = """\
A recent change broke `{subject}`. For your understanding only, this is the change:
```diff
{diff}```

What the failing checks observe (a call as a user makes it, what it does now, what it
should do instead):
{observed}

What the project's checks now report:
{failures}

Write the issue a user of the project would file about the broken behaviour: a title
line starting with "# ", what they did, what happened, what they expected; a short
example using the public API is welcome. Rules:
- never reveal or hint at the fix, and never quote or paraphrase code from the change;
- never name tests, test functions or test files;
- do not mention that you saw a diff.
Reply with the issue text in Markdown and nothing else."""


def test_names(f2p: Sequence[str]) -> list[str]:
    """The names a statement must not contain: each test's function and file."""
    names: set[str] = set()
    for nodeid in f2p:
        parts = nodeid.split("::")
        names.add(parts[-1].split("[")[0])
        if len(parts) > 1:
            names.add(parts[0])
            names.add(parts[0].rsplit("/", 1)[-1])
    return sorted(n for n in names if n)


def names_a_test(text: str, f2p: Sequence[str]) -> list[str]:
    """The test names (see :func:`test_names`) that appear in ``text`` as words."""
    return [n for n in test_names(f2p) if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", text)]


def _failures(f2p: Sequence[str], messages: Mapping[str, str]) -> str:
    """The failing checks' output, names blanked, as prompt text."""
    names = sorted(test_names(f2p), key=len, reverse=True)
    blocks = []
    for nodeid in f2p:
        text = messages.get(nodeid, "").strip()
        for name in [nodeid, *names]:
            text = text.replace(name, "<a check>")
        if text and text not in blocks:
            blocks.append(text[:MAX_FAILURE_CHARS])
        if len(blocks) >= MAX_FAILURES:
            break
    if not blocks:
        return "(the checks fail without a message)"
    return "\n".join(f"```\n{b}\n```" for b in blocks)


def _observed(evidence: StatementEvidence) -> str:
    """The observed behaviours as prompt text, names blanked like the failures."""
    lines = observations(evidence)
    names = sorted(test_names(evidence.fail_to_pass), key=len, reverse=True)
    blanked = []
    for line in lines:
        for name in names:
            line = line.replace(name, "<a check>")
        blanked.append(f"- {line}")
    return "\n".join(blanked) if blanked else "(nothing more than the checks' output below)"


def statement_prompt(cand: Candidate, evidence: StatementEvidence) -> Messages:
    """The chat messages asking for an issue about ``cand``, from ``evidence``."""
    subject = cand.provenance.get("function") or (cand.files[0] if cand.files else "the library")
    task = TASK.format(subject=subject, diff=cand.bug_patch, observed=_observed(evidence),
                       failures=_failures(evidence.fail_to_pass, evidence.messages))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]


def _unfence(text: str) -> str:
    match = _OUTER_FENCE.match(text.strip())
    return (match.group(1) if match else text).strip() + "\n"


def statement_problems(text: str, cand: Candidate, f2p: Sequence[str]) -> list[str]:
    """Why a statement cannot be used; [] when fine.

    Each leak of the fix (:func:`~repogym.generators.leaks.statement_leaks`, named by its
    kind and fragment), each line of the bug patch it quotes (one the gold patch also has is
    reported once), each failing test or test file it names, and "empty".
    """
    found = statement_leaks(text, cand.gold_patch, cand.test_patch)
    problems = [f"leaks the fix ({leak.kind.value}): {leak.fragment!r}" for leak in found]
    quoted = {leak.fragment for leak in found if leak.kind is LeakKind.verbatim_line}
    problems += [f"quotes the bug patch: {line!r}"
                 for line in verbatim_lines(text, cand.bug_patch) if line not in quoted]
    problems += [f"names a test: {name!r}" for name in names_a_test(text, f2p)]
    if not text.strip():
        problems.append("empty")
    return problems


def llm_statement(cand: Candidate, evidence: StatementEvidence,
                  client: LLMClient | None) -> tuple[str, float]:
    """An issue-style problem statement for ``cand`` and what writing it cost (USD).

    Args:
        cand: the candidate (its bug patch is shown to the model, never to the solver).
        evidence: what the failing tests showed (F2P ids, messages, call traces).
        client: the model; None or one without a model gives the offline statement.

    Returns:
        The model's statement, or :func:`offline_statement` when there is no model, the
        call fails, the budget is spent or the text leaks; and the cost spent (0.0 when
        cached or offline, the call's cost even when its text was thrown away).
    """
    return _written(cand, evidence, client)


def _written(cand: Candidate, evidence: StatementEvidence,
             client: LLMClient | None) -> tuple[str, float]:
    if client is None or not client.enabled:
        return offline_statement(cand, evidence), 0.0
    try:
        completion = client.complete(statement_prompt(cand, evidence), purpose=PURPOSE, seed=0)
    except (LLMError, BudgetExceeded) as exc:
        log.warning("LLM statement for %s failed (%s); using the offline writer",
                    cand.instance_id, exc)
        return offline_statement(cand, evidence), 0.0
    text = _unfence(completion.text)
    problems = statement_problems(text, cand, evidence.fail_to_pass)
    if problems:
        log.info("LLM statement for %s rejected: %s", cand.instance_id, "; ".join(problems))
        return offline_statement(cand, evidence), completion.cost_usd
    return text, completion.cost_usd
