"""The reward function verl (or any trainer) calls for tasks of the ``verl`` export.

    compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float
    compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos) -> [dict]

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
import os
import re
import secrets
import threading
from typing import Any, Mapping, Sequence

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


_POOL: dict[str, Any] = {}
_POOL_LOCK = threading.Lock()


def shared_pool(workers: int) -> Any:
    """The process's sandbox pool for batched rewards, made on first use: warm sandboxes
    carry over from one training step to the next. Its containers carry a namespace of
    their own, and a reaper removes them when the process exits, however it exits."""
    from repogym.config import Settings
    from repogym.sandboxes import get_provider
    from repogym.sandboxes.pool import SandboxPool
    from repogym.sandboxes.reaper import start_reaper

    with _POOL_LOCK:
        pool = _POOL.get("pool")
        if pool is None or pool.max_size < workers:
            if pool is not None:
                pool.close()
            settings = Settings()
            namespace = f"verl-reward-{os.getpid()}-{secrets.token_hex(3)}"
            if settings.provider == "docker":
                provider = get_provider("docker", settings, namespace=namespace)
                _POOL["reaper"] = start_reaper("docker", namespace)
            else:  # the local provider's sandboxes are processes of this one
                provider = get_provider(settings.provider, settings)
            pool = _POOL["pool"] = SandboxPool(provider, max_size=workers)
        return pool


def close_shared_pool() -> None:
    """Close the process's pool and remove its containers now (a trainer's shutdown; the
    reaper would do it at exit)."""
    with _POOL_LOCK:
        pool = _POOL.pop("pool", None)
        reaper = _POOL.pop("reaper", None)
    if pool is not None:
        pool.close()
        pool.provider.cleanup()
    if reaper is not None and reaper.stdin is not None:
        reaper.stdin.close()


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str],
                        ground_truths: Sequence[Any],
                        extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
                        **kwargs: Any) -> list[dict[str, Any]]:
    """verl's batched reward signature (``reward_model.reward_manager=batch``): the
    rewards of a batch, graded ``REPOGYM_VERIFY_WORKERS`` at a time (default 4) in warm
    sandboxes of the process's pool (:func:`shared_pool`), by
    :func:`repogym.datasets.verify.verify_batch`.

    Each item is ``{"score": ..., "infra_error": ...}``: ``score`` is 1.0 or 0.0 (an answer
    without a diff scores 0.0 without a sandbox), and an item whose sandbox broke has
    ``score`` NaN and ``infra_error`` saying why -- never a 0 the policy did not earn; drop
    or retry those samples.

    Raises:
        InputError: a ground truth is not a grading spec, or the lists differ in length.
    """
    from repogym.config import Settings
    from repogym.datasets.verify import verify_batch

    if not len(data_sources) == len(solution_strs) == len(ground_truths):
        raise InputError("data_sources, solution_strs and ground_truths differ in length")
    specs = [_spec(truth) for truth in ground_truths]
    patches = [extract_diff(answer) for answer in solution_strs]
    todo = [i for i, patch in enumerate(patches) if patch.strip()]
    scores: list[dict[str, Any]] = [{"score": 0.0, "infra_error": ""} for _ in specs]
    if not todo:
        return scores
    settings = Settings()
    workers = int(os.environ.get("REPOGYM_VERIFY_WORKERS", "4"))
    graded = verify_batch([specs[i] for i in todo], [patches[i] for i in todo],
                          workers=workers, pool=shared_pool(workers), settings=settings,
                          timeout=settings.test_timeout)
    for i, item in zip(todo, graded):
        scores[i] = ({"score": float("nan"), "infra_error": item.error} if item.error
                     else {"score": float(item.reward or 0.0), "infra_error": ""})
    return scores
