"""Reading call traces: the calls an F2P test made in the broken and in the gold state.

The broken run's calls are matched to the gold run's (:func:`_pairs`); a call whose
outcome differs is a broken behaviour, and its gold counterpart says what it should do
(:func:`traced`). A traced result also tells which side of a failed comparison the code
computed (:func:`traced_side`), and a test's only traced call names what it did
(:func:`traced_call`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from repogym.generators.statements.messages import TIMEOUT
from repogym.generators.statements.observed import Comparison, Observed
from repogym.generators.statements.values import display, same_value
from repogym.schemas.calls import CallKind, CallRecord, StatementEvidence


def from_record(record: CallRecord) -> Observed:
    """What the broken call did (its counterpart's outcome is added by the caller)."""
    call = display(record.call)
    if record.receiver and not record.shows_receiver and record.kind is not CallKind.property \
            and not re.fullmatch(r"<\w+ object>", record.receiver):
        call = f"{call}` on `{display(record.receiver)}"
    hung = not record.finished or bool(record.raised and TIMEOUT.search(record.raised))
    shown = record.result if record.gives_result else None
    return Observed(function=record.api, call=call,
                    returns=None if shown is None else display(shown),
                    raises=None if hung or record.raised is None else display(record.raised),
                    hangs=hung)


def _with_expected(observed: Observed, gold: CallRecord | None) -> Observed:
    """``observed`` with what the gold run's call did as what it should do."""
    if gold is None or not gold.finished:
        return observed
    if gold.raised is not None:
        return replace(observed, should_raise=display(gold.raised))
    if not gold.gives_result:  # pickle.dumps: its bytes are not __reduce__'s tuple
        return observed
    return replace(observed, should_return=display(gold.result or ""))


def _pairs(broken: Sequence[CallRecord],
           gold: Sequence[CallRecord]) -> list[tuple[CallRecord, CallRecord | None]]:
    """Each broken call with the same call in the gold run (in order; None: no match)."""
    used: set[int] = set()
    out: list[tuple[CallRecord, CallRecord | None]] = []
    for rec in broken:
        match = next((i for i, g in enumerate(gold) if i not in used and rec.same_call(g)), None)
        if match is None:  # the instance's state may differ: the same call on it
            match = next((i for i, g in enumerate(gold) if i not in used
                          and (g.function, g.kind, g.args) == (rec.function, rec.kind, rec.args)),
                         None)
        if match is not None:
            used.add(match)
        out.append((rec, None if match is None else gold[match]))
    return out


def _shows(message: str, value: str) -> bool:
    """The message shows ``value`` as a whole token (``7`` in ``assert 7 == 9``)."""
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.])", message) is not None


def traced(test: str, ev: StatementEvidence) -> Observed | None:
    """The first traced call of ``test`` that the bug changes, with what it should do.

    A call whose broken result the failure message shows is preferred; a call still
    running when the run was stopped, in a test that hung, is that test's behaviour.
    """
    if ev.broken is None or ev.gold is None:
        return None
    message = ev.messages.get(test, "")
    hung = test in ev.hung or bool(TIMEOUT.search(message))  # else a stop says nothing
    changed = [(b, g) for b, g in _pairs(ev.broken.of(test), ev.gold.of(test))
               if (b.finished and g is not None and not b.same_outcome(g))
               or (not b.finished and hung)]
    if not changed:
        return None
    shown = [(b, g) for b, g in changed if b.result and _shows(message, b.result)]
    broken, gold = (shown or changed)[0]
    found = _with_expected(from_record(broken), gold)
    return found if found.says_something else None  # the message may say what it gives


def traced_call(test: str, ev: StatementEvidence) -> CallRecord | None:
    """The one call the broken run traced for ``test``, to say what the test did."""
    calls = ev.broken.of(test) if ev.broken is not None else ()
    return calls[0] if len(calls) == 1 else None


def traced_side(comparison: Comparison, test: str,
                ev: StatementEvidence) -> tuple[int | None, str | None]:
    """Which side a traced call's result is: the broken run's (computed) or the gold's."""
    for trace, is_broken in ((ev.broken, True), (ev.gold, False)):
        for rec in trace.of(test) if trace is not None else ():
            if rec.result is None or not rec.gives_result:
                continue
            hits = [i for i, side in enumerate(comparison.sides) if same_value(side, rec.result)]
            if len(hits) == 1 and not same_value(*comparison.sides):
                return (hits[0] if is_broken else 1 - hits[0]), from_record(rec).call
    return None, None
