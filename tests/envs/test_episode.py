"""Episodes in-process (no server): what the agent sees and can do, the patch its work
amounts to whatever it does to its own repository, the limits that end an episode, and
the sandbox handed back clean. Real Docker sandboxes on tinycalc's environment image."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from pydantic import ValidationError

from repogym.config import Settings
from repogym.envs.environment import EnvLimits, EnvService, RepoEnvironment
from repogym.envs.journal import Journal
from repogym.envs.models import EndedBy, RepoAction, truncate
from repogym.errors import InputError
from repogym.sandboxes import get_provider
from repogym.sandboxes.pool import SandboxPool

pytestmark = pytest.mark.docker


@pytest.fixture
def service(real_tasks, tmp_path: Path) -> Iterator[EnvService]:
    provider = get_provider("docker", Settings(), namespace=f"rg-test-ep-{tmp_path.name}")
    pool = SandboxPool(provider, max_size=2)
    yield EnvService(real_tasks.rows, pool, Journal(tmp_path / "episodes.jsonl"),
                     limits=EnvLimits(max_steps=6, output_chars=400))
    pool.close()
    provider.cleanup()  # what a failed test left leased


def run(env: RepoEnvironment, command: str) -> str:
    obs = env.step(RepoAction(tool="run", command=command))
    return obs.output


def test_the_agent_sees_the_broken_state_as_one_commit_and_nothing_of_the_fix(
        service, real_tasks):
    env = RepoEnvironment(service)
    row = real_tasks.mined
    obs = env.reset(task_id=row.instance_id)
    assert obs.statement == row.problem_statement and "tinycalc/scale.py" in obs.files
    assert "tests/test_scale.py" not in obs.files  # the test patch is the grader's
    assert run(env, "git log --all --format=%s; git reflog | wc -l").splitlines() == [
        "the repository", "1"]
    assert run(env, "git remote; git stash list; git branch -a").strip() == "* main"
    assert "Permission denied" in run(env, "ls /opt/repogym 2>&1")
    assert "v * factor" not in run(env, "grep -r 'factor' / --exclude-dir=proc "
                                        "--exclude-dir=sys 2>/dev/null | grep scale_all")
    assert run(env, "id -un").strip() == "repogym"
    env.close()


def test_the_patch_is_the_work_whatever_the_agent_does_to_its_git(service, real_tasks):
    env = RepoEnvironment(service)
    row = real_tasks.synthetic
    env.reset(task_id=row.instance_id)
    assert env.step(RepoAction(tool="apply", patch=row.patch)).exit_code == 0
    # the agent hides its work from its own repository: commits it, then drops the history
    run(env, "git add -A && git -c user.email=a@b -c user.name=a commit -qm fix && "
             "rm -rf .git && git init -q && echo junk > notes.txt")
    end = env.step(RepoAction(tool="submit"))
    assert end.done and end.reward == 1.0 and end.ended_by is EndedBy.submit
    record = service.journal.read()[-1]
    assert record.reward == 1.0 and "notes.txt" in record.patch
    assert "+    return celsius * 9 / 5 + 32" in record.patch and ".git/" not in record.patch


def test_a_step_after_the_end_or_before_a_reset_says_so(service, real_tasks):
    env = RepoEnvironment(service)
    assert "reset first" in (env.step(RepoAction(tool="submit")).error or "")
    env.reset(task_id=real_tasks.synthetic.instance_id)
    assert env.step(RepoAction(tool="submit")).reward == 0.0
    assert "has ended" in (env.step(RepoAction(tool="run", command="ls")).error or "")
    env.close()


def test_the_step_limit_ends_the_episode_with_the_grade_of_the_work(service, real_tasks):
    env = RepoEnvironment(service)
    row = real_tasks.synthetic
    env.reset(task_id=row.instance_id)
    env.step(RepoAction(tool="apply", patch=row.patch))
    for _ in range(4):
        assert not env.step(RepoAction(tool="run", command="true")).done
    last = env.step(RepoAction(tool="read", path="tinycalc/units.py"))
    assert last.done and last.ended_by is EndedBy.step_limit and last.reward == 1.0
    assert "celsius * 9 / 5 + 32" in last.output  # the last action's output is kept


def test_output_is_cut_with_a_marker_and_reads_go_through_the_agent(service, real_tasks):
    env = RepoEnvironment(service)
    env.reset(task_id=real_tasks.synthetic.instance_id)
    long = env.step(RepoAction(tool="run", command="seq 1 2000"))
    assert long.truncated and "characters truncated" in long.output and len(long.output) < 500
    assert long.output.startswith("1\n2\n") and long.output.rstrip().endswith("2000")
    denied = env.step(RepoAction(tool="read", path="/opt/repogym/commit"))
    assert denied.exit_code != 0 and "Permission denied" in denied.output
    wrote = env.step(RepoAction(tool="write", path="/opt/venv/evil.py", content="x"))
    assert wrote.exit_code != 0  # writes are the agent's too: not outside its reach
    env.close()


def test_the_next_agent_gets_a_clean_sandbox(service, real_tasks):
    env = RepoEnvironment(service)
    env.reset(task_id=real_tasks.synthetic.instance_id)
    run(env, "echo x > /tmp/left; echo y > ~/left; echo z > left.txt; "
             "(sleep 600 &) ; nohup sleep 601 >/dev/null 2>&1 &")
    env.close()  # abandoned: journalled ungraded, the sandbox handed back
    assert service.journal.read()[-1].reward is None
    assert service.journal.read()[-1].ended_by is None
    env = RepoEnvironment(service)
    env.reset(task_id=real_tasks.synthetic.instance_id)
    listing = run(env, "ls -a /tmp ~ . 2>&1")
    assert "tinycalc" in listing and "left" not in listing
    assert run(env, "pgrep sleep || echo none").strip() == "none"
    assert service.pool.stats().opened == 1  # the same sandbox, reset in place
    env.close()
    service.pool.close()
    assert service.pool.provider.cleanup() == 0  # the pool closed everything it opened


def test_bad_requests_are_refused_clearly(service):
    env = RepoEnvironment(service)
    with pytest.raises(InputError, match="no task 'nope'"):
        env.reset(task_id="nope")
    with pytest.raises(InputError, match="splits: all, python, tinycalc"):
        env.reset(split="rust")
    with pytest.raises(ValidationError, match="a write action needs path, content"):
        RepoAction(tool="write")
    assert truncate("abc", 10) == ("abc", False)


def test_a_command_past_its_limit_is_stopped_and_the_episode_goes_on(service, real_tasks):
    env = RepoEnvironment(service)
    env.reset(task_id=real_tasks.synthetic.instance_id)
    slow = env.step(RepoAction(tool="run", command="echo started; sleep 30", timeout_s=1))
    assert "started" in slow.output and "stopped at its time limit" in slow.output
    assert not slow.done and run(env, "echo still here").strip() == "still here"
    env.close()


def test_the_time_limit_ends_the_episode_with_the_grade_of_the_work(real_tasks, tmp_path):
    provider = get_provider("docker", Settings(), namespace=f"rg-test-ep-t-{tmp_path.name}")
    pool = SandboxPool(provider, max_size=1)
    service = EnvService(real_tasks.rows, pool, Journal(tmp_path / "e.jsonl"),
                         limits=EnvLimits(episode_seconds=2))
    env = RepoEnvironment(service)
    row = real_tasks.synthetic
    env.reset(task_id=row.instance_id)
    env.step(RepoAction(tool="apply", patch=row.patch))
    late = env.step(RepoAction(tool="run", command="sleep 5"))  # capped by the time left
    end = late if late.done else env.step(RepoAction(tool="run", command="ls"))
    assert end.done and end.ended_by is EndedBy.time_limit and end.reward == 1.0
    pool.close()
    provider.cleanup()
