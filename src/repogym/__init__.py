"""repogym: turn any repository into a growing corpus of verifiable RL coding tasks.

The public face is small: :func:`verify` grades a patch for a task (the reward trainers
use), :func:`verify_batch` a batch of them in warm sandboxes, and the ``repogym`` command
runs the pipeline and serves live environments. Heavy modules load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from repogym.datasets.verify import BatchItem, GradingSpec, Result, verify, verify_batch

__all__ = ["BatchItem", "GradingSpec", "Result", "__version__", "verify", "verify_batch"]


def __getattr__(name: str) -> Any:
    if name in {"verify", "verify_batch", "BatchItem", "GradingSpec", "Result"}:
        from repogym.datasets import verify as module

        return getattr(module, name)
    raise AttributeError(f"module 'repogym' has no attribute {name!r}")
