"""Synthetic candidates: procedural mutations of runtime code turned into Candidates.

bug_patch = HEAD -> mutated; gold_patch = its reverse; test_patch empty (tests unchanged).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from repogym.generators.procedural import Mutation, generate_mutations, runtime_sources
from repogym.generators.registry import GenerationRequest
from repogym.schemas.records import Candidate, CandidateKind, Checkout
from repogym.toolchains.base import Toolchain

GENERATOR = "procedural"


def candidate_from_mutation(m: Mutation, checkout: Checkout, language: str = "python"
                            ) -> Candidate:
    provenance = {"description": m.description, "line": str(m.line)}
    if m.function:
        provenance["function"] = m.function
    return Candidate(kind=CandidateKind.synthetic, repo=checkout.name, language=language,
                     base_commit=checkout.commit, bug_patch=m.bug_patch,
                     gold_patch=m.gold_patch, generator=GENERATOR, mutator=m.mutator,
                     files=(m.path,), lines=(m.line,), provenance=provenance)


def synthetic_candidates(checkout: Checkout, toolchain: Toolchain, *, seed: int,
                         max_candidates: int, mutators: Sequence[str] | None = None,
                         lines: Mapping[str, set[int]] | None = None) -> list[Candidate]:
    """Up to ``max_candidates`` mutation candidates for the checkout, deterministic in ``seed``."""
    files = runtime_sources(checkout.path, toolchain.is_runtime_source)
    muts = generate_mutations(checkout.path, files, seed=seed, max_candidates=max_candidates,
                              mutators=mutators, lines=lines)
    return [candidate_from_mutation(m, checkout, toolchain.language) for m in muts]


def procedural(request: GenerationRequest) -> list[Candidate]:
    """The ``procedural`` generator (:mod:`repogym.generators.registry`)."""
    return synthetic_candidates(request.checkout, request.toolchain, seed=request.seed,
                                max_candidates=request.max_candidates, lines=request.lines)
