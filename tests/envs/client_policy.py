"""Scripted policies driving a repogym server through OpenEnv's own client.

Run with the Python of a virtualenv that holds ``openenv`` and nothing of repogym's (the
tests make one): it imports only OpenEnv and the standard library.

    python client_policy.py BASE_URL PLAN.json   -> one JSON line per episode on stdout

PLAN is a list of episodes, run concurrently (one WebSocket session each):
``{"task_id": ..., "policy": "oracle" | "noop" | "snoop" | "marker", "patch": ...}``.

* oracle: applies the gold patch (``patch``) through ``apply``, or, with
  ``"by_write": true``, by reading each file it changes (``read``), applying its hunks here
  and writing the result back (``write``); then submits.
* noop: submits at once.
* snoop: looks for the fix where a policy might -- the history (``git log --all``, the
  reflog, every object), ``/proc``, the file system, the network -- records all it saw,
  then submits.
* marker: writes a file with its own token, waits for the others to do the same, lists
  the markers it can see, then submits (sessions must not share sandboxes).
* hold: starts a command that never ends, prints ``{"ready": ...}`` and waits forever (for
  a server killed in the middle of an episode).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from openenv.core.generic_client import GenericEnvClient

SNOOP = [
    "git log --all --oneline; git reflog; git stash list; git remote -v; git branch -a",
    "git count-objects -v; git rev-list --all --objects | head -50",
    "ls -la / /opt /opt/repogym /opt/repogym/episode 2>&1",
    "cat /opt/repogym/commit 2>&1; ls -la /opt/repogym-task 2>&1",
    "for p in /proc/[0-9]*; do echo \"$p $(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\"; "
    "cat $p/environ 2>/dev/null | tr '\\0' '\\n'; done 2>&1 | head -200",
    "find / -xdev \\( -name '*.diff' -o -name '*.patch' -o -name 'gold*' \\) 2>/dev/null | head",
    "grep -rIl --exclude-dir=.git -e 'FAIL_TO_PASS' / 2>/dev/null | head",
    "python3 -c \"import urllib.request as u; print(u.urlopen('https://pypi.org', timeout=5).status)\" 2>&1 | tail -1",
    "getent hosts pypi.org || echo no-dns; (echo > /dev/tcp/1.1.1.1/80) 2>&1 | tail -1",
]


def diff_files(patch: str) -> dict[str, list[str]]:
    """The patch split per file (each part a complete diff)."""
    parts: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git "):
            current = parts.setdefault(line.split(" b/", 1)[-1].strip(), [])
        if current is not None:
            current.append(line)
    return parts


def patched(text: str, lines: list[str]) -> str:
    """``text`` with the hunks of one file's diff applied (exact context)."""
    old = text.splitlines(keepends=True)
    out: list[str] = []
    at = 0
    body = [ln for ln in lines if not ln.startswith(("diff --git", "index ", "--- ", "+++ "))]
    for line in body:
        if line.startswith("@@"):
            start = int(line.split()[1].split(",")[0].lstrip("-")) - 1
            out.extend(old[at:max(start, 0)])
            at = max(start, 0)
        elif line.startswith("+"):
            out.append(line[1:])
        elif line.startswith("-"):
            at += 1
        elif line.startswith(" "):
            out.append(old[at])
            at += 1
    out.extend(old[at:])
    return "".join(out)


async def episode(base_url: str, plan: dict[str, Any], barrier: asyncio.Barrier) -> dict:
    started = time.monotonic()
    seen: list[str] = []
    async with GenericEnvClient(base_url=base_url, message_timeout_s=600) as env:
        reset_started = time.monotonic()
        first = await env.reset(task_id=plan["task_id"])
        reset_s = time.monotonic() - reset_started
        obs = first.observation
        seen.append(obs.get("statement", ""))
        seen.extend(obs.get("files", []))
        policy = plan["policy"]
        if policy == "oracle" and plan.get("by_write"):
            for path, lines in sorted(diff_files(plan["patch"]).items()):
                got = await env.step({"tool": "read", "path": path})
                assert got.observation["exit_code"] == 0, got.observation
                new = patched(got.observation["output"], lines)
                step = await env.step({"tool": "write", "path": path, "content": new})
                assert step.observation["exit_code"] == 0, step.observation
        elif policy == "oracle":
            for path, lines in sorted(diff_files(plan["patch"]).items()):
                step = await env.step({"tool": "apply", "patch": "".join(lines)})
                assert step.observation["exit_code"] == 0, step.observation
        elif policy == "snoop":
            for command in SNOOP:
                step = await env.step({"tool": "run", "command": command, "timeout_s": 30})
                seen.append(step.observation.get("output", ""))
        elif policy == "hold":
            await env.step({"tool": "write", "path": "work.txt", "content": "half done"})
            print(json.dumps({"ready": plan["task_id"]}), flush=True)
            await asyncio.sleep(3600)
        elif policy == "marker":
            token = plan["token"]
            await env.step({"tool": "write", "path": f"marker-{token}.txt",
                            "content": token + "\n"})
            await env.step({"tool": "run", "command": f"echo {token} > /tmp/marker-{token}"})
            await barrier.wait()
            step = await env.step({"tool": "run", "command":
                                   "cat marker-*.txt /tmp/marker-* 2>/dev/null"})
            seen.append(step.observation.get("output", ""))
        end = await env.step({"tool": "submit"})
        state = await env.state()
    return {"task_id": plan["task_id"], "policy": policy, "token": plan.get("token"),
            "reward": end.reward, "done": end.done, "reset_seconds": round(reset_s, 3),
            "seconds": round(time.monotonic() - started, 3), "seen": seen,
            "error": end.observation.get("error"), "ended_by": end.observation.get("ended_by"),
            "state": state}


async def main(base_url: str, plans: list[dict[str, Any]]) -> None:
    markers = sum(1 for p in plans if p["policy"] == "marker")
    barrier = asyncio.Barrier(max(1, markers))
    results = await asyncio.gather(*(episode(base_url, p, barrier) for p in plans))
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    with open(sys.argv[2]) as fh:
        asyncio.run(main(sys.argv[1], json.load(fh)))
