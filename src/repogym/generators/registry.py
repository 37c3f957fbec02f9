"""The candidate generators, by name: one table (:data:`GENERATORS`), each loaded on use.

    name          kind       makes
    procedural    synthetic  tree-sitter mutations of runtime code (no LLM)
    mined         history    real fixes from git history (:mod:`repogym.generators.mined`)
    llm_rewrite   synthetic  a function rewritten by an LLM with a bug in it
    llm_modify    synthetic  a bug planted by an LLM in a function

A synthetic generator is a function ``(GenerationRequest) -> list[Candidate]`` named by
``"module:function"``; it is imported only when a run uses it, so naming the generators (the
CLI's options, a corpus file's validation) stays cheap. The history generator has its own
stage (commits seen before, incremental walks: :func:`repogym.pipeline.mine_commits`), so it
has no such function. Adding a generator is one row here and its module; its conformance
test (``tests/generators/test_generator_conformance.py``) then runs on it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Callable, Mapping

from repogym.registry import Registry
from repogym.schemas.records import Candidate, Checkout
from repogym.toolchains.base import Toolchain

if TYPE_CHECKING:
    from repogym.generators.llm.client import LLMClient


class GeneratorKind(str, Enum):
    """Where a generator's candidates come from."""

    synthetic = "synthetic"  # bugs made from the code at one commit
    history = "history"  # fixes mined from the repository's history


@dataclass(frozen=True)
class GenerationRequest:
    """What a synthetic generator gets: the checkout, its toolchain, the budget and the
    seed, the lines worth targeting (covered by a passing test; None: all), and the LLM
    client (None, or disabled: LLM generators make nothing)."""

    checkout: Checkout
    toolchain: Toolchain
    seed: int
    max_candidates: int
    lines: Mapping[str, set[int]] | None = None
    client: LLMClient | None = None


Generate = Callable[[GenerationRequest], list[Candidate]]


class GeneratorEntry:
    """One row of the table: the generator's kind, what it needs, where its code lives."""

    name: str  # set by the registry

    def __init__(self, kind: GeneratorKind, description: str, target: str = "",
                 needs_llm: bool = False) -> None:
        self.kind, self.description, self.target, self.needs_llm = (kind, description, target,
                                                                    needs_llm)

    def load(self) -> Generate:
        """The generator's function (synthetic generators only)."""
        if not self.target:
            raise TypeError(f"generator {self.name!r} ({self.kind.value}) has no function")
        module, _, attr = self.target.partition(":")
        found: Generate = getattr(importlib.import_module(module), attr)
        return found


GENERATORS: Registry[GeneratorEntry] = Registry("generator")
_ROWS = (
    ("procedural", GeneratorEntry(GeneratorKind.synthetic, "tree-sitter mutations",
                                  "repogym.generators.synthetic:procedural")),
    ("mined", GeneratorEntry(GeneratorKind.history, "fixes mined from git history")),
    ("llm_rewrite", GeneratorEntry(GeneratorKind.synthetic, "a function rewritten by an LLM",
                                   "repogym.generators.llm.rewrite:llm_rewrite", needs_llm=True)),
    ("llm_modify", GeneratorEntry(GeneratorKind.synthetic, "a bug planted by an LLM",
                                  "repogym.generators.llm.modify:llm_modify", needs_llm=True)),
)
for _name, _entry in _ROWS:
    GENERATORS.register(_name)(_entry)

GENERATOR_NAMES: tuple[str, ...] = tuple(name for name, _ in _ROWS)
"""Every generator's name, in the table's order (the order a run generates in)."""


def synthetic_generators(names: tuple[str, ...] | list[str]) -> list[GeneratorEntry]:
    """The synthetic generators among ``names``, in the table's order.

    Raises:
        UnknownPluginError: a name no generator has.
    """
    for name in names:
        GENERATORS.get(name)
    return [GENERATORS.get(n) for n in GENERATOR_NAMES
            if n in names and GENERATORS.get(n).kind is GeneratorKind.synthetic]


def generate_all(names: tuple[str, ...] | list[str], request: GenerationRequest
                 ) -> list[Candidate]:
    """The candidates of every synthetic generator among ``names``, ``max_candidates``
    each; an LLM generator makes none without an enabled client."""
    out: list[Candidate] = []
    for entry in synthetic_generators(names):
        if entry.needs_llm and (request.client is None or not request.client.enabled):
            continue
        out += entry.load()(request)
    return out
