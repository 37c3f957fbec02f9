"""One door to the models: :class:`LLMClient` calls litellm, caches answers, keeps the bill.

    complete(messages) ──cache hit──▶ Completion(cached=True, cost 0)
          │ miss
          ├── over budget? ──▶ BudgetExceeded
          └── litellm.completion ──▶ cost ──▶ cache ──▶ Completion(cached=False)

litellm is imported on the first uncached call, not with this module: it takes seconds.
Everything litellm raises is translated into :class:`LLMError` at this boundary.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping, Sequence

from repogym.generators.llm.cache import CachedAnswer, ResponseCache, cache_key
from repogym.generators.llm.errors import BudgetExceeded, LLMError
from repogym.generators.llm.settings import LLMSettings
from repogym.schemas.records import Record

log = logging.getLogger(__name__)

Messages = Sequence[Mapping[str, str]]


class Completion(Record):
    """A model's answer.

    Attributes:
        text: the answer's text.
        cost_usd: what this call cost (0.0 when it came from the cache).
        cached: whether it came from the on-disk cache.
        model: the model that answered (as litellm reports it).
    """

    text: str
    cost_usd: float
    cached: bool
    model: str


def _litellm(local_cost_map: bool = True) -> ModuleType:
    """litellm, imported on first use and told not to print provider banners.

    With ``local_cost_map`` (and ``LITELLM_LOCAL_MODEL_COST_MAP`` unset), litellm uses the
    price map bundled with it rather than fetching one from GitHub while it is imported
    (which, offline, retries for seconds). Only the first import in a process counts.
    """
    if local_cost_map:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


class LLMClient:
    """Calls the configured model through litellm, with a disk cache and a budget.

    Safe to share between threads: the running cost is updated under a lock.
    """

    def __init__(self, settings: LLMSettings, cache_dir: Path | None = None) -> None:
        """
        Args:
            settings: the model, endpoint, sampling and budget settings.
            cache_dir: where answers are cached; defaults to ``settings.cache_dir``.

        Raises:
            ValueError: neither ``cache_dir`` nor ``settings.cache_dir`` is given.
        """
        root = cache_dir or settings.cache_dir
        if root is None:
            raise ValueError("LLMClient needs a cache_dir (e.g. <out>/.cache/llm)")
        self.settings = settings
        self.cache = ResponseCache(root)
        self._spent = 0.0
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        """Whether a model is configured (``settings.model`` is not empty)."""
        return self.settings.enabled

    @property
    def spent_usd(self) -> float:
        """The cost of the uncached calls this client made so far."""
        return self._spent

    def complete(self, messages: Messages, *, purpose: str, seed: int,
                 temperature: float | None = None) -> Completion:
        """The model's answer to ``messages``, from the cache when it was asked before.

        Args:
            messages: chat messages (``{"role": ..., "content": ...}``).
            purpose: what the answer is for (``"llm_rewrite"``...); part of the cache key.
            seed: sent to the model (where supported) and part of the cache key.
            temperature: this call's sampling temperature (default: the settings').

        Raises:
            LLMError: no model is configured, the call failed or returned no text.
            BudgetExceeded: the answer is not cached and the budget is already spent.
        """
        if not self.enabled:
            raise LLMError("no LLM model configured (set REPOGYM_LLM_MODEL)")
        s = self.settings
        temp = s.temperature if temperature is None else temperature
        key = cache_key(s.model, messages, temperature=temp, max_tokens=s.max_tokens,
                        purpose=purpose, seed=seed)
        hit = self.cache.get(key)
        if hit is not None:
            return Completion(text=hit.text, cost_usd=0.0, cached=True, model=hit.model)
        self._check_budget()
        response = self._call(messages, seed, temp)
        text, model = _answer_text(response), str(getattr(response, "model", "") or s.model)
        cost = self._cost(response)
        self._add(cost)
        self.cache.put(CachedAnswer(key=key, model=model, purpose=purpose, text=text,
                                    cost_usd=cost))
        return Completion(text=text, cost_usd=cost, cached=False, model=model)

    def _check_budget(self) -> None:
        budget = self.settings.budget_usd
        with self._lock:
            if budget is not None and self._spent > budget:
                raise BudgetExceeded(self._spent, budget)

    def _add(self, cost: float) -> None:
        with self._lock:
            self._spent += cost

    def _call(self, messages: Messages, seed: int, temperature: float) -> Any:
        """One litellm.completion call; any failure becomes :class:`LLMError`."""
        litellm = _litellm(self.settings.local_cost_map)
        try:
            return litellm.completion(**self._request(messages, seed, temperature))
        except Exception as exc:  # noqa: BLE001 - litellm's errors share no single base
            raise LLMError(f"{self.settings.model}: {type(exc).__name__}: {exc}") from exc

    def _request(self, messages: Messages, seed: int, temperature: float) -> dict[str, Any]:
        s = self.settings
        request: dict[str, Any] = {
            "model": s.model, "messages": [dict(m) for m in messages],
            "temperature": temperature, "max_tokens": s.max_tokens, "timeout": s.timeout,
            "seed": seed, "drop_params": True, "num_retries": s.num_retries}
        if s.base_url:
            request["api_base"] = s.base_url
        if (key := s.resolved_api_key()) is not None:
            request["api_key"] = key
        if s.mock_response is not None:
            request["mock_response"] = s.mock_response
        return request

    def _cost(self, response: Any) -> float:
        """The call's cost: from the configured prices, else litellm's map, else 0.0."""
        s = self.settings
        if s.input_cost_per_token is not None or s.output_cost_per_token is not None:
            usage = getattr(response, "usage", None)
            prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
            completion = int(getattr(usage, "completion_tokens", 0) or 0)
            return (prompt * (s.input_cost_per_token or 0.0)
                    + completion * (s.output_cost_per_token or 0.0))
        try:
            return float(_litellm(s.local_cost_map).completion_cost(completion_response=response) or 0.0)
        except Exception as exc:  # noqa: BLE001 - unknown models raise various errors
            log.debug("no price for %s (%s); counting 0.0", s.model, exc)
            return 0.0


def _answer_text(response: Any) -> str:
    """The first choice's text; :class:`LLMError` when there is none."""
    try:
        text = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError) as exc:
        raise LLMError(f"malformed model response: {exc}") from exc
    if not isinstance(text, str) or not text.strip():
        raise LLMError("the model returned an empty answer")
    return text
