"""The loop shared by the LLM generators: pick functions, ask the model, keep good answers.

    targets (seeded order) ──prompt──▶ LLMClient ──answer──▶ splice ──▶ Candidate

Each function is asked about at most once. The loop stops at ``max_candidates``
candidates, after ``max_attempts`` questions, when the budget is spent
(:class:`BudgetExceeded`) or after ``MAX_CONSECUTIVE_ERRORS`` failed calls in a row (the
endpoint is probably down). Unusable answers are logged with their reason and skipped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Mapping

from repogym.generators.llm.client import Completion, LLMClient, Messages
from repogym.generators.llm.errors import BudgetExceeded, LLMError
from repogym.generators.llm.functions import FunctionTarget, RejectedAnswer, select_targets
from repogym.generators.llm.splice import splice_answer
from repogym.generators.procedural import runtime_sources
from repogym.patches import changed_lines, unified_diff
from repogym.schemas.records import Candidate, CandidateKind, Checkout
from repogym.toolchains.base import Toolchain

log = logging.getLogger(__name__)

MAX_CONSECUTIVE_ERRORS = 3


@dataclass(frozen=True)
class LLMGenerator:
    """What makes one LLM generator: its name, its prompt and how answers are cleaned.

    Attributes:
        name: stored as ``Candidate.generator`` and used as the cache ``purpose``.
        prompt: the chat messages for one function.
        strip_new_comments: drop comments the model added (they could point at a bug).
    """

    name: str
    prompt: Callable[[FunctionTarget], Messages]
    strip_new_comments: bool = False


def llm_candidates(gen: LLMGenerator, checkout: Checkout, toolchain: Toolchain,
                   client: LLMClient | None, *, seed: int, max_candidates: int,
                   lines: Mapping[str, set[int]] | None = None,
                   max_attempts: int | None = None) -> list[Candidate]:
    """Up to ``max_candidates`` candidates from ``gen``; [] when no model is configured.

    Args:
        gen: the generator (name, prompt, answer cleaning).
        checkout: the repository; its runtime sources are the targets.
        toolchain: tells test files apart (they are never targets).
        client: the model; None or a client without a model gives [].
        seed: decides the order of functions (and is sent to the model).
        max_candidates: the most candidates returned.
        lines: only functions covering these 1-based lines of these files.
        max_attempts: the most questions asked (default ``2 * max_candidates``).
    """
    if client is None or not client.enabled or max_candidates <= 0:
        return []
    files = runtime_sources(checkout.path, toolchain.is_runtime_source)
    targets = select_targets(checkout.path, files, seed=seed, salt=gen.name, lines=lines)
    attempts = max_attempts if max_attempts is not None else 2 * max_candidates
    out: list[Candidate] = []
    errors = 0
    for target in targets[:attempts]:
        try:
            completion = client.complete(gen.prompt(target), purpose=gen.name, seed=seed)
        except BudgetExceeded as exc:
            log.warning("%s: %s; stopping", gen.name, exc)
            break
        except LLMError as exc:
            errors += 1
            log.warning("%s: %s: %s", gen.name, target.qualname, exc)
            if errors >= MAX_CONSECUTIVE_ERRORS:
                break
            continue
        errors = 0
        cand = _candidate(gen, checkout, target, completion, toolchain.language)
        if cand is not None and all(c.bug_patch != cand.bug_patch for c in out):
            out.append(cand)
        if len(out) >= max_candidates:
            break
    return out


def _candidate(gen: LLMGenerator, checkout: Checkout, target: FunctionTarget,
               completion: Completion, language: str) -> Candidate | None:
    """The candidate for one answer, or None (logged) when the answer is unusable."""
    try:
        new_text = splice_answer(target, completion.text,
                                 strip_new_comments=gen.strip_new_comments)
    except RejectedAnswer as exc:
        log.info("%s: %s:%s rejected: %s", gen.name, target.path, target.qualname, exc)
        return None
    bug = unified_diff(target.path, target.text, new_text)
    gold = unified_diff(target.path, new_text, target.text)
    provenance = {"function": target.qualname, "line": str(target.line),
                  "model": completion.model, "cost_usd": f"{completion.cost_usd:.6f}",
                  "cached": str(completion.cached).lower()}
    return Candidate(kind=CandidateKind.synthetic, repo=checkout.name, language=language,
                     base_commit=checkout.commit, bug_patch=bug, gold_patch=gold,
                     generator=gen.name, mutator="", files=(target.path,),
                     lines=tuple(changed_lines(bug).get(target.path, [])),
                     provenance=provenance)
