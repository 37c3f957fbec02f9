"""Throughput and agreement of the review queue (``repogym review stats``, the page's stats).

* **Throughput**: decisions per reviewer in the window, per day, and the median time from a
  task's flag to its final decision.
* **Agreement**: over items two reviewers decided (the first two decisions on the item's
  current version), the share where they took the same action and where they gave the same
  reason, per flag reason and overall, with Cohen's kappa for the action (agreement beyond chance: 1 perfect,
  0 no better than chance; None when undefined, e.g. both always approve).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import Sequence

from repogym.datasets.review.queue import Decision, ReviewAction, ReviewItem, ReviewState
from repogym.schemas.records import Record, utcnow


class ReviewerLoad(Record):
    reviewer: str
    approved: int
    rejected: int

    @property
    def decisions(self) -> int:
        return self.approved + self.rejected


class Agreement(Record):
    """Agreement over ``pairs`` double-reviewed items (one flag reason, or all)."""

    reason: str
    pairs: int
    action: float  # share with the same action
    label: float  # share with the same reason
    kappa: float | None = None


class ReviewStats(Record):
    since: datetime | None
    days: float
    decisions: int
    per_day: float
    reviewers: tuple[ReviewerLoad, ...]
    pending: int
    disputed: int
    oldest_pending_hours: float | None
    median_hours_to_decision: float | None
    agreement: tuple[Agreement, ...]  # per flag reason, then "all"

    def lines(self) -> list[str]:
        window = f"since {self.since:%Y-%m-%d}" if self.since else "all time"
        out = [f"{self.decisions} decision(s) {window} ({self.per_day:.1f}/day); "
               f"{self.pending} pending ({self.disputed} disputed)"
               + (f", oldest {self.oldest_pending_hours:.1f}h" if self.oldest_pending_hours
                  is not None else ""),
               "median flag-to-decision: " + (f"{self.median_hours_to_decision:.1f}h"
                                              if self.median_hours_to_decision is not None
                                              else "-")]
        out += [f"  {r.reviewer}: {r.decisions} ({r.approved} approved, {r.rejected} rejected)"
                for r in self.reviewers]
        for a in self.agreement:
            kappa = f", kappa {a.kappa:.2f}" if a.kappa is not None else ""
            out.append(f"  agreement [{a.reason}] over {a.pairs} pair(s): action "
                       f"{a.action:.0%}, reason {a.label:.0%}{kappa}")
        return out


def cohen_kappa(pairs: Sequence[tuple[ReviewAction, ReviewAction]]) -> float | None:
    """Cohen's kappa of two raters over ``pairs`` (None when chance agreement is 1)."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    chance = sum(first[k] * second[k] for k in ReviewAction) / (n * n)
    return None if chance >= 1.0 else (observed - chance) / (1.0 - chance)


def agreement(items: Sequence[ReviewItem]) -> tuple[Agreement, ...]:
    """Agreement per flag reason (sorted), then over all double-reviewed items."""
    groups: dict[str, list[tuple[Decision, Decision]]] = defaultdict(list)
    for item in items:
        if len(item.counted) >= 2:
            groups[item.reason].append((item.counted[0], item.counted[1]))
    every = [p for reason in sorted(groups) for p in groups[reason]]
    return tuple(_agreement(reason, pairs) for reason, pairs in
                 [*sorted(groups.items()), ("all", every)] if pairs)


def _agreement(reason: str, pairs: list[tuple[Decision, Decision]]) -> Agreement:
    n = len(pairs)
    return Agreement(reason=reason, pairs=n,
                     action=sum(a.action == b.action for a, b in pairs) / n,
                     label=sum(a.label == b.label for a, b in pairs) / n,
                     kappa=cohen_kappa([(a.action, b.action) for a, b in pairs]))


def review_stats(items: Sequence[ReviewItem], days: float | None = None,
                 now: datetime | None = None) -> ReviewStats:
    """Statistics over ``items`` (every item of the queue, with decisions), counting
    decisions of the last ``days`` (None: all time)."""
    now = now or utcnow()
    since = now - timedelta(days=days) if days else None
    decisions = [d for it in items for d in it.decisions
                 if since is None or d.decided_at >= since]
    load: dict[str, Counter[ReviewAction]] = defaultdict(Counter)
    for d in decisions:
        load[d.reviewer][d.action] += 1
    span = days or max(1.0, (now - min((d.decided_at for d in decisions), default=now))
                       .total_seconds() / 86400)
    pending = [it for it in items if it.state is ReviewState.pending]
    final = [it for it in items if it.decided_at is not None
             and (since is None or it.decided_at >= since)]
    waits = [(it.decided_at - it.flagged_at).total_seconds() / 3600 for it in final
             if it.decided_at is not None]
    return ReviewStats(
        since=since, days=span, decisions=len(decisions), per_day=len(decisions) / span,
        reviewers=tuple(ReviewerLoad(reviewer=r, approved=c[ReviewAction.approve],
                                     rejected=c[ReviewAction.reject])
                        for r, c in sorted(load.items())),
        pending=len(pending), disputed=sum(it.disputed for it in pending),
        oldest_pending_hours=max(((now - it.flagged_at).total_seconds() / 3600
                                  for it in pending), default=None),
        median_hours_to_decision=statistics.median(waits) if waits else None,
        agreement=agreement(items))


__all__ = ["Agreement", "ReviewStats", "ReviewerLoad", "agreement", "cohen_kappa",
           "review_stats"]
