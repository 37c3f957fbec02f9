"""The report plugin's side-effect account, in a real pytest process (no sandbox needed).

Tests that only compute (files in the work tree or a temporary folder, subprocesses they
wait for or kill, sockets on loopback) must have none; tests that try the network, write
outside the tree or leave processes running must each be named with what they did.
"""

import json
import os
import signal
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from repogym.baseline import fold_runs
from repogym.schemas.records import Outcome
from repogym.toolchains.python import parse_report

TAG = f"rg-side-effects-{os.getpid()}"

SUITE = '''
import os, socket, subprocess, sys, threading, time
TAG = %(tag)r
SLEEPER = [sys.executable, "-c", "import time; time.sleep(30)", TAG]

def test_files_in_tree_and_tmp(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    with open("in_tree.txt", "w") as f:
        f.write("x")
    os.mkdir("made_here")
    os.rename("in_tree.txt", "made_here/moved.txt")
    open("/dev/null", "w").write("x")
    import json, decimal  # imports read (and may write caches)

def test_subprocesses_waited_or_killed():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    p = subprocess.Popen(SLEEPER)
    p.kill()  # no wait: a zombie until pytest reaps it
    q = subprocess.Popen(SLEEPER)
    q.terminate()

def test_loopback_socket():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    threading.Thread(target=lambda: srv.accept()[0].close(), daemon=True).start()
    with socket.create_connection(srv.getsockname(), timeout=2):
        pass
    socket.getaddrinfo("localhost", 80)
    srv.close()

def test_network_attempt():
    try:
        socket.create_connection(("192.0.2.1", 9), timeout=0.2)
    except OSError:
        pass

def test_name_lookup():
    try:
        socket.getaddrinfo("repogym-nowhere.invalid", 80)
    except OSError:
        pass

def test_udp_send():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.sendto(b"x", ("192.0.2.1", 9))
    except OSError:
        pass
    s.close()

def test_write_outside():
    try:
        open("/nonexistent-repogym-dir/x", "w")
    except OSError:
        pass

def test_delete_outside():
    try:
        os.remove("/nonexistent-repogym-dir/y")
    except OSError:
        pass

def test_daemon():
    code = "import os, time\\nif os.fork(): os._exit(0)\\nos.setsid()\\ntime.sleep(30)"
    subprocess.run([sys.executable, "-c", code, TAG], check=True)

def test_forked_child():
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)

def test_clean_after_odd_one():
    assert True
'''

CLEAN = {"test_files_in_tree_and_tmp", "test_subprocesses_waited_or_killed",
         "test_loopback_socket", "test_clean_after_odd_one"}
ODD = {
    "test_network_attempt": "network: connect to 192.0.2.1:9",
    "test_name_lookup": "network: name lookup of 'repogym-nowhere.invalid'",
    "test_udp_send": "network: sendto to 192.0.2.1:9",
    "test_write_outside": "writes outside the work tree: /nonexistent-repogym-dir/x",
    "test_delete_outside": "remove outside the work tree: /nonexistent-repogym-dir/y",
    "test_daemon": "left 1 process(es) running",
    "test_forked_child": "left 1 process(es) running",
}


def _kill_tagged(config: Path) -> None:
    """The suite's leftovers: its tagged commands and its forks (pytest's environment)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if (TAG.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
                    or str(config).encode() in Path(f"/proc/{pid}/environ").read_bytes()):
                os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("side")
    (root / "test_suite.py").write_text(SUITE % {"tag": TAG})
    report, config = root / "r.jsonl", root / "cfg.json"
    config.write_text(json.dumps({"report": str(report), "nonce": "N", "select": None}))
    env = {**os.environ, "REPOGYM_PLUGIN_CONFIG": str(config),
           "PYTHONPATH": str(resources.files("repogym.toolchains.plugins"))}
    try:  # output to a file: a pipe would stay open as long as the leftovers run
        with (root / "log").open("w") as log:
            proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "repogym_report",
                                   "-q", "-p", "no:cacheprovider"], cwd=root, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, timeout=120)
    finally:
        _kill_tagged(config)
    return parse_report(report.read_text(), nonce="N", exit_code=proc.returncode, duration=1)


def by_name(run) -> dict:
    return {n.split("::")[-1]: r for n, r in run.results.items()}


def test_every_test_passes_and_the_report_is_trusted(run):
    assert run.trusted, run.problems
    assert {n for n, r in by_name(run).items() if r.outcome is not Outcome.passed} == set()


def test_computing_tests_have_no_side_effects(run):
    found = {n: r.side_effects for n, r in by_name(run).items() if n in CLEAN}
    assert found == {n: () for n in CLEAN}


@pytest.mark.parametrize("name", sorted(ODD))
def test_misbehaving_test_is_named_with_what_it_did(run, name):
    effects = by_name(run)[name].side_effects
    assert effects and effects[0].startswith(ODD[name]), effects



def test_baseline_keeps_misbehaving_tests_out_of_every_list(run):
    base = fold_runs([run, run], repo="r", commit="c", image="i", seconds=0)
    names = {n.split("::")[-1] for n in base.misbehaving}
    assert names == set(ODD)
    assert not {n.split("::")[-1] for n in base.passing} & set(ODD)
    assert {n.split("::")[-1] for n in base.stable_passing()} == CLEAN


OVERRUN = '''
import os, subprocess, sys, time
TAG = %(tag)r
DAEMON = "import os, time\\nif os.fork(): os._exit(0)\\nos.setsid()\\ntime.sleep(60)"

def alive(tag):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if tag.encode() not in f.read().split(b"\\0"):
                    continue
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[-1].split()[0] != b"Z":
                    found.append(pid)
        except OSError:
            pass
    return found

def test_soft_overrun():
    subprocess.run([sys.executable, "-c", DAEMON, TAG + "-soft"], check=True)
    time.sleep(30)

def test_after_soft_overrun():
    assert alive(TAG + "-soft") == []

def test_leaves_a_swarm():  # passes, but leaves a runaway's worth (a fork bomb's) running
    for _ in range(20):
        subprocess.run([sys.executable, "-c", DAEMON, TAG + "-swarm"], check=True)

def test_after_swarm():
    assert alive(TAG + "-swarm") == []

def test_leaves_a_server():  # as a fixture's server would be: left alone
    subprocess.run([sys.executable, "-c", DAEMON, TAG + "-server"], check=True)

def test_after_server():
    assert len(alive(TAG + "-server")) == 1

def test_hard_overrun():
    subprocess.run([sys.executable, "-c", DAEMON, TAG + "-hard"], check=True)
    while True:  # swallows the interruption: the run is killed
        try:
            time.sleep(30)
        except BaseException:
            pass
'''


def test_processes_a_test_left_when_it_ran_past_its_limit_are_killed(tmp_path):
    """A test that runs past its limit leaves what it started (here a daemon in a session
    of its own; in the hostile suite a fork bomb that starved the tests after it): those
    processes are killed when it is interrupted, and when its run has to be killed. So are
    the processes of a passing test that leaves a runaway's worth of them (a fork bomb that
    sleeps less than its limit); one server left running is left alone."""
    (tmp_path / "test_overrun.py").write_text(OVERRUN % {"tag": TAG})
    report, config = tmp_path / "r.jsonl", tmp_path / "cfg.json"
    limits = {"tests": {}, "default": 1.0, "grace": 0.5, "run": 60}
    config.write_text(json.dumps({"report": str(report), "nonce": "N", "select": None,
                                  "limits": limits}))
    env = {**os.environ, "REPOGYM_PLUGIN_CONFIG": str(config),
           "PYTHONPATH": str(resources.files("repogym.toolchains.plugins"))}
    try:
        with (tmp_path / "log").open("w") as log:
            proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "repogym_report",
                                   "-q", "-p", "no:cacheprovider"], cwd=tmp_path, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, timeout=60,
                                  start_new_session=True)  # the hard kill is of its group
        left = [tag for tag in (f"{TAG}-soft", f"{TAG}-hard") if _alive(tag)]
    finally:
        _kill_tagged(config)
    run = parse_report(report.read_text(), nonce="N", exit_code=proc.returncode, duration=1)
    results = by_name(run)
    assert results["test_soft_overrun"].timed_out, results
    for after in ("test_after_soft_overrun", "test_after_swarm", "test_after_server"):
        assert results[after].outcome is Outcome.passed, (after, results[after].message)
    assert run.died_in and run.died_in.endswith("test_hard_overrun"), run
    assert left == []


def _alive(tag: str) -> bool:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if tag.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") and \
                    Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[-1].split()[0] != b"Z":
                return True
        except OSError:
            pass
    return False
