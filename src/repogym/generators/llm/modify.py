"""LLM modifications: the model plants one subtle, realistic bug in a function.

Comments the model adds are removed (every comment not already in the function), so
nothing points at the change; the signature must stay the same.
"""

from __future__ import annotations

from typing import Mapping

from repogym.generators.llm.candidates import LLMGenerator, llm_candidates
from repogym.generators.llm.client import LLMClient, Messages
from repogym.generators.llm.functions import FunctionTarget
from repogym.generators.llm.rewrite import context_block
from repogym.generators.registry import GenerationRequest
from repogym.schemas.records import Candidate, Checkout
from repogym.toolchains.base import Toolchain

GENERATOR = "llm_modify"

SYSTEM = ("You are an expert Python developer helping build a debugging exercise: you "
          "introduce realistic bugs that careful code review could still miss.")

TASK = """\
Here is the function `{qualname}` from `{path}`.

{context}```python
{code}```

Introduce exactly one subtle, realistic bug into it: a mistake a competent developer
could make (an off-by-one, a wrong comparison or operator, a missed edge case, a swapped
argument, a wrong default, a wrong variable). Rules:
- the code must still be valid Python and keep exactly the same signature;
- it should still look plausible at a glance; change only what the bug needs;
- do not add comments or docstrings, and do not mention the bug anywhere.
Reply with the whole modified function in one ```python block and nothing else."""


def modify_prompt(target: FunctionTarget) -> Messages:
    """The chat messages asking for a buggy version of ``target``."""
    task = TASK.format(qualname=target.qualname, path=target.path,
                       context=context_block(target), code=target.code)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]


MODIFY = LLMGenerator(name=GENERATOR, prompt=modify_prompt, strip_new_comments=True)


def modify_candidates(checkout: Checkout, toolchain: Toolchain, client: LLMClient | None, *,
                      seed: int, max_candidates: int,
                      lines: Mapping[str, set[int]] | None = None,
                      max_attempts: int | None = None) -> list[Candidate]:
    """Up to ``max_candidates`` planted-bug candidates (``generator="llm_modify"``).

    Same selection and arguments as :func:`~repogym.generators.llm.rewrite.rewrite_candidates`;
    the model sees the whole function and returns it with one bug. Returns [] when no
    model is configured.
    """
    return llm_candidates(MODIFY, checkout, toolchain, client, seed=seed,
                          max_candidates=max_candidates, lines=lines, max_attempts=max_attempts)


def llm_modify(request: GenerationRequest) -> list[Candidate]:
    """The ``llm_modify`` generator (:mod:`repogym.generators.registry`)."""
    return modify_candidates(request.checkout, request.toolchain, request.client,
                              seed=request.seed, max_candidates=request.max_candidates,
                              lines=request.lines)
