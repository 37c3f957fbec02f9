"""The warm, forking pytest runner: same outcomes as fresh runs, and robust to what tests do."""

from __future__ import annotations

import re
import shutil
import sys
from importlib import resources
from pathlib import Path

import pytest

from repogym.sandboxes.channel import new_tag, popen_channel
from repogym.toolchains.warm import WarmPytest
from tests.conftest import (
    PROVIDER_PARAMS,
    TINY_PROJECT,
    build_tiny_env,
    commit_files,
    need_provider,
)

OPS = "tinycalc/ops.py"
EXTRA_TESTS = {
    # kills the warm server (its pid is in a file the test reads once), then passes
    "tests/test_zz_hostile.py": (
        "import os, signal\n\n"
        "def test_kill_server():\n"
        "    path = os.path.join(os.path.dirname(__file__), 'server.pid')\n"
        "    if os.path.exists(path):\n"
        "        pid = int(open(path).read())\n"
        "        os.remove(path)\n"
        "        os.kill(pid, signal.SIGKILL)\n\n"
        "def test_sleeps_forever():\n"
        "    import time\n"
        "    time.sleep(3600)\n"
    ),
    # ids from a set's order (as isodate's ``expectedN``): which id fails depends on the
    # hash seed, so only one seed for every run keeps an id naming the same test
    "tests/test_zz_hashorder.py": (
        "import pytest\n\n"
        "WORDS = list({'alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'})\n\n"
        "@pytest.mark.parametrize('word', [(w,) for w in WORDS])\n"
        "def test_order(word):\n"
        "    assert word[0] != 'alpha'\n"
    ),
}
NORMAL = sorted(f"tests/test_ops.py::{name}" for name in
                re.findall(r"^def (test_\w+)", TINY_PROJECT["tests/test_ops.py"], re.M))
KILL = "tests/test_zz_hostile.py::test_kill_server"
SLEEP = "tests/test_zz_hostile.py::test_sleeps_forever"


@pytest.fixture(scope="module", params=PROVIDER_PARAMS)
def env(request, tmp_path_factory):
    need_provider(request, request.param)
    out = tmp_path_factory.mktemp("warm")
    commit_files(out / "tinycalc", {**TINY_PROJECT, **EXTRA_TESTS})
    tiny = build_tiny_env(request.param, out / "tinycalc", out)
    with tiny.provider.open(tiny.env) as sandbox:
        yield sandbox, tiny.toolchain


@pytest.fixture
def runner(env):
    sandbox, tc = env
    sandbox.reset()
    warm = WarmPytest(tc, sandbox)
    yield warm
    warm.close()


def outcomes(run):
    return {t: r.outcome for t, r in run.results.items()}


def test_warm_and_fresh_runs_agree(env, runner):
    sandbox, tc = env
    tests = NORMAL
    fresh = tc.run_tests(sandbox, timeout=120, select=tests)
    warm = runner.run_tests(sandbox, timeout=120, select=tests)
    assert runner.cold_reason == "" and runner.warm_runs == 1 and runner.fresh_runs == 0
    assert warm.trusted and fresh.trusted
    assert outcomes(warm) == outcomes(fresh) and len(warm.results) == 6

    # a patched module is imported afresh by the next run
    src = sandbox.read_file(OPS).decode()
    sandbox.write_file(OPS, src.replace("return a + b", "return a - b"))
    warm = runner.run_tests(sandbox, timeout=120, select=tests)
    fresh = tc.run_tests(sandbox, timeout=120, select=tests)
    assert outcomes(warm) == outcomes(fresh)
    assert set(warm.results) - warm.passing() == {"tests/test_ops.py::test_add"}


def test_a_selection_runs_only_its_tests(env, runner):
    sandbox, _ = env
    run = runner.run_tests(sandbox, timeout=120, select=["tests/test_ops.py::test_add"])
    assert run.trusted and list(run.results) == ["tests/test_ops.py::test_add"]


def test_the_server_survives_reset(env, runner):
    sandbox, _ = env
    select = ["tests/test_ops.py::test_add"]
    runner.run_tests(sandbox, timeout=120, select=select)
    channel = runner.channel
    sandbox.reset()
    run = runner.run_tests(sandbox, timeout=120, select=select)
    assert run.trusted and runner.channel is channel and runner.warm_runs == 2


def test_a_test_that_kills_the_server_gets_a_fresh_run(env, runner):
    sandbox, _ = env
    select = ["tests/test_ops.py::test_add", KILL]
    runner.run_tests(sandbox, timeout=120, select=["tests/test_ops.py::test_add"])
    sandbox.write_file("tests/server.pid", str(runner.channel.pid))
    run = runner.run_tests(sandbox, timeout=120, select=select)
    assert runner.fresh_runs == 1 and run.trusted
    assert run.outcome(KILL).value == "passed"
    again = runner.run_tests(sandbox, timeout=120, select=select)  # a new server
    assert runner.warm_runs == 2 and again.trusted and runner.channel is not None


def test_a_run_that_overruns_is_killed_and_the_server_stays(env, runner):
    sandbox, _ = env
    run = runner.run_tests(sandbox, timeout=3, select=[SLEEP])
    assert run.timed_out and not run.trusted
    ok = runner.run_tests(sandbox, timeout=120, select=["tests/test_ops.py::test_add"])
    assert ok.trusted and runner.warm_runs == 2 and runner.fresh_runs == 0


def test_a_runner_that_imports_the_project_is_not_warmed(tmp_path):
    """The iniconfig repo is imported by pytest itself: forgetting it cannot work."""
    import iniconfig

    shutil.copytree(Path(iniconfig.__file__).parent, tmp_path / "iniconfig")
    (tmp_path / "test_x.py").write_text("def test_x():\n    assert True\n")
    source = resources.files("repogym.toolchains.plugins").joinpath("repogym_warm.py").read_text()
    tag = new_tag()
    channel = popen_channel([sys.executable, "-u", "-c", source, tag], tag=tag, cwd=str(tmp_path))
    try:
        answer = channel.request({"op": "start"}, timeout=120)
    finally:
        channel.close()
    assert answer["warm"] is False and "iniconfig" in answer["why"]


ECHO_PLUGIN = '''
import json, os

_HERE = os.path.splitext(__file__)[0]
with open(_HERE + ".json") as fh:
    _CONFIG = json.load(fh)
_SEEN = []


def pytest_runtest_logreport(report):
    if report.when == "call":
        _SEEN.append(report.nodeid)


def pytest_sessionfinish(session):
    with open(_CONFIG["out"], "w") as fh:
        json.dump({"word": _CONFIG["word"], "seen": _SEEN}, fh)
'''


def test_extra_plugins_run_beside_the_report_in_both_paths(env, runner):
    import json

    from repogym.toolchains.base import RunPlugin

    sandbox, tc = env
    plugin = RunPlugin(name="echo", source=ECHO_PLUGIN, config={"word": "hi"})
    for run in (tc.run_tests(sandbox, timeout=120, select=NORMAL[:2], plugins=[plugin]),
                runner.run_tests(sandbox, timeout=120, select=NORMAL[:2], plugins=[plugin])):
        assert run.trusted, run.log_tail
        assert json.loads(run.extras["echo"]) == {"word": "hi", "seen": NORMAL[:2]}
    assert runner.warm_runs == (1 if runner.cold_reason == "" else 0)


def test_ids_from_set_order_name_the_same_test_in_every_run(env, runner):
    """Fresh runs (new interpreters) and warm runs (forks of the server) share one hash
    seed, so the id that fails is the same in each of them."""
    sandbox, tc = env
    select = ["tests/test_zz_hashorder.py"]
    runs = [tc.run_tests(sandbox, timeout=120, select=select) for _ in range(3)]
    runs.append(runner.run_tests(sandbox, timeout=120, select=select))
    failing = [sorted(t for t, r in run.results.items() if r.outcome != "passed")
               for run in runs]
    assert all(len(f) == 1 for f in failing) and len({f[0] for f in failing}) == 1, failing
    assert len(runs[0].results) == 8
