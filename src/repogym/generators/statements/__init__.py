"""Offline problem statements: an issue written from what the failing tests observed.

The statement names each broken behaviour as a user meets it -- the public call, what it
returns (or raises, or that it never returns) and what it should return -- from the best
evidence there is (:class:`~repogym.schemas.calls.StatementEvidence`):

1. **call traces** of the F2P tests in the broken and the gold state: per test, the first
   call whose outcome differs (one whose broken result the failure message shows first);
2. the **failure message**, read for which side of a comparison the test computes: pytest's
   ``where`` lines, the test's source (a literal on one side), or a traced call's result;
   when nothing tells, both values are given *without* saying which is which -- many suites
   write ``assert expected == actual``, so the side of ``==`` proves nothing;
3. the message itself, scrubbed, when it reads as nothing above.

Every broken function gets its own sentences (a combined bug breaks several). The wording
(title, opening, sentence forms, closing) is one of several, chosen from the candidate's
instance id, so the same candidate always reads the same and no one template dominates.
A statement never shows an object address, a test's name or a name only the tests know,
and never quotes a line of the patch (:func:`leaks`; such a sentence is dropped).

The modules, in the order the evidence flows:

===========  =============================================================================
module       holds
===========  =============================================================================
observed     :class:`Observed` (one broken behaviour) and ``Comparison`` (a failed check)
values       :func:`scrub` and how a value is shown and compared
traces       reading call traces: the first call the bug changes, and its gold outcome
messages     reading pytest's and unittest's failure messages
sources      reading a test's source (ast): which side of a comparison is computed
reading      :func:`observe`: the best of the three for one test
wording      templates picked per candidate, titles, the final text; :func:`leaks`
===========  =============================================================================

This module holds the public functions: :func:`offline_statement`, :func:`observations`
(the same reading for a model's prompt), :func:`with_observations` (under a statement from
elsewhere) and :func:`evidence_from_messages`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from repogym.generators.statements.observed import Observed
from repogym.generators.statements.reading import observe, read_all
from repogym.generators.statements.values import MAX_VALUE, scrub
from repogym.generators.statements.wording import (
    MAX_EXAMPLES,
    MAX_FUNCTIONS,
    MIN_LEAK_CHARS,
    leaks,
    sentence,
    write_statement,
)
from repogym.schemas.calls import StatementEvidence
from repogym.schemas.records import Candidate

__all__ = ["MAX_EXAMPLES", "MAX_FUNCTIONS", "MAX_OBSERVED", "MAX_VALUE", "MIN_LEAK_CHARS",
           "Observed", "evidence_from_messages", "leaks", "observations", "observe",
           "offline_statement", "scrub", "with_observations"]

MAX_OBSERVED = 4  # behaviours added under a statement from elsewhere


def offline_statement(cand: Candidate, evidence: StatementEvidence) -> str:
    """An issue-style statement of ``cand``'s bug, from ``evidence`` (see the module doc):
    every broken behaviour, what it does and what it should do, in a user's words; never
    an address, a test's name or a line of the patch. The same input gives the same text."""
    observed, unread = read_all(evidence)
    return write_statement(cand, evidence, observed, unread)


def observations(evidence: StatementEvidence) -> list[str]:
    """What the failing tests show, one plain sentence per behaviour (for a model's prompt;
    the same reading as :func:`offline_statement`, in its plainest wording)."""
    out = []
    for test in evidence.fail_to_pass:
        found = observe(test, evidence)
        text = sentence(found, None) if found is not None else None
        if text and text not in out:
            out.append(text)
    return out


def with_observations(text: str, evidence: StatementEvidence) -> str:
    """A statement from elsewhere (a mined fix's cleaned commit message) with what the
    failing tests show under it, when they show anything."""
    facts = observations(evidence)[:MAX_OBSERVED]
    if not facts:
        return text
    return text.rstrip() + "\n\nWhat I see:\n\n" + "".join(f"- {f}\n" for f in facts)


def evidence_from_messages(f2p: Sequence[str], messages: Mapping[str, str]) -> StatementEvidence:
    """Evidence without call traces: the F2P tests and their failure messages (other keys of
    ``messages``, such as a verdict's ``"oracle"``, are ignored)."""
    return StatementEvidence(fail_to_pass=tuple(f2p),
                             messages={t: messages[t] for t in f2p if t in messages})
