"""A TRL-style rollout over a repogym environment server (``repogym env serve``), through
OpenEnv's own client. No GPU, no TRL needed to run it; the shape is TRL's.

TRL's ``GRPOTrainer(rollout_func=...)`` calls ``rollout_func(prompts, trainer)`` and
expects ``prompt_ids``, ``completion_ids`` and ``logprobs`` per prompt; any other key
(here ``env_reward``) is handed to the reward functions, so
``reward_funcs=[reward_from_env]`` trains on the environment's reward. Here a prompt is a
task id; the episode's statement is what the model reads, and its completion is a diff
that the environment applies and grades on submit.

With a trainer, ``generate`` is the trainer's model (vLLM in TRL's server mode) and the
ids and log-probabilities come from it; the stand-ins below (bytes as ids, zero
log-probabilities) keep this example runnable anywhere:

    python examples/trl_rollout.py http://127.0.0.1:8000 answers.json

``answers.json`` maps task ids to the answer a scripted "model" gives (text with a diff).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from typing import Any, Callable

from openenv.core.generic_client import GenericEnvClient

Generate = Callable[[str, str], str]  # (task id, prompt text) -> completion text

DIFF = re.compile(r"```(?:diff|patch)?\n(.*?)```", re.S)


def prompt_of(observation: dict[str, Any]) -> str:
    files = "\n".join(observation.get("files", [])[:200])
    return (f"{observation['statement']}\n\nThe repository's files:\n{files}\n\n"
            "Answer with a unified diff that fixes the problem.")


def diff_in(completion: str) -> str:
    found = DIFF.findall(completion)
    return found[-1] if found else completion


async def episode(base_url: str, task_id: str, generate: Generate) -> dict[str, Any]:
    async with GenericEnvClient(base_url=base_url, message_timeout_s=600) as env:
        start = await env.reset(task_id=task_id)
        prompt = prompt_of(start.observation)
        completion = generate(task_id, prompt)
        patch = diff_in(completion)
        if patch.strip():
            await env.step({"tool": "apply", "patch": patch})
        end = await env.step({"tool": "submit"})
    return {"prompt": prompt, "completion": completion, "reward": end.reward}


def make_rollout(base_url: str, generate: Generate) -> Callable[..., dict[str, list]]:
    """``rollout_func(prompts, trainer=None)`` for TRL: one episode per prompt, all at
    once (one WebSocket session each)."""

    def rollout_func(prompts: list[str], trainer: Any = None) -> dict[str, list]:
        async def run_all() -> list[dict[str, Any]]:
            return await asyncio.gather(*(episode(base_url, p, generate) for p in prompts))

        done = asyncio.run(run_all())
        return {
            "prompt_ids": [list(d["prompt"].encode()) for d in done],
            "completion_ids": [list(d["completion"].encode()) for d in done],
            "logprobs": [[0.0] * len(d["completion"].encode()) for d in done],
            "env_reward": [d["reward"] for d in done],
        }

    return rollout_func


def reward_from_env(completions: list[Any], **kwargs: Any) -> list[float]:
    """TRL reward function: the environment's reward, as the rollout returned it."""
    return [float(r) if r is not None else 0.0 for r in kwargs["env_reward"]]


if __name__ == "__main__":
    url, answers_file = sys.argv[1], sys.argv[2]
    with open(answers_file) as fh:
        answers: dict[str, str] = json.load(fh)
    rollout = make_rollout(url, lambda task_id, prompt: answers.get(task_id, ""))
    out = rollout(list(answers))
    print(json.dumps({"env_reward": out["env_reward"],
                      "rewards": reward_from_env([], env_reward=out["env_reward"]),
                      "completions": len(out["completion_ids"])}))
