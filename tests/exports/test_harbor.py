"""Harbor round trip in Docker: build each exported task's environment/Dockerfile, run the
solution and the verifier the way Harbor does (tests/ uploaded to /tests, solution/ to
/solution, solver as ``repogym``, verifier as root), and read /logs/verifier/reward.txt.

Also: the built image shows nothing of the fix (history, reflog, stash, any file), and the
in-container verifier resists a solver that edits and commits tests, plants a conftest,
leaves a daemon behind and pre-writes the reward files.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from repogym.datasets.exports import export_dataset
from repogym.datasets.exports.harbor import task_dirname
from tests.exports.conftest import (
    TEST_LABELS,
    sh,
    stopped_at_a_failure,
    tar_of,
    tree_files,
)

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def harbor(real_tasks, docker_client, tmp_path_factory):
    """The harbor export of the real tasks, and each task's built image (removed after)."""
    out = tmp_path_factory.mktemp("harbor") / "tasks"
    export_dataset("harbor", out, dataset=real_tasks.store.root)
    images: dict[str, str] = {}
    try:
        for row in real_tasks.rows:
            tag = f"repogym-test/harbor-{secrets.token_hex(4)}:latest"
            docker_client.images.build(path=str(out / task_dirname(row) / "environment"),
                                       tag=tag, labels=TEST_LABELS, rm=True, forcerm=True)
            images[row.instance_id] = tag
        yield out, images
    finally:
        for tag in images.values():
            docker_client.images.remove(tag, force=True)


def trial(container_factory, harbor, row, *, solve: bool, agent: str = "",
          verifier_user: str = "root") -> tuple[str, Any]:
    """One Harbor-style trial; the reward text and the (still running) container."""
    out, images = harbor
    task = out / task_dirname(row)
    container = container_factory(images[row.instance_id])
    container.put_archive("/", tar_of({f"tests/{k}": v
                                       for k, v in tree_files(task / "tests").items()}))
    container.put_archive("/", tar_of({f"solution/{k}": v
                                       for k, v in tree_files(task / "solution").items()}))
    if solve:
        code, log = sh(container, "bash /solution/solve.sh", user="repogym")
        assert code == 0, log
    if agent:
        code, log = sh(container, agent, user="repogym")
        assert code == 0, log
    code, log = sh(container, "bash /tests/test.sh", user=verifier_user)
    assert code == 0, log
    reward = sh(container, "cat /logs/verifier/reward.txt")[1].strip()
    return reward, container


@pytest.mark.parametrize("which", ["synthetic", "mined"])
def test_gold_solution_scores_one(which, real_tasks, harbor, container_factory):
    row = getattr(real_tasks, which)
    reward, container = trial(container_factory, harbor, row, solve=True)
    assert reward == "1"
    fix = real_tasks.fix_line(row)  # the leak check's grep does find a fix that is there
    assert sh(container, f"grep -rlF '{fix}' /repo | wc -l")[1].strip() == "1"


@pytest.mark.parametrize("which", ["synthetic", "mined"])
def test_doing_nothing_scores_zero_and_the_image_hides_the_fix(which, real_tasks, harbor,
                                                               container_factory):
    row = getattr(real_tasks, which)
    out, images = harbor
    container = container_factory(images[row.instance_id])
    fix = real_tasks.fix_line(row)
    checks = {
        "git rev-list --all --count": "1",
        "git reflog | wc -l": "1",
        "git stash list | wc -l": "0",
        "git status --porcelain --untracked-files=all | wc -l": "0",
        "git diff HEAD | wc -c": "0",
        f"git log --all -p | grep -cF '{fix}' || true": "0",
        f"git cat-file --batch-all-objects --batch | grep -caF '{fix}' || true": "0",
    }
    for cmd, expected in checks.items():
        code, got = sh(container, f"cd /repo && {cmd}", user="repogym")
        assert got.strip() == expected, (cmd, got)
    # no file anywhere holds the fix, even for root (the virtual file systems aside)
    code, got = sh(container, "grep -rlaF --exclude-dir=proc --exclude-dir=sys "
                              f"--exclude-dir=dev '{fix}' / 2>/dev/null | wc -l")
    assert got.strip() == "0", got
    if row is real_tasks.mined:  # the test patch is applied only when grading
        assert sh(container, "test -e /repo/tests/test_scale.py")[0] != 0
    assert sh(container, "touch /opt/repogym-task/x", user="repogym")[0] != 0  # anchor RO
    reward, container = trial(container_factory, harbor, row, solve=False,
                              verifier_user="repogym")  # as the unprivileged user too
    assert reward == "0"
    result = json.loads(sh(container, "cat /logs/verifier/result.json")[1])
    assert result["problems"] == [] and stopped_at_a_failure(result, row.FAIL_TO_PASS)


HACKS = """set -e
cd /repo
cat > tests/test_units.py <<'EOF'
def test_freezing():
    assert True


def test_boiling():
    assert True
EOF
git -c user.name=a -c user.email=a@b commit -qam "tests"
cat > conftest.py <<'EOF'
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    out = yield
    out.get_result().outcome = "passed"
EOF
echo 'import tinycalc' > tinycalc/zz_hook.pth
echo 1 > /logs/verifier/reward.txt
echo '{"reward": 1.0}' > /logs/verifier/reward.json
nohup bash -c 'while true; do echo "def test_freezing(): pass" > tests/test_units.py
  sleep 0.05; done' >/dev/null 2>&1 &
"""


def test_reward_hacks_score_zero(real_tasks, harbor, container_factory):
    reward, container = trial(container_factory, harbor, real_tasks.synthetic, solve=False,
                              agent=HACKS)
    assert reward == "0"
    assert sh(container, "test -e /logs/verifier/reward.json")[0] != 0
    result = json.loads(sh(container, "cat /logs/verifier/result.json")[1])
    assert set(result["discarded"]) >= {"tests/test_units.py", "conftest.py",
                                        "tinycalc/zz_hook.pth"}
    row = real_tasks.synthetic  # the PASS_TO_PASS tests run first here, all of them
    assert result["problems"] == [] and stopped_at_a_failure(result, row.FAIL_TO_PASS)
    assert {result["outcomes"][t] for t in row.PASS_TO_PASS} == {"passed"}


def test_real_fix_alongside_hacks_still_scores_one(real_tasks, harbor, container_factory):
    """Discarding test changes must not punish a real fix that also touched tests."""
    reward, _ = trial(container_factory, harbor, real_tasks.synthetic, solve=True,
                      agent=HACKS)
    assert reward == "1"
