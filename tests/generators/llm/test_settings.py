"""LLMSettings: env prefix, defaults, and which API key is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.generators.llm import LLMClient, LLMSettings, default_cache_dir


def test_defaults_mean_no_llm() -> None:
    s = LLMSettings()
    assert s.model == "" and not s.enabled
    assert s.temperature == 0.8 and s.budget_usd is None and s.mock_response is None


def test_reads_repogym_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPOGYM_LLM_MODEL", "openai/qwen")
    monkeypatch.setenv("REPOGYM_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("REPOGYM_LLM_BUDGET_USD", "2.5")
    s = LLMSettings()
    assert (s.model, s.base_url, s.budget_usd, s.enabled) == (
        "openai/qwen", "http://127.0.0.1:9/v1", 2.5, True)


def test_local_server_gets_a_placeholder_key_and_providers_their_own() -> None:
    assert LLMSettings(model="openai/x", base_url="http://h/v1").resolved_api_key() == "sk-local"
    assert LLMSettings(model="gpt-4o-mini").resolved_api_key() is None
    assert LLMSettings(model="gpt-4o-mini", api_key="k").resolved_api_key() == "k"


def test_cache_dir_from_argument_or_settings(tmp_path: Path) -> None:
    assert default_cache_dir(tmp_path) == tmp_path / ".cache" / "llm"
    assert LLMClient(LLMSettings(), tmp_path / "a").cache.root == tmp_path / "a"
    assert LLMClient(LLMSettings(cache_dir=tmp_path / "b")).cache.root == tmp_path / "b"
    with pytest.raises(ValueError, match="cache_dir"):
        LLMClient(LLMSettings())
