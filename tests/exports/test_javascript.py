"""JavaScript tasks through every export, in Docker, on real tasks the pipeline accepted in
jshttp/mime-types (mocha): the same guarantees as the Python exports.

* harbor: each task's environment/Dockerfile built, the solution and the verifier run the
  way Harbor runs them (test_harbor.py's ``trial``): the oracle scores 1, doing nothing 0;
  the image shows nothing of the fix (history, objects, any file) and keeps the environment's
  read-only ``node_modules`` link; reward hacks score 0 (tests edited and committed, a mocha
  configuration and ``package.json`` fields that run nothing, ``node_modules`` replaced by a
  fake runner, a daemon rewriting the tests, a pre-written reward), with the gold patch
  beside them 1; ``assert`` neutralised when the source file loads scores 0 although every
  listed test then passes (the canary; the gold patch cannot rescue a run whose assertions
  are void, so there is no "gold alongside" case for it).
* swebench: each instance's ``eval_script`` in a fresh container of its ``image_name``:
  gold 1 (``[PASSED] <id>`` lines), empty 0, a patch that rewrites the tests and adds a
  runner configuration 0.
* verl: ``compute_score`` grades gold 1, no answer 0, a test-editing answer 0.
* hf: the rows round-trip with their ``language``.
"""

from __future__ import annotations

import json
import secrets
import shlex
from typing import Any

import pytest

from repogym.datasets.exports import export_rows
from repogym.datasets.exports.harbor import task_dirname
from repogym.patches import new_file_diff, unified_diff
from repogym.schemas.arrow import TaskRow
from tests.exports.conftest import TEST_LABELS, sh, tar_of
from tests.exports.test_harbor import trial

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def js_harbor(js_tasks, docker_client, tmp_path_factory):
    """The harbor export of the JavaScript tasks and each task's built image."""
    out = tmp_path_factory.mktemp("js-harbor") / "tasks"
    export_rows("harbor", js_tasks.rows, out)
    images: dict[str, str] = {}
    try:
        for row in js_tasks.rows:
            tag = f"repogym-test/harbor-js-{secrets.token_hex(4)}:latest"
            docker_client.images.build(path=str(out / task_dirname(row) / "environment"),
                                       tag=tag, labels=TEST_LABELS, rm=True, forcerm=True)
            images[row.instance_id] = tag
        yield out, images
    finally:
        for tag in images.values():
            docker_client.images.remove(tag, force=True)


def result_of(container: Any) -> dict:
    return json.loads(sh(container, "cat /logs/verifier/result.json")[1])


# the files that hold some bytes (hex in argv[1]), the virtual file systems and the
# installed dependencies aside (those are the environment's, the same for every task of it)
SCAN = """import json, os, sys
needle, hits = bytes.fromhex(sys.argv[1]), []
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in
               ("/proc", "/sys", "/dev", "/opt/deps")]
    for name in files:
        path = os.path.join(root, name)
        try:
            if os.path.isfile(path) and not os.path.islink(path) \\
                    and os.path.getsize(path) < 1 << 26:
                with open(path, "rb") as fh:
                    if needle in fh.read():
                        hits.append(path)
        except OSError:
            pass
print(json.dumps(sorted(hits)))
"""


def files_holding(container: Any, text: str) -> list[str]:
    code, out = sh(container, f"python3 -I -S -c {shlex.quote(SCAN)} {text.encode().hex()}")
    assert code == 0, out
    return json.loads(out.strip().splitlines()[-1])


def git_objects_hold(container: Any, git_dir: str, text: str) -> bool:
    """Whether any object of a repository (every commit, tree and blob) holds ``text``."""
    find = ("import sys; data = sys.stdin.buffer.read(); "
            f"print(len(data), bytes.fromhex({text.encode().hex()!r}) in data)")
    code, out = sh(container, f"set -o pipefail; git --git-dir={git_dir} cat-file "
                              f"--batch-all-objects --batch | python3 -I -S -c {shlex.quote(find)}")
    size, found = out.strip().splitlines()[-1].split()
    assert code == 0 and int(size) > 0, out  # the objects were read
    return found == "True"


def test_the_task_files_name_the_language_and_carry_a_plan(js_tasks, js_harbor):
    out, _ = js_harbor
    task = out / task_dirname(js_tasks.synthetic)
    spec = json.loads((task / "tests/spec.json").read_text())
    assert spec["language"] == "javascript" and spec["javascript"]["runner"] == "mocha"
    assert "stdlib_modules" not in spec and "runner_config" not in spec
    assert set(spec["javascript"]["canaries"]) == {"test/test.js"}
    assert sorted(p.name for p in (task / "tests").iterdir()) == ["grader.py", "spec.json",
                                                                  "test.sh"]
    assert "--plugin" not in (task / "tests/test.sh").read_text()
    assert "mocha" in (task / "instruction.md").read_text()
    assert '"javascript"' in (task / "task.toml").read_text()


@pytest.mark.parametrize("which", ["synthetic", "mined"])
def test_gold_solution_scores_one(which, js_tasks, js_harbor, container_factory):
    row = getattr(js_tasks, which)
    reward, container = trial(container_factory, js_harbor, row, solve=True)
    assert reward == "1", result_of(container)["problems"]
    fixed = sorted({f"/repo/{line[6:]}" for line in row.patch.splitlines()
                    if line.startswith("+++ b/")})[:1]
    assert files_holding(container, js_tasks.fix_text(row)) == fixed  # the leak check works


@pytest.mark.parametrize("which", ["synthetic", "mined"])
def test_doing_nothing_scores_zero_and_the_image_hides_the_fix(which, js_tasks, js_harbor,
                                                               container_factory):
    row = getattr(js_tasks, which)
    _, images = js_harbor
    container = container_factory(images[row.instance_id])
    checks = {
        "git rev-list --all --count": "1",
        "git reflog | wc -l": "1",
        "git stash list | wc -l": "0",
        "git status --porcelain --untracked-files=all | wc -l": "0",
        "git diff HEAD | wc -c": "0",
        "readlink node_modules": "/opt/deps/node_modules",
        "stat -c %U /opt/deps/node_modules node_modules/mocha/package.json": "root\nroot",
        "touch node_modules/x 2>/dev/null; echo $?": "1",
    }
    for cmd, expected in checks.items():
        code, got = sh(container, f"cd /repo && {cmd}", user="repogym")
        assert got.strip() == expected, (cmd, got)
    fix = js_tasks.fix_text(row)  # no file, no git object anywhere holds the fix
    assert files_holding(container, fix) == []
    assert not git_objects_hold(container, "/repo/.git", fix)
    assert not git_objects_hold(container, "/opt/repogym-task/task.git", fix)
    if row is js_tasks.mined:  # the test patch is applied only when grading
        new_test = next(line[1:].strip() for line in row.test_patch.splitlines()
                        if line.startswith("+") and "it(" in line)
        assert sh(container, f"grep -rlF -- {shlex.quote(new_test)} /repo | wc -l"
                  )[1].strip() == "0"
    assert sh(container, "touch /opt/repogym-task/x", user="repogym")[0] != 0  # anchor RO
    reward, container = trial(container_factory, js_harbor, row, solve=False,
                              verifier_user="repogym")  # as the unprivileged user too
    assert reward == "0"
    result = result_of(container)
    assert result["problems"] == [] and result["trusted"], result["problems"]
    assert {result["outcomes"][t] for t in row.FAIL_TO_PASS} == {"failed"}
    assert {result["outcomes"][t] for t in row.PASS_TO_PASS} == {"passed"}


# test/test.js's assertions made no-ops (committed); a mocha configuration and package.json
# fields that run no test file and load a setup that voids `assert`; node_modules (the
# environment's read-only link) replaced by a fake mocha that reports nothing and exits 0; a
# daemon that keeps rewriting the tests; the reward files written in advance
HACKS = r"""set -e
cd /repo
sed -i 's/assert\.\(strictEqual\|deepStrictEqual\|ok\|equal\)(/(() => {})(/g' test/test.js
git -c user.name=a -c user.email=a@b commit -qam "tests"
cat > hack.js <<'EOF'
const a = require('assert');
for (const k of Object.keys(a)) if (typeof a[k] === 'function') a[k] = () => {};
EOF
echo '{"spec": ["nothing/*.js"], "require": ["./hack.js"]}' > .mocharc.json
node -e 'const fs = require("fs"); const p = JSON.parse(fs.readFileSync("package.json"));
  p.mocha = {spec: ["nothing/*.js"], require: ["./hack.js"]}; p.scripts.test = "true";
  fs.writeFileSync("package.json", JSON.stringify(p, null, 2))'
rm node_modules
mkdir -p node_modules/.bin
printf '#!/bin/sh\nexit 0\n' > node_modules/.bin/mocha
chmod +x node_modules/.bin/mocha
echo 1 > /logs/verifier/reward.txt
echo '{"reward": 1.0}' > /logs/verifier/reward.json
nohup bash -c 'while true; do echo "it(\"x\", () => {})" > test/test.js
  sleep 0.05; done' >/dev/null 2>&1 &
"""


def test_reward_hacks_score_zero(js_tasks, js_harbor, container_factory):
    row = js_tasks.synthetic
    reward, container = trial(container_factory, js_harbor, row, solve=False, agent=HACKS)
    assert reward == "0"
    assert sh(container, "test -e /logs/verifier/reward.json")[0] != 0
    result = result_of(container)
    assert set(result["discarded"]) >= {"test/test.js", ".mocharc.json", "package.json"}
    assert result["problems"] == [] and result["trusted"]  # a real run: the fix is missing
    assert {result["outcomes"][t] for t in row.FAIL_TO_PASS} == {"failed"}
    assert sh(container, "readlink /repo/node_modules")[1].strip() == "/opt/deps/node_modules"


def test_real_fix_alongside_hacks_still_scores_one(js_tasks, js_harbor, container_factory):
    """Discarding test and configuration changes (and restoring node_modules) must not
    punish a real fix that came with them."""
    reward, container = trial(container_factory, js_harbor, js_tasks.synthetic, solve=True,
                              agent=HACKS)
    assert reward == "1", result_of(container)["problems"]


# js_assert_noop: node's assert functions replaced by no-ops when the source file loads
ASSERT_NOOP = """
if (typeof require === 'function') { try {
  const __rgA = require('assert');
  for (const o of [__rgA, __rgA.strict]) for (const k of Object.keys(o || {}))
    if (typeof o[k] === 'function') { try { o[k] = () => {}; } catch (e) {} }
} catch (e) {} }
"""


def test_assert_neutralised_at_import_scores_zero(js_tasks, js_harbor, container_factory):
    row = js_tasks.synthetic
    source = sorted({line[6:] for line in row.patch.splitlines()
                     if line.startswith("+++ b/")})[0]
    agent = f"cat >> /repo/{source} <<'EOF'\n{ASSERT_NOOP}EOF\n"
    reward, container = trial(container_factory, js_harbor, row, solve=False, agent=agent)
    assert reward == "0"
    result = result_of(container)
    assert result["discarded"] == [] and not result["trusted"]
    assert any("neutralised the assertions" in p for p in result["problems"]), result
    # the hack works: without the canary every listed test would have passed
    assert set(result["outcomes"].values()) == {"passed"}


# -- swebench: eval_script in a fresh container of the environment image ---------------------

@pytest.fixture(scope="module")
def js_instances(js_tasks, tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("js-swebench") / "export"
    export_rows("swebench", js_tasks.rows, out)
    lines = (out / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    return {i["instance_id"]: i for i in map(json.loads, lines)}


def eval_in(container: Any, inst: dict, patch: str) -> tuple[dict, str]:
    """(result, stdout) of one eval_script run (the first builds the broken state)."""
    container.put_archive("/", tar_of({"eval.sh": inst["eval_script"].encode(),
                                       "tmp/patch.diff": patch.encode()}))
    code, log = sh(container, "bash /eval.sh")
    assert code == 0, log[-3000:]
    reward = sh(container, "cat /tmp/repogym-eval/reward.txt")[1].strip()
    result = json.loads(log.split("REPOGYM_RESULT=")[1].splitlines()[0])
    assert reward == ("1" if result["reward"] == 1 else "0")
    return result, log


def test_swebench_instances_grade_with_the_container_grader(js_tasks, js_instances,
                                                            container_factory):
    for row in js_tasks.rows:
        inst = js_instances[row.instance_id]
        assert inst["language"] == "javascript" and inst["log_parser"] == "parse_log_jest_json"
        container = container_factory(inst["image_name"])
        result, log = eval_in(container, inst, inst["patch"])
        assert result["reward"] == 1 and "REPOGYM_REWARD=1" in log
        for test in json.loads(inst["FAIL_TO_PASS"]) + json.loads(inst["PASS_TO_PASS"]):
            assert f"[PASSED] {test}\n" in log  # what parse_log_jest_json reads
        result, log = eval_in(container, inst, "")
        assert result["reward"] == 0 and "REPOGYM_REWARD=0" in log
        for test in json.loads(inst["FAIL_TO_PASS"]):
            assert f"[FAILED] {test}\n" in log


def test_swebench_patch_rewriting_the_tests_scores_zero(js_tasks, js_instances,
                                                        container_factory):
    """The mined task's failing test comes from its test patch: a diff that empties it
    and adds a mocha configuration that runs nothing is discarded."""
    row = js_tasks.mined
    inst = js_instances[row.instance_id]
    container = container_factory(inst["image_name"])
    code, text = sh(container, f"cd /repo && git show {row.base_commit}:test/test.js")
    assert code == 0
    hack = (unified_diff("test/test.js", text, "it('nothing', () => {})\n")
            + new_file_diff(".mocharc.json", '{"spec": ["nothing/*.js"]}\n'))
    result, _ = eval_in(container, inst, hack)
    assert result["reward"] == 0 and result["trusted"], result
    assert {"test/test.js", ".mocharc.json"} <= set(result["discarded"])


# -- verl and hf ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def js_verl_rows(js_tasks, tmp_path_factory):
    import pandas as pd

    out = tmp_path_factory.mktemp("js-verl") / "export"
    export_rows("verl", js_tasks.rows, out)
    frame = pd.read_parquet(out / "train.parquet")
    return {info["instance_id"]: rec for info, rec in
            zip(frame["extra_info"], frame.to_dict("records"), strict=True)}


def test_verl_grades_a_javascript_task(js_tasks, js_verl_rows):
    from repogym.datasets.exports.verl_reward import compute_score

    row = js_tasks.synthetic
    rec = js_verl_rows[row.instance_id]
    assert rec["extra_info"]["language"] == "javascript"
    assert "JavaScript" in rec["prompt"][0]["content"]
    assert json.loads(rec["reward_model"]["ground_truth"])["language"] == "javascript"

    def score(answer: str) -> float:
        return compute_score(rec["data_source"], answer, rec["reward_model"]["ground_truth"],
                             extra_info=rec["extra_info"])

    assert score(f"The fix:\n\n```diff\n{row.patch}```\n") == 1.0
    assert score("") == 0.0 and score("I could not find it.") == 0.0
    hack = (new_file_diff(".mocharc.json", '{"spec": ["test/rg-pass.test.js"]}\n')
            + new_file_diff("test/rg-pass.test.js", "it('passes', () => {})\n"))
    assert score(f"```diff\n{hack}```") == 0.0


def test_hf_rows_keep_their_language(js_tasks, tmp_path):
    import datasets

    export_rows("hf", js_tasks.rows, tmp_path / "hf")
    data = datasets.load_from_disk(str(tmp_path / "hf"))
    assert set(data["language"]) == {"javascript"}
    back = {r["instance_id"]: TaskRow.from_arrow_row(r) for r in data}
    assert back == {r.instance_id: r for r in js_tasks.rows}
