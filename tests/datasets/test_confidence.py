"""Per-task confidence: the checks a task passed, and the one number trainers filter on."""

from __future__ import annotations

from repogym.datasets.review import ReviewItem, ReviewState, approved_judged
from repogym.schemas import Status, TaskRow
from repogym.schemas.confidence import (
    Confidence,
    confidence_evidence,
    confidence_of,
)
from tests.datasets.test_schema import make_judged


def test_each_agreeing_run_halves_the_doubt_and_weaker_evidence_lowers_it() -> None:
    one_each = Confidence(oracle_runs=1, broken_runs=1, probes=10)
    defaults = Confidence(oracle_runs=3, broken_runs=1, probes=10)
    assert one_each.score == 0.75 and defaults.score == 0.9375
    assert defaults.model_copy(update={"reverified": 1}).score > defaults.score
    assert defaults.model_copy(update={"probes": 0}).score == round(0.9375 * 0.9, 4)
    assert defaults.model_copy(update={"probes_scored": 1}).score == round(0.9375 * 0.8, 4)
    flaky = defaults.model_copy(update={"baseline_tests": 10, "baseline_flaky": 2})
    assert flaky.score == round(0.9375 * 0.8, 4)
    many = defaults.model_copy(update={"baseline_tests": 10, "baseline_flaky": 9})
    assert many.score == round(0.9375 * 0.5, 4)  # the flaky share counts up to a half
    assert Confidence().score == 0.0  # nothing checked: nothing known


def test_the_column_follows_the_evidence_of_judge_review_and_reverification() -> None:
    conf = Confidence(oracle_runs=3, broken_runs=1, probes=12, baseline_runs=3,
                      baseline_tests=40)
    judged = make_judged(0)
    judged = judged.model_copy(update={"verdict": judged.verdict.model_copy(
        update={"evidence": {"oracle": "reran x3", **confidence_evidence(conf)}})})
    row = TaskRow.from_judged(judged)
    assert row.confidence == conf.score == row.confidence_record.score
    held = row.with_evidence({"reverified": "2"})
    assert held.confidence_record.reverified == 2 and held.confidence > row.confidence
    rejected = TaskRow.from_judged(make_judged(1, status=Status.reject))
    assert rejected.confidence == 0.0
    # an approval keeps the judge's checks and names the reviewer
    flagged = TaskRow.from_judged(make_judged(2, status=Status.review,
                                              evidence={**confidence_evidence(conf)}))
    item = ReviewItem(instance_id=flagged.instance_id, repo=flagged.repo,
                      reason=flagged.reason, state=ReviewState.approved, task=flagged,
                      reviewer="ada", note="", flagged_at=flagged.created_at,
                      queued_at=flagged.created_at, decided_at=flagged.created_at,
                      published=False)
    approved = TaskRow.from_judged(approved_judged(item))
    assert approved.confidence_record.reviewer == "ada"
    assert approved.confidence == conf.score


def test_older_evidence_reads_as_what_it_says() -> None:
    legacy = confidence_of({"oracle": "differential x2",
                            "probes_passed": "9 probes on acme.x"})
    assert (legacy.oracle_runs, legacy.broken_runs, legacy.probes) == (2, 1, 9)
    assert confidence_of({}).score == 0.0
    assert confidence_of({"confidence": "not json", "oracle": "baseline x3"}).oracle_runs == 3
