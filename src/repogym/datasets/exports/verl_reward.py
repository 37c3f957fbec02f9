"""The reward function verl (or any trainer) calls for tasks of the ``verl`` export.

    compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float

It takes the diff out of the model's answer (:func:`extract_diff`) and grades it with
:func:`repogym.datasets.verify.verify`, the one grading path, in a sandbox of the task's
environment image: 1.0 when every FAIL_TO_PASS and PASS_TO_PASS test passes, else 0.0. An
answer without a diff scores 0.0 without opening a sandbox.

Settings come from the environment (``REPOGYM_PROVIDER``, ``REPOGYM_TEST_TIMEOUT``,
limits...; see :class:`repogym.config.Settings`). A sandbox that breaks raises
:class:`~repogym.errors.SandboxError`: an infrastructure failure is not a reward of 0, and
the trainer decides whether to retry or drop the sample.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from pydantic import ValidationError

from repogym.errors import InputError

_FENCE = re.compile(r"^```[ \t]*([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_DIFF_START = re.compile(r"^(diff --git |--- (?:a/|/dev/null)|--- \S)", re.M)
_DIFF_LANGS = {"diff", "patch", "udiff"}


def _looks_like_diff(text: str) -> bool:
    return bool(re.search(r"^(diff --git |--- \S.*\n\+\+\+ |@@ -\d)", text, re.M))


def _tidy(diff: str) -> str:
    start = _DIFF_START.search(diff)
    diff = diff[start.start():] if start else diff
    return diff if diff.endswith("\n") or not diff else diff + "\n"


def extract_diff(answer: str) -> str:
    """The unified diff in a model's answer, or "" when there is none.

    The last fenced block tagged ``diff``/``patch``/``udiff``; else the last fenced block
    that looks like a diff; else the raw text from the first ``diff --git`` / ``--- `` line
    to the end. Lines are kept byte for byte (context lines start with a space).
    """
    text = answer or ""
    blocks = _FENCE.findall(text)
    tagged = [body for lang, body in blocks if lang.lower() in _DIFF_LANGS]
    for body in [*reversed(tagged), *reversed([b for _, b in blocks])]:
        if _looks_like_diff(body):
            return _tidy(body)
    outside = _FENCE.sub("", text)
    return _tidy(outside) if _DIFF_START.search(outside) else ""


def _spec(ground_truth: Any) -> Any:
    from repogym.grading import GradingSpec

    try:
        if isinstance(ground_truth, (str, bytes)):
            return GradingSpec.model_validate_json(ground_truth)
        if isinstance(ground_truth, Mapping):
            return GradingSpec.model_validate(dict(ground_truth))
    except (ValidationError, ValueError, json.JSONDecodeError) as exc:
        raise InputError(f"ground_truth is not a repogym grading spec: {exc}") from exc
    raise InputError(f"ground_truth must be a JSON string or a mapping, "
                     f"not {type(ground_truth).__name__}")


def compute_score(data_source: str, solution_str: str, ground_truth: Any,
                  extra_info: Mapping[str, Any] | None = None) -> float:
    """The reward of one answer: 1.0 if its diff fixes the task, else 0.0.

    Args:
        data_source: the row's ``data_source`` (unused; every repogym task grades alike).
        solution_str: the model's answer (text with a diff in it).
        ground_truth: the row's ``reward_model.ground_truth`` (JSON of a GradingSpec).
        extra_info: the row's ``extra_info`` (unused).

    Raises:
        InputError: ``ground_truth`` is not a grading spec.
        SandboxError: the sandbox could not be opened or broke.
    """
    from repogym.config import Settings
    from repogym.datasets.verify import verify

    spec = _spec(ground_truth)
    patch = extract_diff(solution_str)
    if not patch.strip():
        return 0.0
    settings = Settings()
    result = verify(spec, patch, provider=settings.provider, settings=settings,
                    timeout=settings.test_timeout)
    return float(result.reward)
