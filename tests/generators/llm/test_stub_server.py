"""Real HTTP through litellm to a local OpenAI-compatible stub (``openai/stub``).

The stub runs on 127.0.0.1 in a thread (see conftest); it records every request, so the
tests can tell a cache hit (no request) from a call.
"""

from __future__ import annotations

import subprocess
from typing import Callable

import pytest

from repogym.generators.llm import (
    BudgetExceeded,
    LLMClient,
    LLMError,
    llm_statement,
    rewrite_candidates,
)
from repogym.generators.statements import evidence_from_messages, offline_statement
from repogym.schemas.records import Checkout
from repogym.toolchains.python import PythonToolchain
from tests.conftest import git
from tests.generators.llm.conftest import StubServer, answer_for, prompt_of

MESSAGES = [{"role": "user", "content": "hello?"}]
ClientFactory = Callable[..., LLMClient]


def test_request_reaches_the_stub(stub_server: StubServer, stub_client: ClientFactory) -> None:
    stub_server.reply = lambda body: "pong"
    completion = stub_client(temperature=0.3, max_tokens=77).complete(
        MESSAGES, purpose="t", seed=5)
    assert (completion.text, completion.cached, completion.cost_usd) == ("pong", False, 0.0)
    (body,) = stub_server.requests
    assert body["model"] == "stub" and body["messages"] == MESSAGES
    assert body["temperature"] == 0.3 and body["max_tokens"] == 77 and body["seed"] == 5


def test_second_call_is_served_from_the_cache(stub_server: StubServer,
                                              stub_client: ClientFactory) -> None:
    client = stub_client()
    client.complete(MESSAGES, purpose="t", seed=0)
    again = stub_client().complete(MESSAGES, purpose="t", seed=0)  # a fresh client, same dir
    assert len(stub_server.requests) == 1
    assert again.cached and again.cost_usd == 0.0 and again.text == "hello"


def test_budget_exhaustion_raises_before_calling(stub_server: StubServer,
                                                 stub_client: ClientFactory) -> None:
    # 100 prompt + 50 completion tokens at these prices: $0.20 a call.
    client = stub_client(input_cost_per_token=0.001, output_cost_per_token=0.002,
                         budget_usd=0.3)
    costs = [client.complete(MESSAGES, purpose="t", seed=s).cost_usd for s in (1, 2)]
    assert costs == [pytest.approx(0.2)] * 2
    with pytest.raises(BudgetExceeded):
        client.complete(MESSAGES, purpose="t", seed=3)
    assert len(stub_server.requests) == 2 and client.spent_usd == pytest.approx(0.4)


def test_server_error_is_an_llm_error(stub_server: StubServer,
                                      stub_client: ClientFactory) -> None:
    stub_server.status = 500
    with pytest.raises(LLMError):
        stub_client().complete(MESSAGES, purpose="t", seed=0)
    assert len(stub_server.requests) == 1  # num_retries=0: no retry


def test_rewrite_patch_applies_and_gold_reverts(stub_server: StubServer,
                                                stub_client: ClientFactory,
                                                demo_checkout: Checkout,
                                                toolchain: PythonToolchain) -> None:
    stub_server.reply = lambda body: answer_for(prompt_of(body))
    cands = rewrite_candidates(demo_checkout, toolchain, stub_client(), seed=7,
                               max_candidates=3)
    assert sorted(c.provenance["function"] for c in cands) == ["Stack.push_all", "clamp", "mean"]
    assert len(stub_server.requests) == 3
    assert all("tests/" not in prompt_of(b) for b in stub_server.requests)
    root = demo_checkout.path
    original = (root / "demo/lib.py").read_text()
    for cand in cands:
        for patch in (cand.bug_patch, cand.gold_patch):
            subprocess.run(["git", "apply", "-"], cwd=root, input=patch, text=True, check=True)
            if patch is cand.bug_patch:
                assert (root / "demo/lib.py").read_text() != original
        assert git(root, "status", "--porcelain") == ""


def test_rewrite_stops_after_repeated_errors(stub_server: StubServer,
                                             stub_client: ClientFactory,
                                             demo_checkout: Checkout,
                                             toolchain: PythonToolchain) -> None:
    stub_server.status = 500
    assert rewrite_candidates(demo_checkout, toolchain, stub_client(), seed=0,
                              max_candidates=10) == []
    assert len(stub_server.requests) == 3


def test_leaking_statement_from_the_stub_falls_back(stub_server: StubServer,
                                                    stub_client: ClientFactory,
                                                    demo_checkout: Checkout,
                                                    toolchain: PythonToolchain) -> None:
    stub_server.reply = lambda body: answer_for(prompt_of(body))
    client = stub_client(input_cost_per_token=0.001)
    (cand,) = rewrite_candidates(demo_checkout, toolchain, client, seed=0, max_candidates=1)
    f2p = ["tests/test_lib.py::test_mean"]
    messages = {f2p[0]: "tests/test_lib.py::test_mean: assert 3.0 == 2"}
    leaked = next(line for line in cand.gold_patch.splitlines() if line.startswith("+    "))
    stub_server.reply = lambda body: f"```markdown\n# Broken\n\nThe code does `{leaked[1:].strip()}`.\n```"
    evidence = evidence_from_messages(f2p, messages)
    text, cost = llm_statement(cand, evidence, client)
    assert text == offline_statement(cand, evidence)
    assert cost == pytest.approx(0.1)  # the call was paid for even though it was discarded
    prompt = prompt_of(stub_server.requests[-1])
    assert "test_mean" not in prompt and "test_lib.py" not in prompt and "3.0 == 2" in prompt
