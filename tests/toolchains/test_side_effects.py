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
