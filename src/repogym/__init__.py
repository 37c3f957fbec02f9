"""repogym: turn any repository into a growing corpus of verifiable RL coding tasks.

The public face is small: :func:`verify` grades a patch for a task (the reward trainers
use), and the ``repogym`` command runs the pipeline. Heavy modules load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from repogym.datasets.verify import GradingSpec, Result, verify

__all__ = ["GradingSpec", "Result", "__version__", "verify"]


def __getattr__(name: str) -> Any:
    if name in {"verify", "GradingSpec", "Result"}:
        from repogym.datasets import verify as module

        return getattr(module, name)
    raise AttributeError(f"module 'repogym' has no attribute {name!r}")
