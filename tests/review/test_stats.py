"""Throughput and agreement, over decisions made through a real queue (every database of the
``queue`` fixture), checked against numbers worked out by hand in the comments."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from repogym.datasets.review import ReviewAction, ReviewQueue, ReviewState
from repogym.datasets.review.stats import Agreement, cohen_kappa, review_stats
from repogym.schemas.records import Status
from tests.review.conftest import FLAGGED_AT, judged, write_flagged

T0 = FLAGGED_AT + timedelta(days=1)  # decisions start a day after the flags
NOW = T0 + timedelta(hours=12)
A, R = ReviewAction.approve, ReviewAction.reject
SL, PROBE, UND = "statement_leak", "probe:conftest_force_pass", "underspecified"

# item n (flagged at FLAGGED_AT + n minutes): its reason, then alice's and bob's decisions
# (action, label, severity), then carol's when they disagree. Decided at T0 + n hours, carol
# at T0 + 10 hours. n = 8: one reviewer only; n = 9: never decided.
PLAN: dict[int, tuple[str, list[tuple[str, ReviewAction, str, str]]]] = {
    0: (SL, [("alice", A, "sound", "none"), ("bob", A, "sound", "none")]),
    1: (SL, [("alice", A, "sound", "none"), ("bob", A, "statement_leak", "minor")]),
    2: (SL, [("alice", R, "statement_leak", "major"), ("bob", R, "statement_leak", "severe")]),
    3: (SL, [("alice", A, "sound", "none"), ("bob", R, "underspecified", "major"),
             ("carol", A, "sound", "minor")]),
    4: (PROBE, [("alice", R, "trivial", "major"), ("bob", A, "sound", "none"),
                ("carol", R, "trivial", "severe")]),
    5: (PROBE, [("alice", A, "sound", "none"), ("bob", A, "sound", "none")]),
    6: (UND, [("alice", A, "sound", "none"), ("bob", A, "underspecified", "minor")]),
    7: (UND, [("alice", A, "sound", "none"), ("bob", R, "misleading", "major")]),  # disputed
    8: (SL, [("alice", A, "sound", "none")]),
    9: (SL, []),
}


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def decided(queue: ReviewQueue) -> ReviewQueue:
    """A queue after :data:`PLAN`, every decision made through the queue's API."""
    root = queue.store.root
    for n, (reason, _) in PLAN.items():
        write_flagged(root, 1, start=100 + n, reason=reason)
    queue.sync()
    ids = {n: judged(100 + n).candidate.instance_id for n in PLAN}
    queue.require_two([ids[n] for n in range(8)])
    clock = Clock(T0)
    queue.clock = clock
    for n, (_, decisions) in PLAN.items():
        for who, action, label, severity in decisions:
            clock.now = T0 + timedelta(hours=10 if who == "carol" else n)
            queue.decide(ids[n], who, action, label=label, severity=severity,
                         note="" if action is A else f"{who}: {label}")
    return queue


def flagged(n: int) -> datetime:
    return FLAGGED_AT + timedelta(minutes=100 + n)


def test_the_plan_settled_as_expected(decided: ReviewQueue) -> None:
    items = {i.instance_id: i for i in decided.list("all")}
    states = {n: items[judged(100 + n).candidate.instance_id] for n in PLAN}
    assert {n: (i.state.value, i.disputed) for n, i in states.items()} == {
        0: ("approved", False), 1: ("approved", False), 2: ("rejected", False),
        3: ("approved", True), 4: ("rejected", True), 5: ("approved", False),
        6: ("approved", False), 7: ("pending", True), 8: ("approved", False),
        9: ("pending", False)}
    assert states[3].reviewer == states[4].reviewer == "carol"


def test_throughput(decided: ReviewQueue) -> None:
    stats = review_stats(decided.list("all"), now=NOW)
    assert stats.decisions == 19 and stats.since is None
    # all time: from the first decision (T0) to now is half a day, counted as one day
    assert (stats.days, stats.per_day) == (1.0, 19.0)
    assert [(r.reviewer, r.approved, r.rejected, r.decisions) for r in stats.reviewers] == [
        ("alice", 7, 2, 9), ("bob", 5, 3, 8), ("carol", 1, 1, 2)]
    # n = 7 and 9, and the fixture's three (flagged at FLAGGED_AT + 0, 1, 2 minutes)
    assert (stats.pending, stats.disputed) == (5, 1)
    assert stats.oldest_pending_hours == pytest.approx(36.0)
    # flag to final decision: n hours after T0 (carol's at 10 h), minus the flag's minutes
    waits = {0: 24 + 0, 1: 24 + 1, 2: 24 + 2, 3: 24 + 10, 4: 24 + 10, 5: 24 + 5, 6: 24 + 6,
             8: 24 + 8}
    hours = sorted(h - (100 + n) / 60 for n, h in waits.items())
    assert stats.median_hours_to_decision == pytest.approx((hours[3] + hours[4]) / 2)
    # the middle two: n = 5 (29 h - 105 min) and n = 6 (30 h - 106 min)
    assert stats.median_hours_to_decision == pytest.approx((59 - 211 / 60) / 2)


def test_throughput_in_a_window(decided: ReviewQueue) -> None:
    stats = review_stats(decided.list("all"), days=0.25, now=NOW)  # the last 6 hours
    assert stats.since == NOW - timedelta(hours=6) == T0 + timedelta(hours=6)
    # at T0 + 6 h and later: n = 6 (alice, bob), 7 (alice, bob), 8 (alice), carol's two
    assert (stats.decisions, stats.days, stats.per_day) == (7, 0.25, 28.0)
    assert [(r.reviewer, r.approved, r.rejected) for r in stats.reviewers] == [
        ("alice", 3, 0), ("bob", 1, 1), ("carol", 1, 1)]
    # final decisions in the window: n = 3, 4 (carol at 10 h), 6 (6 h), 8 (8 h)
    # 34 h - 103 min, 34 h - 104 min, 30 h - 106 min, 32 h - 108 min: the middle two are n = 8, 4
    assert stats.median_hours_to_decision == pytest.approx((66 - 212 / 60) / 2)
    assert stats.agreement == review_stats(decided.list("all"), now=NOW).agreement


def test_agreement_per_reason_and_overall(decided: ReviewQueue) -> None:
    stats = review_stats(decided.list("all"), now=NOW)
    # the first two decisions of items 0..7 (actions of alice, bob):
    #   statement_leak   n0 AA, n1 AA, n2 RR, n3 AR: action 3/4; labels same in n0, n2: 2/4
    #     alice A3 R1, bob A2 R2: chance (3*2 + 1*2)/16 = 1/2; kappa (3/4 - 1/2)/(1/2) = 1/2
    #   probe            n4 RA, n5 AA: action 1/2; labels same in n5: 1/2
    #     alice A1 R1, bob A2 R0: chance (1*2 + 1*0)/4 = 1/2; kappa (1/2 - 1/2)/(1/2) = 0
    #   underspecified   n6 AA, n7 AR: action 1/2; labels never the same: 0
    #     alice A2 R0, bob A1 R1: chance (2*1 + 0*1)/4 = 1/2; kappa 0
    #   all 8 pairs: action 5/8; labels same in n0, n2, n5: 3/8
    #     alice A6 R2, bob A5 R3: chance (6*5 + 2*3)/64 = 9/16;
    #     kappa (5/8 - 9/16)/(1 - 9/16) = (1/16)/(7/16) = 1/7
    assert stats.agreement[:3] == (
        Agreement(reason=PROBE, pairs=2, action=0.5, label=0.5, kappa=0.0),
        Agreement(reason=SL, pairs=4, action=0.75, label=0.5, kappa=0.5),
        Agreement(reason=UND, pairs=2, action=0.5, label=0.0, kappa=0.0),
    )
    [every] = [a for a in stats.agreement if a.reason == "all"]
    assert (every.pairs, every.action, every.label) == (8, 5 / 8, 3 / 8)
    assert every.kappa == pytest.approx(1 / 7)


def test_lines_summarise_it(decided: ReviewQueue) -> None:
    lines = review_stats(decided.list("all"), now=NOW).lines()
    assert lines[0] == ("19 decision(s) all time (19.0/day); 5 pending (1 disputed), "
                        "oldest 36.0h")
    assert lines[1] == "median flag-to-decision: 27.7h"
    assert "  alice: 9 (7 approved, 2 rejected)" in lines
    assert ("  agreement [all] over 8 pair(s): action 62%, reason 38%, kappa 0.14") in lines
    assert "  agreement [statement_leak] over 4 pair(s): action 75%, reason 50%, kappa 0.50" \
        in lines


def test_no_decisions_yet(queue: ReviewQueue) -> None:
    stats = review_stats(queue.list("all"), now=FLAGGED_AT + timedelta(hours=3))
    assert (stats.decisions, stats.per_day, stats.reviewers, stats.agreement) == (0, 0.0, (), ())
    assert (stats.pending, stats.disputed) == (3, 0)
    assert stats.oldest_pending_hours == pytest.approx(3.0)
    assert stats.median_hours_to_decision is None
    assert stats.lines()[1] == "median flag-to-decision: -"


def test_everyone_always_approving_leaves_kappa_undefined(queue: ReviewQueue,
                                                          flagged_ids: list[str]) -> None:
    queue.require_two(flagged_ids)
    for iid in flagged_ids:
        queue.approve(iid, "alice")
        queue.approve(iid, "bob")
    [one, every] = review_stats(queue.list("all")).agreement
    assert (one.reason, one.pairs, one.action, one.label, one.kappa) == (SL, 3, 1.0, 1.0, None)
    assert every.reason == "all" and every.kappa is None
    assert "kappa" not in review_stats(queue.list("all")).lines()[-1]


def test_single_reviews_make_no_pairs(queue: ReviewQueue, flagged_ids: list[str]) -> None:
    queue.approve(flagged_ids[0], "alice")
    queue.reject(flagged_ids[1], "bob", "no", label="trivial")
    stats = review_stats(queue.list("all"))
    assert stats.agreement == () and stats.decisions == 2
    assert {i.instance_id: i.state for i in queue.list("all")} == {
        flagged_ids[0]: ReviewState.approved, flagged_ids[1]: ReviewState.rejected,
        flagged_ids[2]: ReviewState.pending}


@pytest.mark.parametrize("pairs, expected", [
    ([], None),
    ([(A, A)] * 4, None),  # chance agreement 1: undefined
    ([(A, A), (R, R)], 1.0),
    ([(A, R), (R, A)], -1.0),
    # 2x2 table a=20 (AA), b=5 (AR), c=10 (RA), d=15 (RR), n=50: observed 35/50 = 0.7;
    # first A 25 R 25, second A 30 R 20: chance (25*30 + 25*20)/2500 = 0.5; kappa 0.4
    ([(A, A)] * 20 + [(A, R)] * 5 + [(R, A)] * 10 + [(R, R)] * 15, 0.4),
    # observed 1/2; first A 2 R 0, second A 1 R 1: chance 1/2; kappa 0
    ([(A, A), (A, R)], 0.0),
])
def test_cohen_kappa_by_hand(pairs: list[tuple[ReviewAction, ReviewAction]],
                             expected: float | None) -> None:
    got = cohen_kappa(pairs)
    assert got == (None if expected is None else pytest.approx(expected))


def test_kappa_matches_the_textbook_formula_on_the_queue(decided: ReviewQueue) -> None:
    items = decided.list("all")
    pairs = [(i.decisions[0].action, i.decisions[1].action) for i in items
             if len(i.decisions) >= 2]
    n = len(pairs)
    p_o = sum(a == b for a, b in pairs) / n
    p_e = sum((sum(a == k for a, _ in pairs) / n) * (sum(b == k for _, b in pairs) / n)
              for k in (A, R))
    assert cohen_kappa(pairs) == pytest.approx((p_o - p_e) / (1 - p_e)) == pytest.approx(1 / 7)


def test_rejected_and_accepted_rows_are_not_in_the_queue(queue: ReviewQueue) -> None:
    ids = {i.instance_id for i in queue.list("all")}
    assert judged(50, status=Status.reject).candidate.instance_id not in ids
    assert judged(51, status=Status.accept).candidate.instance_id not in ids
    assert review_stats(queue.list("all")).pending == 3
