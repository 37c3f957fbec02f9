"""``repogym env serve`` driven by OpenEnv's own client (``GenericEnvClient``, over the
WebSocket session route), from a virtualenv that holds OpenEnv and nothing of repogym's,
with scripted policies (tests/envs/client_policy.py) on accepted tasks of two languages: a
Python synthetic and mined task (tinycalc) and a JavaScript synthetic and mined task the
pipeline accepted on jshttp/mime-types.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.envs.conftest import POLICY, run_policies, wait_for

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def added_lines(diff: str) -> list[str]:
    return [line[1:].strip() for line in diff.splitlines()
            if line.startswith("+") and not line.startswith("+++") and len(line.strip()) > 12]


def test_oracle_scores_1_and_noop_0_in_two_languages_in_eight_sessions_at_once(
        served, env_tasks, openenv_python, tmp_path):
    plans = [{"task_id": row.instance_id, "policy": policy, "patch": row.patch,
              "by_write": i % 2 == 1}  # half the oracles read, edit and write the files
             for i, row in enumerate(env_tasks.rows) for policy in ("oracle", "noop")]
    assert len(plans) == 8 and {r.language for r in env_tasks.rows} == {"python", "javascript"}
    results = run_policies(openenv_python, served, plans, tmp_path)
    got = {(r["task_id"], r["policy"]): r["reward"] for r in results}
    assert got == {(p["task_id"], p["policy"]): 1.0 if p["policy"] == "oracle" else 0.0
                   for p in plans}, [(r["task_id"], r["policy"], r["error"]) for r in results]
    assert all(r["done"] and r["ended_by"] == "submit" and r["state"]["done"] for r in results)
    journal = {(e["task_id"], e["reward"]) for e in served.journal_lines()}
    assert journal >= {(p["task_id"], 1.0 if p["policy"] == "oracle" else 0.0) for p in plans}
    pool = httpx.get(f"{served.url}/pool").json()
    assert pool["leased"] == 0 and pool["discarded"] == 0 and pool["size"] <= 8, pool


def test_concurrent_sessions_never_share_a_sandbox(served, env_tasks, openenv_python, tmp_path):
    task = env_tasks.python.synthetic.instance_id
    plans = [{"task_id": task, "policy": "marker", "token": f"token{i:02d}"} for i in range(8)]
    results = run_policies(openenv_python, served, plans, tmp_path)
    for result in results:
        assert result["seen"][-1].split() == [result["token"]] * 2, result["seen"][-1]
        assert result["reward"] == 0.0  # a marker file fixes nothing
    # the same sandboxes, warm, for the next episodes: no container is started again
    opened = httpx.get(f"{served.url}/pool").json()["opened"]
    run_policies(openenv_python, served, plans[:2], tmp_path)
    pool = httpx.get(f"{served.url}/pool").json()
    assert pool["opened"] == opened and pool["reused"] >= 2, pool


def test_a_snooping_policy_learns_nothing_of_the_fix(served, env_tasks, openenv_python,
                                                     tmp_path):
    mined = [env_tasks.python.mined, env_tasks.js.mined]
    plans = [{"task_id": row.instance_id, "policy": "snoop"} for row in mined]
    results = run_policies(openenv_python, served, plans, tmp_path)
    for row, result in zip(mined, results):
        seen = "\n".join(result["seen"])
        assert "the repository" in seen  # the one commit it was given
        secrets = added_lines(row.patch) + added_lines(row.test_patch)
        assert secrets
        leaked = [s for s in secrets if s in seen]
        assert not leaked, (row.instance_id, leaked)
        assert "Permission denied" in seen  # the history and restore data: root's only
        url, dns = result["seen"][-2:]
        assert url.strip() != "200" and "URLError" in url and "no-dns" in dns  # no network
        assert result["reward"] == 0.0


def test_the_actions_are_listed_as_mcp_tools_and_published_in_the_schema(served):
    listed = httpx.post(f"{served.url}/mcp", json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).json()
    names = {tool["name"] for tool in listed["result"]["tools"]}
    assert names == {"run", "read", "write", "apply", "submit"}
    schema = httpx.get(f"{served.url}/schema").json()
    assert set(schema["action"]["$defs"]["Tool"]["enum"]) == names
    meta = httpx.get(f"{served.url}/metadata").json()
    assert meta["name"] == "repogym" and "verified tasks" in meta["description"]
    # a tool call outside a session has no episode: it says so, it does not crash
    called = httpx.post(f"{served.url}/mcp", json={
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "run", "arguments": {"command": "ls"}}}).json()
    assert "reset first" in json.dumps(called)


def test_a_killed_server_keeps_every_reward_it_gave_and_leaves_no_container(
        serve, env_tasks, openenv_python, tmp_path, docker_client):
    served = serve(sessions=2)
    row = env_tasks.python.synthetic
    finished = run_policies(openenv_python, served, [
        {"task_id": row.instance_id, "policy": "oracle", "patch": row.patch}], tmp_path)
    assert finished[0]["reward"] == 1.0
    plan = tmp_path / "hold.json"
    plan.write_text(json.dumps([{"task_id": env_tasks.python.mined.instance_id,
                                 "policy": "hold"}]))
    holder = subprocess.Popen([str(openenv_python), str(POLICY), served.url, str(plan)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert "ready" in holder.stdout.readline()  # an episode in the middle of its work
        assert httpx.get(f"{served.url}/pool").json()["leased"] == 1
        assert served.containers(docker_client)
        served.process.send_signal(signal.SIGKILL)
        served.process.wait(timeout=30)
    finally:
        holder.kill()
        holder.wait()
    records = served.journal_lines()
    assert [(r["task_id"], r["reward"], r["ended_by"]) for r in records] == [
        (row.instance_id, 1.0, "submit")]
    wait_for(lambda: not served.containers(docker_client), 60,
             "the reaper removing the killed server's containers")


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trl_rollout.py"


def test_the_trl_style_example_rolls_out_and_rewards(served, env_tasks, openenv_python,
                                                     tmp_path):
    fixed, untouched = env_tasks.python.synthetic, env_tasks.js.synthetic
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({
        fixed.instance_id: f"The conversion adds the offset.\n```diff\n{fixed.patch}```",
        untouched.instance_id: "I do not know."}))
    done = subprocess.run([str(openenv_python), str(EXAMPLE), served.url, str(answers)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"env_reward": [1.0, 0.0], "rewards": [1.0, 0.0], "completions": 2}
