"""LLM settings: which model, where it is served, what it may cost.

Read from ``REPOGYM_LLM_*`` environment variables (or passed as keyword arguments)::

    REPOGYM_LLM_MODEL=openai/qwen2.5-coder            # litellm model name; "" = no LLM
    REPOGYM_LLM_BASE_URL=http://127.0.0.1:8000/v1      # an OpenAI-compatible server
    REPOGYM_LLM_BUDGET_USD=5                           # stop once spent > $5
    REPOGYM_LLM_JUDGE=true                             # score accepted tasks (flags only)
    REPOGYM_LLM_JUDGE_THRESHOLD=3                      # a score below this: review

With ``model == ""`` (the default) nothing calls a model: the LLM generators produce no
candidates, statements come from the offline writer and the LLM judge does nothing.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

LOCAL_API_KEY = "sk-local"


class LLMSettings(BaseSettings):
    """How to reach the model and how much it may cost.

    Attributes:
        model: a litellm model name (``"openai/<name>"`` for an OpenAI-compatible server
            at ``base_url``, ``"gpt-4o-mini"``, ``"anthropic/..."``); ``""`` disables LLMs.
        base_url: the API base, e.g. ``http://127.0.0.1:8000/v1``; None for the
            provider's default endpoint.
        api_key: the key to send. None means: ``"sk-local"`` when ``base_url`` is set (local
            servers ignore it but the OpenAI client wants one), else litellm reads the
            provider's usual variable (``OPENAI_API_KEY``, ...).
        temperature: sampling temperature.
        max_tokens: the most tokens one answer may have.
        budget_usd: no new (uncached) call once the cumulative cost exceeds this; None
            means no limit. One call may overshoot by its own cost.
        timeout: seconds one request may take.
        num_retries: retries litellm makes on a failed request.
        cache_dir: where answers are cached; usually given to :class:`LLMClient` instead
            (``<out>/.cache/llm``, see :func:`default_cache_dir`).
        mock_response: when set, litellm answers with this text without any network
            (tests, dry runs).
        input_cost_per_token / output_cost_per_token: a price for models litellm does not
            know (self-hosted ones cost 0.0 otherwise).
        local_cost_map: price with the map bundled in litellm instead of letting litellm
            fetch the latest one from GitHub when it is first imported (sets
            ``LITELLM_LOCAL_MODEL_COST_MAP=True`` unless already set).
        judge: run the LLM judge (:mod:`repogym.judges.llm_judge`) on accepted tasks; it
            only has an effect when ``model`` is set too.
        judge_threshold: a clarity or solvability score (1-5) below this sends the task
            to review; scores at or above it are kept as evidence only.
    """

    model_config = SettingsConfigDict(env_prefix="REPOGYM_LLM_", extra="ignore")

    model: str = ""
    base_url: str | None = None
    api_key: str | None = None
    temperature: float = Field(default=0.8, ge=0.0, le=2.0)
    max_tokens: int = Field(default=2048, gt=0)
    budget_usd: float | None = Field(default=None, ge=0.0)
    timeout: float = Field(default=120.0, gt=0)
    num_retries: int = Field(default=2, ge=0)
    cache_dir: Path | None = None
    mock_response: str | None = None
    input_cost_per_token: float | None = Field(default=None, ge=0.0)
    output_cost_per_token: float | None = Field(default=None, ge=0.0)
    local_cost_map: bool = True
    judge: bool = False
    judge_threshold: int = Field(default=3, ge=1, le=5)

    @property
    def enabled(self) -> bool:
        """Whether a model is configured at all."""
        return bool(self.model)

    @property
    def judge_enabled(self) -> bool:
        """Whether the LLM judge runs: asked for (``judge``) and a model is configured."""
        return self.judge and self.enabled

    def resolved_api_key(self) -> str | None:
        """The key to send: the configured one, ``"sk-local"`` for a local server, or None."""
        if self.api_key:
            return self.api_key
        return LOCAL_API_KEY if self.base_url else None


def default_cache_dir(out: Path) -> Path:
    """Where LLM answers are cached for an output folder: ``<out>/.cache/llm``."""
    return out / ".cache" / "llm"
