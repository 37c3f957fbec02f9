"""LLM rewrites: the model reimplements a function from its signature and docstring.

Whatever it gets wrong is the bug (SWE-smith's "LM rewrite"): a natural slip, not a
planted one. Rewrites identical to the original (syntax-tree equal) are dropped.
"""

from __future__ import annotations

from typing import Mapping

from repogym.generators.llm.candidates import LLMGenerator, llm_candidates
from repogym.generators.llm.client import LLMClient, Messages
from repogym.generators.llm.functions import FunctionTarget
from repogym.generators.registry import GenerationRequest
from repogym.schemas.records import Candidate, Checkout
from repogym.toolchains.base import Toolchain

GENERATOR = "llm_rewrite"

SYSTEM = ("You are an expert Python developer. You write correct, idiomatic code that fits "
          "the module it lives in.")

TASK = """\
Implement the body of the function `{qualname}` in `{path}`.

{context}The function, with its body removed:
```python
{stub}```

Write a complete, working implementation that does what the name, signature and
docstring describe. Keep the signature exactly as it is. Use only builtins, the names
imported above, the parameters and attributes the code clearly has.
Reply with the whole function definition in one ```python block and nothing else."""


def context_block(target: FunctionTarget) -> str:
    """The module's imports and the enclosing class header, as prompt text."""
    parts = []
    if target.imports:
        parts.append("The module's imports:\n```python\n" + "\n".join(target.imports) + "\n```\n")
    if target.class_header:
        parts.append(f"It is a method of:\n```python\n{target.class_header}\n    ...\n```\n")
    return "\n".join(parts) + ("\n" if parts else "")


def rewrite_prompt(target: FunctionTarget) -> Messages:
    """The chat messages asking for a reimplementation of ``target``."""
    task = TASK.format(qualname=target.qualname, path=target.path,
                       context=context_block(target), stub=target.stub)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]


REWRITE = LLMGenerator(name=GENERATOR, prompt=rewrite_prompt)


def rewrite_candidates(checkout: Checkout, toolchain: Toolchain, client: LLMClient | None, *,
                       seed: int, max_candidates: int,
                       lines: Mapping[str, set[int]] | None = None,
                       max_attempts: int | None = None) -> list[Candidate]:
    """Up to ``max_candidates`` rewrite candidates (``generator="llm_rewrite"``).

    Functions (>= 3 statements, runtime code, not tests) are taken in an order fixed by
    ``seed``; the model sees the signature, docstring, the module's imports and the
    class header, and writes the body. Returns [] when no model is configured; stops
    quietly when the budget is spent. See :func:`llm_candidates` for the arguments.
    """
    return llm_candidates(REWRITE, checkout, toolchain, client, seed=seed,
                          max_candidates=max_candidates, lines=lines, max_attempts=max_attempts)


def llm_rewrite(request: GenerationRequest) -> list[Candidate]:
    """The ``llm_rewrite`` generator (:mod:`repogym.generators.registry`)."""
    return rewrite_candidates(request.checkout, request.toolchain, request.client,
                              seed=request.seed, max_candidates=request.max_candidates,
                              lines=request.lines)
