"""Fixtures for the LLM generators: a tiny repository and a local OpenAI-compatible stub.

Nothing here reaches the network. ``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set before
litellm is first imported, so litellm reads its bundled price map instead of fetching
one from GitHub; ``NO_PROXY`` keeps requests to 127.0.0.1 off any configured proxy.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from repogym.generators.llm import LLMClient, LLMSettings
from repogym.schemas.records import Checkout, RepoSpec
from repogym.toolchains.python import PythonToolchain
from tests.conftest import git

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
for _var in ("NO_PROXY", "no_proxy"):
    os.environ[_var] = ",".join(filter(None, [os.environ.get(_var), "127.0.0.1", "localhost"]))

LIB = '''\
"""Small helpers."""
import math


def clamp(x, lo, hi):
    """Limit x to the range [lo, hi]."""
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    total = 0
    for v in values:
        total += v
    return total / len(values)


def tiny(x):
    return x + 1


class Stack:
    def __init__(self):
        self.items = []

    def push_all(self, values):
        """Push every value; return the new size."""
        for v in values:
            self.items.append(v)
        size = len(self.items)
        return size
'''

TESTS = '''\
from demo.lib import clamp, mean


def test_clamp_low():
    assert clamp(-5, 0, 10) == 0


def test_mean():
    assert mean([1, 2, 3]) == 2
'''

# Answers the stub (or a mock) gives, one per target function, each with a real change.
ANSWERS: dict[str, str] = {
    "clamp": ("```python\ndef clamp(x, lo, hi):\n    \"\"\"Limit x.\"\"\"\n"
              "    if x <= lo:\n        return lo\n    return min(x, hi)\n```\n"),
    "mean": ("Here you go:\n```python\ndef mean(values):\n"
             "    return sum(values) / max(len(values) - 1, 1)\n```\n"),
    "Stack.push_all": ("```python\ndef push_all(self, values):\n"
                       "    self.items.extend(values[1:])  # BUG: skips the first value\n"
                       "    return len(self.items)\n```\n"),
}


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the tests only, never from the developer's REPOGYM_LLM_*."""
    for name in list(os.environ):
        if name.startswith("REPOGYM_LLM_"):
            monkeypatch.delenv(name)


@pytest.fixture
def demo_checkout(make_git_repo: Callable[..., Path]) -> Checkout:
    """A committed repo with one module of four functions (three are targets) and tests."""
    root = make_git_repo({"demo/__init__.py": "", "demo/lib.py": LIB,
                          "tests/test_lib.py": TESTS})
    return Checkout(spec=RepoSpec(source=str(root)), name="demo", path=root,
                    commit=git(root, "rev-parse", "HEAD"))


@pytest.fixture
def toolchain() -> PythonToolchain:
    return PythonToolchain()


def answer_for(prompt: str) -> str:
    """The canned answer for whichever target function the prompt is about."""
    for qualname, answer in sorted(ANSWERS.items(), key=lambda kv: -len(kv[0])):
        if f"`{qualname}`" in prompt:
            return answer
    return "I cannot help with that."


@dataclass
class StubServer:
    """An OpenAI-compatible ``/v1/chat/completions`` that records every request.

    ``reply`` maps the request's JSON body to the answer text; ``status`` != 200 makes
    it answer with an error instead.
    """

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    reply: Callable[[dict[str, Any]], str] = lambda body: "hello"
    status: int = 200
    usage: tuple[int, int] = (100, 50)

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append(body)
        if self.status != 200:
            return self.status, {"error": {"message": "stub failure", "type": "server_error"}}
        prompt, completion = self.usage
        return 200, {
            "id": f"chatcmpl-stub{len(self.requests)}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", "stub"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": self.reply(body)}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}}


def _handler(stub: StubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                status, payload = 404, {"error": {"message": f"no route {self.path}"}}
            else:
                status, payload = stub.respond(body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return Handler


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    """The stub, serving on a free port of 127.0.0.1 in a thread for one test."""
    stub = StubServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    stub.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def prompt_of(body: dict[str, Any]) -> str:
    """The text of every message in a recorded request."""
    return "\n".join(m.get("content", "") for m in body.get("messages", []))


@pytest.fixture
def stub_client(stub_server: StubServer, tmp_path: Path) -> Callable[..., LLMClient]:
    """Factory: an LLMClient on the stub (``model="openai/stub"``), settings overridable."""

    def make(**overrides: Any) -> LLMClient:
        settings = LLMSettings(**{"model": "openai/stub", "base_url": stub_server.url,
                                  "num_retries": 0, "timeout": 10, **overrides})
        return LLMClient(settings, cache_dir=tmp_path / "llm-cache")

    return make
