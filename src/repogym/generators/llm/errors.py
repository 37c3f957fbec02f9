"""Errors of the LLM generators.

    RepogymError
    ├── InfraError
    │   └── LLMError           the model could not be called, or gave no usable answer
    └── BudgetExceeded         the configured spend is used up: a deliberate stop

``LLMError`` is an infrastructure failure (the endpoint is down, times out, rejects the
key): it says nothing about the repository or a task. ``BudgetExceeded`` is neither bad
input nor broken infrastructure but a limit the user set being reached, so it hangs off
the root: a caller that turns ``InfraError`` into ``infra_error`` verdicts does not
mistake "we chose to stop spending" for an outage. The generators catch both and stop
(or fall back to the offline writer); a caller may catch ``BudgetExceeded`` to end a run.
"""

from __future__ import annotations

from repogym.errors import InfraError, RepogymError


class LLMError(InfraError):
    """A model call failed (network, provider error, timeout) or returned no text."""


class BudgetExceeded(RepogymError):
    """The cumulative cost of LLM calls went over ``LLMSettings.budget_usd``.

    Attributes:
        spent_usd: what was spent so far.
        budget_usd: the limit.
    """

    def __init__(self, spent_usd: float, budget_usd: float) -> None:
        super().__init__(f"LLM budget exceeded: spent ${spent_usd:.4f} of ${budget_usd:.4f}")
        self.spent_usd, self.budget_usd = spent_usd, budget_usd
