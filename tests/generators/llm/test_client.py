"""LLMClient without a server: litellm's mock_response, the cache, the budget, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from repogym.errors import InfraError, RepogymError
from repogym.generators.llm import BudgetExceeded, LLMClient, LLMError, LLMSettings
from repogym.generators.llm.cache import CachedAnswer, ResponseCache, cache_key

MESSAGES = [{"role": "user", "content": "say hi"}]


def _mock(tmp_path: Path, **overrides: Any) -> LLMClient:
    settings = LLMSettings(**{"model": "openai/mock", "mock_response": "hi there", **overrides})
    return LLMClient(settings, cache_dir=tmp_path / "cache")


def test_mock_response_then_cache_hit(tmp_path: Path) -> None:
    client = _mock(tmp_path)
    first = client.complete(MESSAGES, purpose="t", seed=1)
    again = client.complete(MESSAGES, purpose="t", seed=1)
    assert (first.text, first.cached, first.cost_usd) == ("hi there", False, 0.0)
    assert (again.text, again.cached, again.cost_usd) == ("hi there", True, 0.0)


def test_cache_survives_a_new_client_and_keys_on_purpose_and_seed(tmp_path: Path) -> None:
    _mock(tmp_path).complete(MESSAGES, purpose="t", seed=1)
    rerun = _mock(tmp_path, mock_response="other")
    assert rerun.complete(MESSAGES, purpose="t", seed=1).cached
    assert rerun.complete(MESSAGES, purpose="t", seed=2).text == "other"
    assert rerun.complete(MESSAGES, purpose="u", seed=1).text == "other"


def test_known_model_is_priced_from_the_local_cost_map(tmp_path: Path) -> None:
    client = _mock(tmp_path, model="gpt-4o-mini", api_key="sk-test")
    completion = client.complete(MESSAGES, purpose="t", seed=0)
    assert completion.cost_usd > 0 and client.spent_usd == completion.cost_usd


def test_budget_stops_uncached_calls_but_not_cached_ones(tmp_path: Path) -> None:
    client = _mock(tmp_path, input_cost_per_token=0.01, budget_usd=0.05)
    client.complete(MESSAGES, purpose="t", seed=1)  # mock usage: 10 prompt tokens -> $0.10
    assert client.spent_usd == pytest.approx(0.10)
    with pytest.raises(BudgetExceeded) as info:
        client.complete(MESSAGES, purpose="t", seed=2)
    assert info.value.budget_usd == 0.05 and isinstance(info.value, RepogymError)
    assert not isinstance(info.value, InfraError)
    assert client.complete(MESSAGES, purpose="t", seed=1).cached


def test_disabled_client_refuses_to_call(tmp_path: Path) -> None:
    with pytest.raises(LLMError, match="no LLM model"):
        LLMClient(LLMSettings(), tmp_path).complete(MESSAGES, purpose="t", seed=0)


def test_litellm_errors_become_llm_error(tmp_path: Path) -> None:
    client = _mock(tmp_path, model="no-such-provider/x", mock_response=None)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, purpose="t", seed=0)
    assert isinstance(info.value, InfraError) and info.value.__cause__ is not None


def test_cache_files_are_json_and_a_corrupt_one_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = cache_key("m", MESSAGES, temperature=0.8, max_tokens=10, purpose="p", seed=0)
    cache.put(CachedAnswer(key=key, model="m", purpose="p", text="x", cost_usd=0.5))
    assert json.loads(cache.path(key).read_text())["text"] == "x"
    assert [p.name for p in cache.path(key).parent.iterdir()] == [f"{key}.json"]  # no temp left
    cache.path(key).write_text("{not json")
    assert cache.get(key) is None


def test_importing_the_package_does_not_import_litellm() -> None:
    code = "import sys, repogym.generators.llm; print('litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
