"""How sure we are of a task: the checks it passed, kept with the task, and one number.

A task's :class:`Confidence` is written into its evidence (key :data:`CONFIDENCE_KEY`, as
JSON) by the judge that accepts it, and updated by the steps that look at it again: a
reviewer's approval (:data:`REVIEWER_KEY`), a re-verification that held
(:data:`REVERIFIED_KEY`). The dataset's ``confidence`` column is :attr:`Confidence.score`
of what :func:`confidence_of` reads from the row's evidence, so trainers filter on one
column (``confidence >= 0.9``) and can read why from the evidence.

The score, in [0, 1], is a product of documented factors (:meth:`Confidence.score`):

* **agreement**: each run that agreed with the verdict -- a gold-state run in which every
  listed test passed, a broken-state run in which FAIL_TO_PASS failed, each half of a
  re-verification that held -- halves the remaining doubt: ``1 - 0.5 ** checks`` (one
  run of each state: 0.75; the defaults, three gold runs and one broken: 0.94);
* **a flaky suite**: a repository whose baseline saw a share ``f`` of its tests flake
  makes its tasks less sure, by ``1 - min(f, 0.5)``;
* **reward hacks**: a task graded against the environment's probe set and withstanding
  every probe keeps its score; one never probed is worth 0.9 of it, and one on which a
  hack scored (a reviewer approved it all the same) 0.8 of it.

Rows written before this record existed read their evidence's plain strings (``oracle``:
``reran x3``, ``probes_passed``: ``12 probes on ...``) into one; what those strings do not
say (the baseline's flaky share) counts as nothing known against the task.
"""

from __future__ import annotations

import json
import re
from typing import Mapping

from pydantic import Field, ValidationError

from repogym.schemas.records import Record

CONFIDENCE_KEY = "confidence"
REVIEWER_KEY = "review_reviewer"
REVERIFIED_KEY = "reverified"
REVERIFIED_AT_KEY = "reverified_at"
UNPROBED = 0.9
PROBE_SCORED = 0.8
MAX_FLAKY_SHARE = 0.5


class Confidence(Record):
    """The checks one task passed (counts), and the review it had if any."""

    oracle_runs: int = Field(0, ge=0)  # gold-state runs, every listed test passing in each
    broken_runs: int = Field(0, ge=0)  # broken-state runs, FAIL_TO_PASS failing in each
    baseline_runs: int = Field(0, ge=0)  # runs of the whole suite at the clean state
    baseline_tests: int = Field(0, ge=0)  # tests the baseline saw
    baseline_flaky: int = Field(0, ge=0)  # of those, tests whose outcome changed between runs
    probes: int = Field(0, ge=0)  # reward hacks graded against the task's environment
    probes_scored: int = Field(0, ge=0)  # of those, hacks that scored (sent it to review)
    reviewer: str = ""  # who approved it in manual review ("" : never reviewed)
    reverified: int = Field(0, ge=0)  # re-verifications (gold and no-op) it held

    @property
    def checks(self) -> int:
        """Runs that agreed with the verdict: each re-verification is a run of both states."""
        return self.oracle_runs + self.broken_runs + 2 * self.reverified

    @property
    def flaky_share(self) -> float:
        return self.baseline_flaky / self.baseline_tests if self.baseline_tests else 0.0

    @property
    def score(self) -> float:
        """The product of the module docstring's factors, rounded to 4 places."""
        score = 1.0 - 0.5 ** self.checks
        score *= 1.0 - min(self.flaky_share, MAX_FLAKY_SHARE)
        if self.probes_scored:
            score *= PROBE_SCORED
        elif not self.probes:
            score *= UNPROBED
        return round(score, 4)


def confidence_of(evidence: Mapping[str, str]) -> Confidence:
    """A row's confidence from its evidence: the judge's record when there is one (else
    what older rows' ``oracle`` and ``probes_passed`` say), with the reviewer and the
    re-verifications recorded beside it."""
    conf = _recorded(evidence.get(CONFIDENCE_KEY, "")) or _legacy(evidence)
    update: dict[str, object] = {}
    if reviewer := evidence.get(REVIEWER_KEY, ""):
        update["reviewer"] = reviewer
    if (held := evidence.get(REVERIFIED_KEY, "")).isdigit():
        update["reverified"] = int(held)
    return conf.model_copy(update=update) if update else conf


def confidence_evidence(conf: Confidence) -> dict[str, str]:
    """The evidence entry that records ``conf``."""
    return {CONFIDENCE_KEY: conf.model_dump_json(exclude_defaults=True)}


def _recorded(raw: str) -> Confidence | None:
    if not raw:
        return None
    try:
        return Confidence.model_validate(json.loads(raw))
    except (ValueError, ValidationError):
        return None


_RUNS = re.compile(r"x(\d+)$")
_PROBES = re.compile(r"^(\d+) probes?\b")


def _legacy(evidence: Mapping[str, str]) -> Confidence:
    """What an older row's evidence says: ``oracle`` is ``reran xN``, ``baseline xN`` or
    ``differential xN`` (N gold runs after one broken run); ``probes_passed`` counts the
    probes it withstood. A row with neither (a rejection) has no check to its name."""
    runs = _RUNS.search(evidence.get("oracle", ""))
    probes = _PROBES.match(evidence.get("probes_passed", ""))
    if runs is None:
        return Confidence(probes=int(probes.group(1)) if probes else 0)
    return Confidence(oracle_runs=int(runs.group(1)), broken_runs=1,
                      probes=int(probes.group(1)) if probes else 0)


def confidence_score(evidence: Mapping[str, str]) -> float:
    """The ``confidence`` column of a row with this evidence."""
    return confidence_of(evidence).score


__all__ = ["CONFIDENCE_KEY", "Confidence", "REVERIFIED_KEY", "REVIEWER_KEY",
           "confidence_evidence", "confidence_of", "confidence_score"]
