"""Re-verifying a mended task before its approval: the rule of :mod:`repogym.datasets.reverify`
(the gold patch scores 1, graded twice before a failure counts; the empty patch scores 0),
graded in the task's own environment through :func:`repogym.datasets.verify.verify_batch`."""

from __future__ import annotations

from repogym.config import Settings
from repogym.datasets.reverify import decide
from repogym.datasets.review.queue import Recheck, Verifier
from repogym.datasets.verify import verify_batch
from repogym.schemas.arrow import TaskRow


def sandbox_verifier(settings: Settings | None = None, provider: str | None = None) -> Verifier:
    """A :data:`Verifier` grading in sandboxes of ``provider`` (default: the settings')."""
    conf = settings or Settings()
    name = provider or conf.provider

    def check(row: TaskRow) -> Recheck:
        gold, empty = verify_batch([row, row], [row.patch, ""], workers=1, provider=name,
                                   settings=conf)
        again = None
        if gold.result is not None and gold.result.reward < 1.0:
            [again] = verify_batch([row], [row.patch], workers=1, provider=name, settings=conf)
        found = decide(row.instance_id, gold, empty, again)
        if found.error:
            return Recheck(error=found.error)
        if found.retire is None:
            return Recheck(held=True, detail=f"gold patch {found.gold:g}, empty patch "
                                             f"{found.empty:g}")
        return Recheck(held=False, detail=f"{found.retire.value}: {found.detail}")

    return check


__all__ = ["sandbox_verifier"]
