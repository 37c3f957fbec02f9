"""The team's workflow on a real database: claims, labelled decisions, double review, mending
and its re-verification, filters, schema migration, reviewers and sessions.

Every test but the last section runs on the ``queue`` fixture (so on each database it is
made for). Rule tests of mending use :class:`ScriptedVerifier`, a stand-in that answers what
the test tells it and runs no sandbox; the last section re-verifies real tasks (made by the
pipeline, :mod:`tests.review.real`) in real sandboxes with :func:`sandbox_verifier`.
"""

from __future__ import annotations

import multiprocessing
import shutil
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest
from sqlalchemy import (
    Boolean,
    DateTime,
    MetaData,
    Table,
    bindparam,
    inspect,
    select,
    text,
)

from repogym.datasets.review import (
    AlreadyReviewed,
    ClaimHeld,
    DecisionLabel,
    ItemFilter,
    MendDoesNotHold,
    Recheck,
    ReviewAction,
    ReviewConflict,
    ReviewQueue,
    ReviewState,
    Severity,
    StatementLeaks,
    approved_judged,
    check_decision,
    in_double_sample,
    is_sqlite,
)
from repogym.datasets.review.auth import (
    TOKEN_PREFIX,
    Reviewers,
    SignInFailed,
    csrf_ok,
    sha256,
    sign_in_required,
)
from repogym.datasets.review.schema import (
    METADATA,
    REVIEW_ITEMS,
    REVIEW_SESSIONS,
    REVIEWERS,
)
from repogym.datasets.review.verifier import sandbox_verifier
from repogym.datasets.store import DatasetStore
from repogym.errors import ConfigError, InfraError, InputError
from repogym.generators.leaks import statement_leaks
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Status
from tests.review.conftest import FLAGGED_AT, gold_diff, judged, write_flagged
from tests.review.real import RealReview, real_review  # noqa: F401 - a fixture

SPAWN = multiprocessing.get_context("spawn")  # as test_queue.py: no fork of a threaded suite
T0 = datetime(2024, 6, 3, 9, 0, tzinfo=timezone.utc)
CLEAN = "add() returns the wrong sum for some inputs."  # names nothing the fix introduces
F2P0 = "tests/test_ops.py::test_add_0"
P2P = ("tests/test_ops.py::test_sub", "tests/test_ops.py::test_mul")


class Clock:
    """The queue's clock, moved by the test."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock(queue: ReviewQueue) -> Clock:
    moved = Clock(T0)
    queue.clock = moved
    return moved


class ScriptedVerifier:
    """Not a sandbox: a stand-in verifier for rule tests that answers each call with the
    next scripted :class:`Recheck` (the last one again when the script runs out) and keeps
    the task rows it was asked about."""

    def __init__(self, *answers: Recheck) -> None:
        self.answers = list(answers)
        self.calls: list[TaskRow] = []

    def __call__(self, row: TaskRow) -> Recheck:
        self.calls.append(row)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


HELD = Recheck(held=True, detail="scripted: gold 1, empty 0")
FAILS = Recheck(held=False, detail="scripted: gold patch scores 0")
BROKEN = Recheck(error="scripted: the sandbox died")


def tasks_ids(queue: ReviewQueue) -> Counter[str]:
    return Counter(r.instance_id for r in queue.store.rows("tasks"))


def task_row(queue: ReviewQueue, instance_id: str) -> TaskRow:
    [row] = [r for r in queue.store.rows("tasks") if r.instance_id == instance_id]
    return row


# -- claims -----------------------------------------------------------------------------

def test_a_claim_keeps_everyone_else_out(queue: ReviewQueue, clock: Clock,
                                         flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    item = queue.claim(iid, "alice")
    assert (item.claimed_by, item.claimed_until) == ("alice", T0 + timedelta(minutes=30))
    assert item.holder(T0) == "alice"
    attempts = {
        "claim": lambda: queue.claim(iid, "bob"),
        "approval": lambda: queue.approve(iid, "bob"),
        "rejection": lambda: queue.reject(iid, "bob", "looks wrong"),
        "edit": lambda: queue.mend(iid, "bob", statement=CLEAN),
    }
    for verb, attempt in attempts.items():
        with pytest.raises(ClaimHeld, match=f"claimed by alice until 09:30:00 UTC; your "
                                            f"{verb} was not recorded") as info:
            attempt()
        assert (info.value.reviewer, info.value.until) == ("alice", T0 + timedelta(minutes=30))
        assert isinstance(info.value, ReviewConflict)
    after = queue.get(iid)
    assert (after.state, after.decisions, after.version, after.claimed_by) == (
        ReviewState.pending, (), 0, "alice")


def test_an_expired_claim_lets_another_reviewer_in(queue: ReviewQueue, clock: Clock,
                                                   flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    queue.claim(iid, "alice")
    clock.advance(minutes=29, seconds=59)
    with pytest.raises(ClaimHeld):
        queue.claim(iid, "bob")
    clock.advance(seconds=1)  # exactly when it ends
    item = queue.claim(iid, "bob")
    assert (item.claimed_by, item.claimed_until) == ("bob", clock.now + timedelta(minutes=30))
    with pytest.raises(ClaimHeld, match="claimed by bob") as info:
        queue.approve(iid, "alice")  # alice's claim is gone: bob's stands
    assert info.value.reviewer == "bob"
    assert queue.reject(iid, "bob", "the statement gives it away").reviewer == "bob"


def test_after_expiry_another_reviewer_may_decide_or_claim_and_mend(
        queue: ReviewQueue, clock: Clock, flagged_ids: list[str]) -> None:
    queue.claim(flagged_ids[0], "alice")
    queue.claim(flagged_ids[1], "alice")
    clock.advance(minutes=31)
    assert queue.approve(flagged_ids[0], "bob").reviewer == "bob"  # no claim needed
    with pytest.raises(InputError, match="claim it before mending"):
        queue.mend(flagged_ids[1], "bob", statement=CLEAN)
    queue.claim(flagged_ids[1], "bob")
    mended = queue.mend(flagged_ids[1], "bob", statement=CLEAN)
    assert (mended.version, mended.versions[0].editor) == (1, "bob")
    with pytest.raises(ClaimHeld, match="claimed by bob"):
        queue.mend(flagged_ids[1], "alice", statement=CLEAN + " Really.")


def test_claiming_again_renews_and_release_ends_it(queue: ReviewQueue, clock: Clock,
                                                   flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    queue.claim(iid, "alice")
    clock.advance(minutes=20)
    assert queue.claim(iid, "alice").claimed_until == T0 + timedelta(minutes=50)
    clock.advance(minutes=20)  # 40 minutes after the first claim: the renewal holds
    with pytest.raises(ClaimHeld):
        queue.claim(iid, "bob")
    assert queue.release(iid, "bob").claimed_by == "alice"  # not bob's to release
    released = queue.release(iid, "alice")
    assert (released.claimed_by, released.claimed_until) == ("", None)
    assert queue.claim(iid, "bob").claimed_by == "bob"


def test_a_claim_lasts_the_queues_claim_minutes(dataset: Path, queue: ReviewQueue,
                                                flagged_ids: list[str]) -> None:
    with ReviewQueue(DatasetStore(dataset), queue.url, claim_minutes=5,
                     clock=lambda: T0) as short:
        assert short.claim(flagged_ids[0], "alice").claimed_until == T0 + timedelta(minutes=5)
    with pytest.raises(ConfigError):
        ReviewQueue(DatasetStore(dataset), queue.url, claim_minutes=0)


def test_deciding_releases_the_claim(queue: ReviewQueue, clock: Clock,
                                     flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    queue.require_two([iid])
    queue.claim(iid, "alice")
    item = queue.approve(iid, "alice")
    assert item.state is ReviewState.pending  # one more reviewer needed
    assert (item.claimed_by, item.claimed_until, item.holder(clock.now)) == ("", None, "")
    assert queue.claim(iid, "bob").claimed_by == "bob"


def test_deciding_an_unclaimed_item_works_and_claims_nothing(
        queue: ReviewQueue, clock: Clock, flagged_ids: list[str]) -> None:
    item = queue.reject(flagged_ids[1], "bob", "duplicate of another task",
                        label="duplicate", severity="severe")
    assert (item.state, item.reviewer, item.label, item.severity) == (
        ReviewState.rejected, "bob", "duplicate", "severe")
    assert (item.claimed_by, item.decided_at) == ("", T0)


def test_a_decided_item_cannot_be_claimed(queue: ReviewQueue, clock: Clock,
                                          flagged_ids: list[str]) -> None:
    queue.approve(flagged_ids[0], "alice")
    with pytest.raises(ReviewConflict, match="already approved by alice") as info:
        queue.claim(flagged_ids[0], "bob")
    assert not isinstance(info.value, ClaimHeld)
    assert info.value.state is ReviewState.approved


def test_claimed_by_filter_shows_live_claims_only(queue: ReviewQueue, clock: Clock,
                                                  flagged_ids: list[str]) -> None:
    queue.claim(flagged_ids[0], "alice")
    queue.claim(flagged_ids[2], "alice")
    queue.claim(flagged_ids[1], "bob")
    mine = queue.list(ItemFilter(claimed_by="alice"))
    assert [i.instance_id for i in mine] == [flagged_ids[0], flagged_ids[2]]
    clock.advance(minutes=31)
    assert queue.list(ItemFilter(claimed_by="alice")) == []


def test_two_processes_claiming_at_once_one_wins(queue: ReviewQueue, dataset: Path) -> None:
    ids = write_flagged(dataset, 12, start=100)
    queue.sync()
    barrier, results = SPAWN.Barrier(2), SPAWN.Queue()
    procs = [SPAWN.Process(target=_claim_worker,
                           args=(str(dataset), queue.url, ids, n, barrier, results))
             for n in range(2)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in range(len(ids) * 2)]
    for p in procs:
        p.join(30)
    assert not [o for o in outcomes if o[2] == "error"], outcomes
    for iid in ids:
        mine = [o for o in outcomes if o[0] == iid]
        [winner] = [who for _, who, result, _ in mine if result == "won"]
        [(_, loser, _, named)] = [o for o in mine if o[2] == "lost"]
        assert loser != winner and named == winner  # the loser learns who holds it
        assert queue.get(iid).claimed_by == winner


def _claim_worker(root: str, url: str, ids: list[str], n: int, barrier: Any,
                  results: Any) -> None:
    with ReviewQueue(DatasetStore(Path(root)), url) as queue:
        for iid in ids:
            barrier.wait(60)
            who = f"reviewer{n}"
            try:
                queue.claim(iid, who)
                results.put((iid, who, "won", who))
            except ClaimHeld as exc:
                results.put((iid, who, "lost", exc.reviewer))
            except Exception as exc:  # noqa: BLE001 - any other failure fails the test
                results.put((iid, who, "error", repr(exc)))


def test_two_processes_double_reviewing_at_once_both_count(queue: ReviewQueue,
                                                           dataset: Path) -> None:
    """Both reviewers of a double-reviewed item decide at the same instant: both decisions
    are recorded, the item is settled once and published once."""
    ids = write_flagged(dataset, 8, start=200)
    queue.sync()
    assert queue.require_two(ids) == len(ids)
    barrier, results = SPAWN.Barrier(2), SPAWN.Queue()
    procs = [SPAWN.Process(target=_approve_worker,
                           args=(str(dataset), queue.url, ids, n, barrier, results))
             for n in range(2)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in range(len(ids) * 2)]
    for p in procs:
        p.join(30)
    assert all(o[2] == "won" for o in outcomes), outcomes
    for iid in ids:
        item = queue.get(iid)
        assert item.state is ReviewState.approved and item.published
        assert sorted(d.reviewer for d in item.decisions) == ["reviewer0", "reviewer1"]
    assert tasks_ids(queue) == Counter(ids) + Counter([judged(51).candidate.instance_id])


def _approve_worker(root: str, url: str, ids: list[str], n: int, barrier: Any,
                    results: Any) -> None:
    with ReviewQueue(DatasetStore(Path(root)), url) as queue:
        for iid in ids:
            barrier.wait(60)
            who = f"reviewer{n}"
            try:
                queue.approve(iid, who)
                results.put((iid, who, "won", ""))
            except Exception as exc:  # noqa: BLE001 - any failure fails the test
                results.put((iid, who, "error", repr(exc)))


# -- labelled decisions -------------------------------------------------------------------

@pytest.mark.parametrize("action, label, severity, message", [
    ("approve", "sound", "major", "severity is none or minor, not major"),
    ("approve", "sound", "severe", "severity is none or minor, not severe"),
    ("approve", "wrong_tests", "minor", "cannot carry the reason 'wrong_tests'"),
    ("approve", "trivial", "none", "cannot carry the reason 'trivial'"),
    ("approve", "environment", "none", "cannot carry the reason 'environment'"),
    ("approve", "duplicate", "none", "cannot carry the reason 'duplicate'"),
    ("reject", "sound", "major", "needs the problem as its reason, not 'sound'"),
    ("reject", "mended", "major", "needs the problem as its reason, not 'mended'"),
    ("reject", "trivial", "none", "needs a severity above none"),
])
def test_decisions_breaking_the_labelling_rules_are_refused(
        queue: ReviewQueue, flagged_ids: list[str], action: str, label: str, severity: str,
        message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_decision(ReviewAction(action), DecisionLabel(label), Severity(severity))
    with pytest.raises(InputError, match=message):
        queue.decide(flagged_ids[0], "alice", action, label=label, severity=severity,
                     note="because")
    item = queue.get(flagged_ids[0])
    assert (item.state, item.decisions, item.claimed_by) == (ReviewState.pending, (), "")


@pytest.mark.parametrize("action, label, severity", [
    (ReviewAction.approve, label, severity)
    for label in ("sound", "mended", "other", "underspecified", "misleading",
                  "statement_leak", "flaky_test")
    for severity in ("none", "minor")
] + [
    (ReviewAction.reject, label, severity)
    for label in ("statement_leak", "underspecified", "misleading", "flaky_test",
                  "wrong_tests", "trivial", "environment", "duplicate", "other")
    for severity in ("minor", "major", "severe")
])
def test_every_combination_the_rules_allow(action: ReviewAction, label: str,
                                           severity: str) -> None:
    check_decision(action, DecisionLabel(label), Severity(severity))


def test_unknown_label_or_severity_names_the_valid_ones(queue: ReviewQueue,
                                                        flagged_ids: list[str]) -> None:
    with pytest.raises(InputError, match="unknown reason 'meh'; valid: sound, mended"):
        queue.approve(flagged_ids[0], "alice", label="meh")
    with pytest.raises(InputError, match="unknown severity 'awful'; valid: none, minor, "
                                         "major, severe"):
        queue.reject(flagged_ids[0], "alice", "no", severity="awful")
    assert queue.get(flagged_ids[0]).decisions == ()


def test_defaults_and_the_decision_record(queue: ReviewQueue, clock: Clock,
                                          flagged_ids: list[str]) -> None:
    approved = queue.approve(flagged_ids[0], "alice")
    assert (approved.label, approved.severity) == ("sound", "none")
    clock.advance(hours=1)
    rejected = queue.reject(flagged_ids[1], "bob", "  gives the fix away  ")
    assert (rejected.label, rejected.severity, rejected.note) == ("other", "major",
                                                                  "gives the fix away")
    clock.advance(hours=1)
    queue.decide(flagged_ids[2], "carol", ReviewAction.approve,
                 label=DecisionLabel.statement_leak, severity=Severity.minor, note="tolerable")
    decisions = queue.decisions()
    assert [(d.instance_id, d.reviewer, d.action, d.label, d.severity, d.decided_at)
            for d in decisions] == [
        (flagged_ids[0], "alice", ReviewAction.approve, DecisionLabel.sound, Severity.none, T0),
        (flagged_ids[1], "bob", ReviewAction.reject, DecisionLabel.other, Severity.major,
         T0 + timedelta(hours=1)),
        (flagged_ids[2], "carol", ReviewAction.approve, DecisionLabel.statement_leak,
         Severity.minor, T0 + timedelta(hours=2))]
    assert [d.reviewer for d in queue.decisions(since=T0 + timedelta(minutes=30))] == [
        "bob", "carol"]
    row = task_row(queue, flagged_ids[2])
    assert (row.evidence["review_label"], row.evidence["review_severity"],
            row.evidence["review_reviewers"], row.evidence["review_note"]) == (
        "statement_leak", "minor", "carol", "tolerable")
    assert "review_version" not in row.evidence  # not mended
    assert "review_original_statement" not in row.evidence


# -- double review ------------------------------------------------------------------------

def test_require_two_marks_pending_items_once(queue: ReviewQueue,
                                              flagged_ids: list[str]) -> None:
    queue.approve(flagged_ids[2], "alice")
    assert queue.require_two(flagged_ids) == 2  # the decided one is left alone
    assert queue.require_two(flagged_ids) == 0
    assert [queue.get(i).reviews_needed for i in flagged_ids] == [2, 2, 1]


def test_the_double_sample_is_chosen_at_import(dataset: Path, queue: ReviewQueue) -> None:
    ids = write_flagged(dataset, 40, start=300)
    with ReviewQueue(DatasetStore(dataset), queue.url, double_fraction=0.5) as sampled:
        sampled.sync()
        needed = {i.instance_id: i.reviews_needed for i in sampled.list()}
    assert {i: needed[i] for i in ids} == {i: 2 if in_double_sample(i, 0.5) else 1
                                           for i in ids}
    assert 0 < sum(n == 2 for n in needed.values()) < len(needed)
    with pytest.raises(ConfigError):
        ReviewQueue(DatasetStore(dataset), queue.url, double_fraction=1.5)


def test_in_double_sample_is_stable_and_of_the_asked_size() -> None:
    ids = [f"repo.{n:08d}.synthetic.{n * 7919:08x}" for n in range(4000)]
    assert not any(in_double_sample(i, 0.0) for i in ids)
    assert all(in_double_sample(i, 1.0) for i in ids)
    quarter = [i for i in ids if in_double_sample(i, 0.25)]
    assert 0.22 < len(quarter) / len(ids) < 0.28
    assert quarter == [i for i in ids if in_double_sample(i, 0.25)]  # by hash, not chance
    assert set(quarter) <= {i for i in ids if in_double_sample(i, 0.5)}  # nested samples


def test_two_agreeing_approvals_publish_after_the_second(queue: ReviewQueue, clock: Clock,
                                                         flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    queue.require_two([iid])
    first = queue.approve(iid, "alice", "fine", label="statement_leak", severity="minor")
    # blind: the item shows no decision until the last one is in
    assert (first.state, first.reviewer, first.note, first.label, first.severity,
            first.decided_at, first.published, first.disputed) == (
        ReviewState.pending, "", "", "", "", None, False, False)
    assert [d.reviewer for d in first.decisions] == ["alice"]
    assert iid not in tasks_ids(queue)
    for attempt in (lambda: queue.approve(iid, "alice"), lambda: queue.claim(iid, "alice"),
                    lambda: queue.reject(iid, "alice", "changed my mind")):
        with pytest.raises(AlreadyReviewed, match="you \\(alice\\) already reviewed it"):
            attempt()
    clock.advance(hours=2)
    final = queue.approve(iid, "bob", "ok")
    assert (final.state, final.reviewer, final.note, final.label, final.severity,
            final.decided_at, final.published) == (
        ReviewState.approved, "bob", "ok", "sound", "none", T0 + timedelta(hours=2), True)
    row = task_row(queue, iid)
    assert row.evidence["review_reviewers"] == "alice,bob"
    assert row.evidence["review_reviewer"] == "bob"
    assert tasks_ids(queue)[iid] == 1


def test_a_decision_on_a_version_mended_since_does_not_count(
        queue: ReviewQueue, flagged_ids: list[str]) -> None:
    """Alice approves version 0; bob mends it to version 1: alice judged something else, so
    her decision stays as history and she may review the new version."""
    iid = flagged_ids[0]
    queue.verifier = ScriptedVerifier(HELD)
    queue.require_two([iid])
    queue.approve(iid, "alice", "fine")
    queue.claim(iid, "bob")
    mended = queue.mend(iid, "bob", statement=CLEAN)
    assert mended.version == 1 and [d.version for d in mended.decisions] == [0]
    assert mended.counted == () and not mended.reviewed_by("alice")
    after_bob = queue.approve(iid, "bob", "mended", label="mended")
    assert after_bob.state is ReviewState.pending  # one of two on version 1
    assert [d.reviewer for d in after_bob.counted] == ["bob"]
    final = queue.approve(iid, "alice", "the new statement is fine")
    assert final.state is ReviewState.approved
    assert [(d.reviewer, d.version) for d in final.decisions] == [
        ("alice", 0), ("bob", 1), ("alice", 1)]
    assert task_row(queue, iid).evidence["review_reviewers"] == "bob,alice"


def test_dropping_a_test_alone_runs_no_leak_check(queue: ReviewQueue, dataset: Path) -> None:
    """A statement a reviewer judges a minor leak keeps its wording while a flaky test goes;
    editing that statement runs the leak check."""
    [iid] = write_flagged(dataset, 1, start=70,
                          statement="add() is off; it should `return a + b + 70`.")
    queue.claim(iid, "alice")
    with pytest.raises(StatementLeaks):
        queue.mend(iid, "alice", statement="add() is off; it must `return a + b + 70` now.")
    item = queue.mend(iid, "alice", drop_tests=["tests/test_ops.py::test_mul"])
    assert item.version == 1 and "tests/test_ops.py::test_mul" not in item.task.PASS_TO_PASS
    assert item.task.problem_statement == "add() is off; it should `return a + b + 70`."


def test_an_unknown_action_is_an_input_error(queue: ReviewQueue,
                                             flagged_ids: list[str]) -> None:
    with pytest.raises(InputError, match="unknown action 'merge'"):
        queue.decide(flagged_ids[0], "alice", "merge")


def test_two_agreeing_rejections_publish_nothing(queue: ReviewQueue,
                                                 flagged_ids: list[str]) -> None:
    iid = flagged_ids[1]
    queue.require_two([iid])
    queue.reject(iid, "alice", "leaks", label="statement_leak", severity="major")
    final = queue.reject(iid, "bob", "leaks badly", label="statement_leak", severity="severe")
    assert (final.state, final.reviewer, final.severity) == (ReviewState.rejected, "bob",
                                                             "severe")
    assert iid not in tasks_ids(queue)


@pytest.mark.parametrize("third", ["approve", "reject"])
def test_disagreement_is_disputed_and_a_third_reviewer_decides(
        queue: ReviewQueue, clock: Clock, flagged_ids: list[str], third: str) -> None:
    iid = flagged_ids[0]
    queue.require_two([iid])
    queue.approve(iid, "alice")
    disputed = queue.reject(iid, "bob", "the tests check something else",
                            label="wrong_tests", severity="major")
    assert (disputed.state, disputed.disputed, disputed.reviews_needed) == (
        ReviewState.pending, True, 3)
    assert (disputed.reviewer, disputed.label, disputed.decided_at) == ("", "", None)
    assert iid not in tasks_ids(queue)
    with pytest.raises(AlreadyReviewed):
        queue.approve(iid, "bob")
    with pytest.raises(AlreadyReviewed):
        queue.claim(iid, "alice")
    assert [i.instance_id for i in queue.list() if i.disputed] == [iid]
    clock.advance(hours=1)
    queue.claim(iid, "carol")
    if third == "approve":
        final = queue.approve(iid, "carol", "the tests are right", severity="minor")
        assert (final.state, final.published) == (ReviewState.approved, True)
        row = task_row(queue, iid)
        assert row.evidence["review_reviewers"] == "alice,bob,carol"
        assert row.evidence["review_severity"] == "minor"
    else:
        final = queue.reject(iid, "carol", "bob is right", label="wrong_tests")
        assert final.state is ReviewState.rejected and iid not in tasks_ids(queue)
    assert (final.reviewer, final.disputed, final.decided_at) == ("carol", True,
                                                                  T0 + timedelta(hours=1))
    assert [d.reviewer for d in final.decisions] == ["alice", "bob", "carol"]
    with pytest.raises(ReviewConflict, match=f"already {final.state.value} by carol"):
        queue.approve(iid, "dave")


# -- mending ------------------------------------------------------------------------------

def test_mending_needs_a_claim(queue: ReviewQueue, flagged_ids: list[str]) -> None:
    with pytest.raises(InputError, match="claim it before mending it"):
        queue.mend(flagged_ids[0], "alice", statement=CLEAN)
    assert queue.get(flagged_ids[0]).version == 0


def test_a_statement_that_still_leaks_is_refused_and_nothing_is_saved(
        queue: ReviewQueue, flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    leaky = "add() is wrong. Change the body to `return a + b + 0` to fix it."
    assert statement_leaks(leaky, gold_diff(0))  # a real leak by the leak check
    queue.claim(iid, "alice")
    with pytest.raises(StatementLeaks, match="still gives the fix away") as info:
        queue.mend(iid, "alice", statement=leaky)
    assert "return a + b + 0" in info.value.fragments
    item = queue.get(iid)
    assert (item.version, item.versions, item.original) == (0, (), None)


def test_mending_keeps_the_original_beside_every_version(queue: ReviewQueue, clock: Clock,
                                                         flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    original = queue.get(iid).task
    queue.claim(iid, "alice")
    first = queue.mend(iid, "alice", statement=f"  {CLEAN}  ")
    assert first.version == 1 and first.task.problem_statement == CLEAN
    assert first.original == original and first.detail == original.detail
    clock.advance(minutes=5)
    second = queue.mend(iid, "alice", drop_tests=[P2P[0]])
    assert second.version == 2
    assert (second.task.problem_statement, second.task.FAIL_TO_PASS,
            second.task.PASS_TO_PASS) == (CLEAN, (F2P0,), (P2P[1],))
    assert second.original == original  # the judge's row, untouched
    assert [(v.version, v.editor, v.edited_at, v.summary, v.verified)
            for v in second.versions] == [
        (1, "alice", T0, "statement edited", ""),
        (2, "alice", T0 + timedelta(minutes=5), f"dropped {P2P[0]}", "")]
    assert second.versions[0].task.PASS_TO_PASS == P2P
    assert second.current_version == second.versions[1]
    assert queue.list()[0].task == second.task  # the list shows the current version too


@pytest.mark.parametrize("statement, drop, message", [
    (None, (), "nothing to save"),
    ("add() gives wrong results for case 0.", (), "nothing to save"),  # unchanged
    ("   ", (), "statement cannot be empty"),
    ("x" * 50_001, (), "at most 50000"),
    (None, ("tests/test_ops.py::test_nope",), "not a listed test of this task"),
    (None, (F2P0,), "every FAIL_TO_PASS test would be dropped"),
])
def test_mends_that_change_nothing_or_break_the_task_are_refused(
        queue: ReviewQueue, flagged_ids: list[str], statement: str | None,
        drop: tuple[str, ...], message: str) -> None:
    queue.claim(flagged_ids[0], "alice")
    with pytest.raises(InputError, match=message):
        queue.mend(flagged_ids[0], "alice", statement=statement, drop_tests=drop)
    assert queue.get(flagged_ids[0]).version == 0


def test_a_decided_item_cannot_be_mended(queue: ReviewQueue, flagged_ids: list[str]) -> None:
    queue.reject(flagged_ids[0], "bob", "no")
    with pytest.raises(ReviewConflict, match="already rejected by bob at .* UTC; your edit"):
        queue.mend(flagged_ids[0], "bob", statement=CLEAN)


def test_approving_a_mended_task_verifies_each_version_once(
        queue: ReviewQueue, clock: Clock, flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    verifier = ScriptedVerifier(HELD)
    queue.verifier = verifier
    queue.require_two([iid])
    queue.claim(iid, "alice")
    queue.mend(iid, "alice", statement=CLEAN, drop_tests=[P2P[1]])
    clock.advance(minutes=1)
    queue.approve(iid, "alice", label="mended")
    assert [r.problem_statement for r in verifier.calls] == [CLEAN]  # the mended version
    assert verifier.calls[0].PASS_TO_PASS == (P2P[0],)
    [version] = queue.get(iid).versions
    assert (version.verified, version.verify_detail, version.verified_at) == (
        "held", HELD.detail, T0 + timedelta(minutes=1))
    final = queue.approve(iid, "bob", label="mended", severity="minor")
    assert len(verifier.calls) == 1  # held already: not verified again
    assert (final.state, final.published) == (ReviewState.approved, True)
    row = task_row(queue, iid)
    assert (row.problem_statement, row.FAIL_TO_PASS, row.PASS_TO_PASS) == (CLEAN, (F2P0,),
                                                                          (P2P[0],))
    flagged = queue.get(iid).original
    assert flagged is not None
    assert row.evidence["review_version"] == "1"
    assert row.evidence["review_original_statement"] == flagged.problem_statement
    assert row.evidence["review_dropped_tests"] == P2P[1]
    assert (row.evidence["review_label"], row.evidence["review_severity"],
            row.evidence["review_reviewers"]) == ("mended", "minor", "alice,bob")
    assert row.detail == ("approved by bob in manual review after mending "
                          "(flagged statement_leak)")
    assert (row.bug_patch, row.patch) == (flagged.bug_patch, flagged.patch)


def test_unmended_approvals_and_rejections_run_no_verifier(
        queue: ReviewQueue, flagged_ids: list[str]) -> None:
    verifier = ScriptedVerifier(HELD)
    queue.verifier = verifier
    queue.approve(flagged_ids[0], "alice")
    queue.claim(flagged_ids[1], "bob")
    queue.mend(flagged_ids[1], "bob", statement=CLEAN)
    queue.reject(flagged_ids[1], "bob", "still not a good task", label="trivial")
    assert verifier.calls == []


def test_a_version_that_does_not_hold_cannot_be_approved(
        queue: ReviewQueue, clock: Clock, flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    verifier = ScriptedVerifier(FAILS, HELD)
    queue.verifier = verifier
    queue.claim(iid, "alice")
    queue.mend(iid, "alice", statement=CLEAN)
    with pytest.raises(MendDoesNotHold, match="version 1 does not hold when re-verified "
                                              "\\(scripted: gold patch scores 0\\)"):
        queue.approve(iid, "alice", label="mended")
    item = queue.get(iid)
    assert (item.state, item.decisions) == (ReviewState.pending, ())
    assert (item.versions[0].verified, item.versions[0].verify_detail) == ("failed",
                                                                           FAILS.detail)
    with pytest.raises(MendDoesNotHold, match="scripted: gold patch scores 0"):
        queue.approve(iid, "alice", label="mended")
    assert len(verifier.calls) == 1  # the failure is recorded, not re-run
    mended = queue.mend(iid, "alice", statement=CLEAN + " It started last week.")
    assert mended.version == 2
    assert queue.approve(iid, "alice", label="mended").state is ReviewState.approved
    assert [r.problem_statement for r in verifier.calls] == [CLEAN, mended.task.problem_statement]
    assert [v.verified for v in queue.get(iid).versions] == ["failed", "held"]


def test_a_failed_version_can_still_be_rejected(queue: ReviewQueue,
                                                flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    queue.verifier = ScriptedVerifier(FAILS)
    queue.claim(iid, "alice")
    queue.mend(iid, "alice", statement=CLEAN)
    with pytest.raises(MendDoesNotHold):
        queue.approve(iid, "alice", label="mended")
    assert queue.reject(iid, "alice", "the gold patch does not hold",
                        label="wrong_tests").state is ReviewState.rejected


def test_a_broken_sandbox_records_nothing(queue: ReviewQueue, flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    verifier = ScriptedVerifier(BROKEN, HELD)
    queue.verifier = verifier
    queue.claim(iid, "alice")
    queue.mend(iid, "alice", statement=CLEAN)
    with pytest.raises(InfraError, match="the sandbox died.*nothing was decided"):
        queue.approve(iid, "alice", label="mended")
    item = queue.get(iid)
    assert (item.state, item.decisions, item.versions[0].verified,
            item.versions[0].verified_at) == (ReviewState.pending, (), "", None)
    assert queue.approve(iid, "alice", label="mended").state is ReviewState.approved
    assert len(verifier.calls) == 2  # tried again


def test_approving_a_mended_task_without_a_verifier_is_refused(
        queue: ReviewQueue, flagged_ids: list[str]) -> None:
    queue.claim(flagged_ids[0], "alice")
    queue.mend(flagged_ids[0], "alice", statement=CLEAN)
    with pytest.raises(ConfigError, match="this queue has no verifier"):
        queue.approve(flagged_ids[0], "alice", label="mended")
    assert queue.get(flagged_ids[0]).decisions == ()


def test_someone_elses_claim_is_checked_before_any_sandbox_runs(
        queue: ReviewQueue, flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    verifier = ScriptedVerifier(FAILS)
    queue.verifier = verifier
    queue.claim(iid, "alice")
    queue.mend(iid, "alice", statement=CLEAN)
    with pytest.raises(ClaimHeld, match="claimed by alice"):
        queue.approve(iid, "bob", label="mended")
    assert verifier.calls == []
    assert queue.get(iid).versions[0].verified == ""


def test_approved_judged_refuses_an_item_that_is_not_approved(
        queue: ReviewQueue, flagged_ids: list[str]) -> None:
    with pytest.raises(ValueError, match="is pending, not approved"):
        approved_judged(queue.get(flagged_ids[0]))


# -- filters ------------------------------------------------------------------------------

@pytest.fixture
def varied(queue: ReviewQueue, dataset: Path, flagged_ids: list[str],
           clock: Clock) -> dict[str, str]:
    """Flagged tasks of two repos, two languages and four reasons (n: minutes after
    FLAGGED_AT); the clock one hour after FLAGGED_AT."""
    [probe] = write_flagged(dataset, 1, start=10, repo="zeta__lib",
                            reason="probe:conftest_force_pass")
    [probe2] = write_flagged(dataset, 1, start=11, repo="zeta__lib", reason="probe:skip_all")
    go = judged(40, reason="underspecified", repo="zeta__lib")
    go = go.model_copy(update={"candidate": go.candidate.model_copy(update={"language": "go"})})
    DatasetStore(dataset).write([go])
    clock.now = FLAGGED_AT + timedelta(hours=1)
    return {"probe": probe, "probe2": probe2, "go": go.candidate.instance_id,
            **{f"leak{n}": iid for n, iid in enumerate(flagged_ids)}}


def _ids(queue: ReviewQueue, **fields: Any) -> list[str]:
    return [i.instance_id for i in queue.list(ItemFilter(**fields))]


def test_filters(queue: ReviewQueue, varied: dict[str, str]) -> None:
    v = varied
    assert _ids(queue) == [v["leak0"], v["leak1"], v["leak2"], v["probe"], v["probe2"], v["go"]]
    assert _ids(queue, repo="zeta__lib") == [v["probe"], v["probe2"], v["go"]]
    assert _ids(queue, language="go") == [v["go"]]
    assert _ids(queue, repo="acme__calc", language="go") == []
    assert _ids(queue, reason="statement_leak") == [v["leak0"], v["leak1"], v["leak2"]]
    assert _ids(queue, reason="probe:") == [v["probe"], v["probe2"]]  # a family
    assert _ids(queue, reason="probe:skip_all") == [v["probe2"]]
    assert _ids(queue, reason="probe") == []  # no colon: the exact reason only
    # flagged at FLAGGED_AT + n minutes, n = 0, 1, 2, 10, 11, 40; the clock at + 60
    assert _ids(queue, older_than=timedelta(minutes=50)) == [v["leak0"], v["leak1"],
                                                            v["leak2"], v["probe"]]
    assert _ids(queue, newer_than=timedelta(minutes=50)) == [v["probe"], v["probe2"], v["go"]]
    assert _ids(queue, older_than=timedelta(minutes=49),
                newer_than=timedelta(minutes=59)) == [v["leak1"], v["leak2"], v["probe"],
                                                      v["probe2"]]
    queue.approve(v["go"], "alice")
    queue.reject(v["probe"], "bob", "the probe was right", label="wrong_tests")
    assert _ids(queue, status="approved") == [v["go"]]
    assert _ids(queue, status="rejected", repo="zeta__lib") == [v["probe"]]
    assert _ids(queue, status="all", reason="probe:") == [v["probe2"], v["probe"]]
    assert _ids(queue, repo="zeta__lib") == [v["probe2"]]


def test_facets_name_what_the_queue_holds(queue: ReviewQueue, varied: dict[str, str]) -> None:
    queue.sync()
    assert queue.facets() == {
        "repo": ["acme__calc", "zeta__lib"], "language": ["go", "python"],
        "reason": ["probe:conftest_force_pass", "probe:skip_all", "statement_leak",
                   "underspecified"]}


def test_a_filter_with_like_wildcards_matches_them_literally(
        queue: ReviewQueue, dataset: Path) -> None:
    [odd] = write_flagged(dataset, 1, start=60, reason="probe_%:x")
    write_flagged(dataset, 1, start=61, reason="probeXY:x")
    assert _ids(queue, reason="probe_%:") == [odd]


# -- an older database --------------------------------------------------------------------

OLD_COLUMNS = 11  # review_items before the team queue: instance_id .. published


def test_a_queue_made_by_an_older_repogym_is_brought_up_to_date(
        queue: ReviewQueue, dataset: Path, flagged_ids: list[str]) -> None:
    METADATA.drop_all(queue.engine)
    old = MetaData()
    Table("review_items", old, *[c._copy() for c in list(REVIEW_ITEMS.columns)[:OLD_COLUMNS]])
    old.create_all(queue.engine)
    stored = {r.instance_id: r for r in queue.store.rows("rejected")}
    go_row = stored[flagged_ids[1]].model_copy(update={"language": "go"})
    insert = text(
        "INSERT INTO review_items (instance_id, repo, reason, state, row_json, flagged_at, "
        "queued_at, reviewer, note, decided_at, published) VALUES (:iid, :repo, :reason, "
        ":state, :row_json, :flagged_at, :queued_at, :reviewer, :note, :decided_at, "
        ":published)").bindparams(
        bindparam("flagged_at", type_=DateTime(timezone=True)),
        bindparam("queued_at", type_=DateTime(timezone=True)),
        bindparam("decided_at", type_=DateTime(timezone=True)),
        bindparam("published", type_=Boolean()))
    with queue.engine.begin() as conn:
        conn.execute(insert, [
            dict(iid=flagged_ids[0], repo="acme__calc", reason="statement_leak",
                 state="pending", row_json=stored[flagged_ids[0]].model_dump_json(),
                 flagged_at=FLAGGED_AT, queued_at=T0, reviewer="", note="", decided_at=None,
                 published=False),
            # approved by the old queue, which crashed before writing the task
            dict(iid=flagged_ids[1], repo="acme__calc", reason="statement_leak",
                 state="approved", row_json=go_row.model_dump_json(), flagged_at=FLAGGED_AT,
                 queued_at=T0, reviewer="olga", note="fine", decided_at=T0, published=False)])
    queue.close()
    with ReviewQueue(DatasetStore(dataset), queue.url, clock=lambda: T0) as upgraded:
        columns = {c["name"] for c in inspect(upgraded.engine).get_columns("review_items")}
        assert columns == {c.name for c in REVIEW_ITEMS.columns}
        pending = upgraded.get(flagged_ids[0])
        assert (pending.state, pending.language, pending.claimed_by, pending.claimed_until,
                pending.reviews_needed, pending.disputed, pending.label, pending.severity,
                pending.version, pending.queued_at) == (
            ReviewState.pending, "python", "", None, 1, False, "", "", 0, T0)
        assert pending.task == stored[flagged_ids[0]]
        approved = upgraded.get(flagged_ids[1])
        assert (approved.state, approved.reviewer, approved.language, approved.decided_at) == (
            ReviewState.approved, "olga", "go", T0)
        assert upgraded.sync().published == 1  # the old crash is repaired by the new queue
        row = task_row(upgraded, flagged_ids[1])
        assert (row.evidence["review_reviewer"], row.evidence["review_reviewers"],
                row.evidence["review_label"]) == ("olga", "olga", "")
        # the new tables work on the old rows
        upgraded.claim(flagged_ids[0], "alice")
        upgraded.require_two([flagged_ids[0]])
        assert upgraded.approve(flagged_ids[0], "alice").state is ReviewState.pending
        assert len(upgraded.list("all")) == 3
    with ReviewQueue(DatasetStore(dataset), queue.url) as again:  # nothing left to add
        assert [d.reviewer for d in again.get(flagged_ids[0]).decisions] == ["alice"]
        assert again.get(flagged_ids[1]).language == "go"


# -- reviewers and sessions ---------------------------------------------------------------

@pytest.fixture
def reviewers(queue: ReviewQueue) -> Reviewers:
    return Reviewers(queue.engine, queue.url)


def test_tokens_are_stored_only_as_their_hash(queue: ReviewQueue, reviewers: Reviewers,
                                              dataset: Path) -> None:
    assert not reviewers.any()
    token = reviewers.add("alice")
    assert token.startswith(TOKEN_PREFIX) and len(token) >= len(TOKEN_PREFIX) + 40
    assert reviewers.any()
    with queue.engine.connect() as conn:
        stored = [tuple(r) for r in conn.execute(select(REVIEWERS))]
    assert len(stored) == 1 and token not in repr(stored)
    assert stored[0][1] == sha256(token)
    if is_sqlite(queue.url):  # nothing in the files either (the WAL included)
        queue.close()
        files = b"".join(p.read_bytes() for p in dataset.glob("review.sqlite*"))
        assert sha256(token).encode() in files  # the right files were read
        assert token.encode() not in files
        assert token[len(TOKEN_PREFIX):].encode() not in files


def test_who_signs_in_with_a_token(reviewers: Reviewers) -> None:
    token = reviewers.add("  alice  ")
    assert reviewers.who(token) == "alice"
    with pytest.raises(SignInFailed, match="start with rgr_"):
        reviewers.who(token[len(TOKEN_PREFIX):])
    with pytest.raises(SignInFailed, match="unknown or revoked"):
        reviewers.who(token + "x")
    with pytest.raises(InputError, match="exists; use rotate"):
        reviewers.add("alice")
    new = reviewers.rotate("alice")
    assert new != token and reviewers.who(new) == "alice"
    with pytest.raises(SignInFailed):
        reviewers.who(token)
    reviewers.disable("alice")
    with pytest.raises(SignInFailed):
        reviewers.who(new)
    assert [(r.name, r.active) for r in reviewers.list()] == [("alice", False)]
    assert reviewers.list()[0].created_at.utcoffset() == timedelta(0)
    with pytest.raises(InputError, match="no reviewer named 'bob'"):
        reviewers.disable("bob")
    assert reviewers.who(reviewers.rotate("alice")) == "alice"  # rotate re-enables


def test_sessions_are_hashed_replaced_at_sign_in_and_ended_by_disable(
        queue: ReviewQueue, reviewers: Reviewers) -> None:
    reviewers.add("alice")
    reviewers.add("bob")
    anonymous, anon = reviewers.open_session()
    assert not anon.signed_in and reviewers.session(anonymous) == anon
    cookie, session = reviewers.open_session("alice", replaces=anonymous)
    assert reviewers.session(anonymous) is None  # no fixation: the old session ended
    found = reviewers.session(cookie)
    assert found is not None and found.reviewer == "alice" and found.signed_in
    assert found.csrf == session.csrf != anon.csrf
    other, _ = reviewers.open_session("bob")
    with queue.engine.connect() as conn:
        stored = repr([tuple(r) for r in conn.execute(select(REVIEW_SESSIONS))])
    assert cookie not in stored and sha256(cookie) in stored
    reviewers.disable("alice")
    assert reviewers.session(cookie) is None
    assert reviewers.session(other) is not None  # bob's session lives on
    reviewers.rotate("bob")
    assert reviewers.session(other) is None
    third, _ = reviewers.open_session("bob")
    reviewers.close_session(third)
    assert reviewers.session(third) is None and reviewers.session("") is None


def test_times_read_back_in_utc_whatever_the_servers_time_zone(
        dataset: Path, postgres_url: str, flagged_ids: list[str]) -> None:
    """A PostgreSQL session in Tokyo time returns timestamps at +09:00; every time the queue
    and the reviewers give back is UTC all the same."""
    tokyo = postgres_url + "?options=-c%20TimeZone%3DAsia%2FTokyo"
    with ReviewQueue(DatasetStore(dataset), tokyo, clock=lambda: T0) as queue:
        with queue.engine.connect() as conn:
            assert conn.execute(text("SHOW TimeZone")).scalar() == "Asia/Tokyo"
        item = queue.claim(flagged_ids[0], "alice")
        assert item.claimed_until == T0 + timedelta(minutes=30)
        assert item.claimed_until.utcoffset() == timedelta(0)
        assert item.flagged_at == FLAGGED_AT and item.flagged_at.utcoffset() == timedelta(0)
        people = Reviewers(queue.engine, queue.url)
        people.add("alice")
        [alice] = people.list()
        assert alice.created_at.utcoffset() == timedelta(0)
        cookie, session = people.open_session("alice")
        found = people.session(cookie)
        assert found == session and found.expires_at.utcoffset() == timedelta(0)


def test_sessions_expire(reviewers: Reviewers, monkeypatch: pytest.MonkeyPatch) -> None:
    import repogym.datasets.review.auth as auth

    cookie, session = reviewers.open_session("alice")
    later = session.expires_at + timedelta(seconds=1)
    monkeypatch.setattr(auth, "utcnow", lambda: later)
    assert reviewers.session(cookie) is None
    fresh, _ = reviewers.open_session("bob")  # purges the expired one
    with reviewers.engine.connect() as conn:
        assert conn.execute(select(REVIEW_SESSIONS.c.id_sha256)).scalars().all() == [
            sha256(fresh)]


def test_csrf_ok(reviewers: Reviewers) -> None:
    _, session = reviewers.open_session("alice")
    _, other = reviewers.open_session("bob")
    assert csrf_ok(session, session.csrf)
    assert not csrf_ok(session, other.csrf)
    assert not csrf_ok(session, "")
    assert not csrf_ok(None, session.csrf)


def test_sign_in_required() -> None:
    sqlite, pg = "sqlite:////tmp/q/review.sqlite", "postgresql+psycopg://u@db/review"
    assert not sign_in_required(sqlite, has_reviewers=False)
    assert not sign_in_required(sqlite, False, "127.0.0.1")
    assert not sign_in_required(sqlite, False, "localhost")
    assert not sign_in_required(sqlite, False, "::1")
    assert sign_in_required(sqlite, False, "0.0.0.0")
    assert sign_in_required(sqlite, False, "review.example.com")
    assert sign_in_required(sqlite, True, "127.0.0.1")
    assert sign_in_required(pg, False, "127.0.0.1")


# -- real tasks, real sandboxes -----------------------------------------------------------

@pytest.fixture
def real_queue(real_review: RealReview, tmp_path: Path,  # noqa: F811
               db_url: str | None) -> Iterator[ReviewQueue]:
    """A copy of the real flagged tasks, queued (on each database of ``db_url``); approvals
    re-verify in real sandboxes."""
    root = tmp_path / "data"
    shutil.copytree(real_review.root, root)
    with ReviewQueue(DatasetStore(root), db_url,
                     verifier=sandbox_verifier(real_review.settings)) as q:
        yield q


def test_real_mended_statement_is_verified_and_published(
        real_review: RealReview, real_queue: ReviewQueue) -> None:  # noqa: F811
    task = real_review.leaky
    iid = task.instance_id
    flagged = real_queue.get(iid)
    assert flagged.reason == "statement_leak" and task.fragment in flagged.task.problem_statement
    real_queue.claim(iid, "alice")
    with pytest.raises(StatementLeaks) as info:  # quoting the fix again is refused
        real_queue.mend(iid, "alice", statement=f"{task.clean}\n\nHint: `{task.fragment}`")
    assert task.fragment in info.value.fragments
    real_queue.mend(iid, "alice", statement=task.clean)
    item = real_queue.approve(iid, "alice", "statement rewritten", label="mended")
    assert (item.state, item.published) == (ReviewState.approved, True)
    [version] = real_queue.get(iid).versions
    assert (version.verified, version.verify_detail) == ("held", "gold patch 1, empty patch 0")
    row = task_row(real_queue, iid)
    assert row.status is Status.accept and row.problem_statement == task.clean
    assert (row.patch, row.FAIL_TO_PASS, row.PASS_TO_PASS) == (
        task.accepted.patch, task.accepted.FAIL_TO_PASS, task.accepted.PASS_TO_PASS)
    assert row.evidence["review_original_statement"] == flagged.task.problem_statement
    assert (row.evidence["review_version"], row.evidence["review_label"],
            row.evidence["review_reviewers"]) == ("1", "mended", "alice")
    assert "review_dropped_tests" not in row.evidence


def test_real_task_with_a_dropped_fail_to_pass_test_holds(
        real_review: RealReview, real_queue: ReviewQueue) -> None:  # noqa: F811
    task = real_review.multi
    iid, dropped = task.instance_id, "tests/test_ops.py::test_is_even"
    assert len(task.accepted.FAIL_TO_PASS) >= 2 and dropped in task.accepted.FAIL_TO_PASS
    real_queue.claim(iid, "alice")
    real_queue.mend(iid, "alice", statement=task.clean, drop_tests=[dropped])
    item = real_queue.approve(iid, "alice", label="mended")
    assert item.state is ReviewState.approved
    assert real_queue.get(iid).versions[0].verified == "held"
    row = task_row(real_queue, iid)
    kept = tuple(t for t in task.accepted.FAIL_TO_PASS if t != dropped)
    assert (row.FAIL_TO_PASS, row.PASS_TO_PASS) == (kept, task.accepted.PASS_TO_PASS)
    assert row.evidence["review_dropped_tests"] == dropped


class CountingVerifier:
    """The real sandbox verifier, counting its calls."""

    def __init__(self, settings: Any) -> None:
        self.real, self.calls = sandbox_verifier(settings), 0

    def __call__(self, row: TaskRow) -> Recheck:
        self.calls += 1
        return self.real(row)


def test_real_version_whose_gold_patch_does_not_fix_every_test_cannot_be_approved(
        real_review: RealReview, real_queue: ReviewQueue) -> None:  # noqa: F811
    """The gold patch lost a hunk: one FAIL_TO_PASS test still fails under it. Mending the
    statement does not help (MendDoesNotHold, found by the sandbox); dropping the test the
    patch does not fix does."""
    task = real_review.partial
    iid, unfixed = task.instance_id, "tests/test_ops.py::test_is_even"
    verifier = CountingVerifier(real_review.settings)
    real_queue.verifier = verifier
    real_queue.claim(iid, "alice")
    real_queue.mend(iid, "alice", statement=task.clean)
    with pytest.raises(MendDoesNotHold, match=f"version 1 does not hold.*oracle.*{unfixed}"):
        real_queue.approve(iid, "alice", label="mended")
    with pytest.raises(MendDoesNotHold):
        real_queue.approve(iid, "alice", label="mended")
    assert verifier.calls == 1
    item = real_queue.get(iid)
    assert (item.state, item.decisions, item.versions[0].verified) == (ReviewState.pending,
                                                                       (), "failed")
    assert iid not in tasks_ids(real_queue)
    real_queue.mend(iid, "alice", drop_tests=[unfixed])
    assert real_queue.approve(iid, "alice", label="mended").state is ReviewState.approved
    assert verifier.calls == 2
    assert [v.verified for v in real_queue.get(iid).versions] == ["failed", "held"]
    assert task_row(real_queue, iid).FAIL_TO_PASS == ("tests/test_ops.py::test_add",)
