"""Why a candidate is not an accepted task: the reason codes of verdicts, as one enum.

A verdict's ``reason`` (a dataset column) is ``<reason>`` or ``<reason>:<qualifier>``:
the :class:`Reason`, and where it helps, which check or probe said so (``oracle:gold``,
``probe:skip_tests``, ``infra:timeout``, ``env_mismatch:no_tests``). Producers write
:meth:`Reason.code`; readers (the review queue, statistics) get the reason back with
:meth:`Reason.of`. Rows written before a reason was added read as ``None`` there, never as
an error.
"""

from __future__ import annotations

from enum import Enum


class Reason(str, Enum):
    """The first part of a verdict's reason code."""

    # rejected: not a task
    no_op = "no_op"  # no test fails with the bug (or before the fix)
    uncovered = "uncovered"  # no passing test runs the changed lines (decided before any run)
    oracle = "oracle"  # the gold patch does not make the failing tests pass (every rerun)
    too_blunt = "too_blunt"  # the bug breaks the whole suite (nothing to learn from)
    env_mismatch = "env_mismatch"  # a mined fix's commit does not run in this environment
    misbehaving_test = "misbehaving_test"  # the tests the fix makes pass have side effects
    gold_discarded = "gold_discarded"  # grading would throw the fix itself away
    test_patch_does_not_apply = "test_patch_does_not_apply"
    bug_patch_does_not_apply = "bug_patch_does_not_apply"
    gold_patch_does_not_apply = "gold_patch_does_not_apply"
    env = "env"  # the environment at the candidate's commit does not install (settled)
    # sent to review: maybe a task, a person decides
    probe = "probe"  # a reward hack scores on this test setup
    flaky = "flaky"  # a FAIL_TO_PASS test passes now and then at the broken state
    underspecified = "underspecified"  # the statement does not say enough to solve it
    statement_leak = "statement_leak"  # the statement gives the fix away
    llm_judge = "llm_judge"  # the LLM judge doubts it
    # not a verdict about the candidate: judged again on the next run
    infra = "infra"
    # once accepted, no longer holds (re-verification): ``retired:oracle``, ``retired:no_op``
    retired = "retired"

    def code(self, qualifier: str = "") -> str:
        """The reason code as the dataset keeps it: ``value`` or ``value:qualifier``."""
        return f"{self.value}:{qualifier}" if qualifier else self.value

    @classmethod
    def of(cls, code: str) -> Reason | None:
        """The reason of a stored code (None for "" and for codes this version lacks)."""
        try:
            return cls(code.split(":", 1)[0])
        except ValueError:
            return None


__all__ = ["Reason"]
