"""``verify(task, patch) -> Result``: a dataset task graded, the way trainers call it.

It opens a sandbox on the task's environment image and grades through
:func:`repogym.grading.grade_in` (the steps are there), the path the judge and its probes
use too.
"""

from __future__ import annotations

from typing import Sequence

from repogym.config import Settings
from repogym.grading import GradingSpec, Result, grade_in
from repogym.limits import policy_for


def verify(task: object, patch: str, *, provider: str = "docker",
           settings: Settings | None = None, partial: bool = False,
           timeout: float = 600.0) -> Result:
    """Grade ``patch`` (a unified diff against the broken state) for ``task``.

    Args:
        task: a :class:`GradingSpec`, or anything with the dataset's columns (a ``TaskRow``).
        patch: the policy's changes; changes to test files and runner config are discarded.
        provider: the sandbox provider the task's image belongs to.
        partial: reward = share of listed tests passing (default: 1 only if all pass).

    Raises:
        SandboxError: the sandbox could not be opened or broke (not a reward of 0).
    """
    spec = task if isinstance(task, GradingSpec) else spec_of(task)
    from repogym.sandboxes import get_provider
    from repogym.toolchains import toolchain_for

    toolchain = toolchain_for(spec.language)  # before any sandbox: an unknown one is bad input
    settings = settings or Settings()
    prov = get_provider(provider, settings)
    policy = policy_for(min(timeout, settings.test_timeout), settings.per_test_timeout)
    with prov.open(prov.env_for(spec.image)) as sandbox:
        return grade_in(sandbox, toolchain, spec, patch, timeout=timeout,
                        partial=partial, policy=policy)


def spec_of(row: object) -> GradingSpec:
    """A GradingSpec from anything with the dataset's columns (a TaskRow, say); the
    optional fields (time limits, runner changes, protected files) when it has them."""
    fields = {name: getattr(row, name) for name in GradingSpec.model_fields
              if hasattr(row, name)}
    return GradingSpec(**fields)


__all__: Sequence[str] = ("GradingSpec", "Result", "grade_in", "spec_of", "verify")
