"""The program of one Rust test run, executed in the sandbox.

Standard library only, and no ``from __future__`` import: the toolchain sends this file's
text after :mod:`~repogym.toolchains.rust.scan`'s and a last line ``main(<plan>)``, as one
script the sandbox's Python reads into memory and deletes before anything else runs
(:func:`command`), so neither the command line, the environment nor the work tree shows
the nonce its markers carry.

A run, in order:

1. **Survey**: ``cargo metadata --no-deps --offline`` names the workspace's packages and
   their targets; each target's module tree is read from its root file
   (:func:`~repogym.toolchains.rust.scan.module_map`), which maps libtest's test names to
   files. Targets built with ``harness = false`` are read from the manifests.
2. **Plan**: every test target (all, or those whose module tree holds the file of a
   selected test or of ``collect``), with per binary the exact test names to run, those
   to skip, and a time limit.
3. **Build** once, before any test runs (:meth:`Run.build`: ``cargo build --profile
   test --keep-going``, which goes on past a target that does not compile, and ``cargo
   test --no-run`` for a library's or binary's own tests), offline, into the run's
   target directory: a copy of the warm one
   the install left (read-only, in the venv), reused until a reset -- fresh, and removed
   after, when the run plants a canary. The canary is a test that must fail, appended to
   each root file of a binary for the build and taken out again before any binary runs
   (mtime restored, so later runs still find the copy warm).
4. **Run** each binary as cargo would (in its package's folder, with cargo's ``CARGO_*``
   variables), one test at a time (``--test-threads=1``: a limit then names the test
   that ran past it), with libtest's JSON events (``-Z unstable-options --format json
   --report-time``; libtest allows that when ``RUSTC_BOOTSTRAP`` is set at all, and the
   value ``-1`` means *stable* to rustc and cargo, so tests that build crates see a plain
   stable toolchain), bounded by a timeout that kills its process group.

Everything goes to one report file, JSON lines: the runner's markers
(``{"repogym": ..., "nonce": ...}``: ``build``, ``target``, ``binary``, ``end``,
``done``) and between a ``binary`` and its ``end`` marker the binary's own output
(:mod:`~repogym.toolchains.rust.report` reads it).
"""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Optional

try:  # on the host; in the sandbox scan.py's text precedes this file's
    from repogym.toolchains.rust.scan import file_of, module_map, scan
except ImportError:  # pragma: no cover
    pass

LIB_KINDS = {"lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro"}
FLAGS = {"lib": ["--lib"], "bin": ["--bin"], "example": ["--example"], "bench": ["--bench"]}
HARNESS_ARGS = ["-Z", "unstable-options", "--format", "json", "--report-time",
                "--test-threads=1"]
MIN_BINARY_TIMEOUT = 10.0
LOG_TAIL = 3000
SAFETY = 5.0  # seconds the runner keeps for itself before the sandbox's own limit


def kind_of(kinds: list[str]) -> str:
    """A target's kind as keys use it: ``lib`` for every library kind."""
    return "lib" if LIB_KINDS.intersection(kinds) else (kinds[0] if kinds else "lib")


def split_id(test: str) -> tuple[str, str]:
    """(file, libtest name) of a test id; the name is "" when ``test`` is a file."""
    path, _, name = test.partition("::")
    return path, name


def canary_source(name: str) -> str:
    return f"\n#[cfg(test)]\n#[test]\nfn {name}() {{\n    panic!(\"repogym canary\");\n}}\n"


class Run:
    """One run of the plan ``plan`` (see :func:`repogym.toolchains.rust.plan`)."""

    def __init__(self, plan: dict[str, Any]) -> None:
        plan = dict(plan, seed=os.path.expandvars(plan["seed"]),
                    cargo_env={k: os.path.expandvars(v) for k, v in plan["cargo_env"].items()})
        if not plan.get("target_dir"):  # per sandbox: TMPDIR is the local provider's own
            plan["target_dir"] = os.path.join(os.environ.get("TMPDIR") or "/var/tmp",
                                              "repogym-cargo-target")
        self.plan = plan
        self.nonce: str = plan["nonce"]
        self.start = time.monotonic()
        self.root = os.getcwd()
        os.makedirs(plan["scratch"], exist_ok=True)
        self.fd = os.open(plan["report"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in plan["drop_env"] and not k.startswith("RUST_TEST_")}
        self.env.update(plan["cargo_env"])
        self.env.update(CARGO_TARGET_DIR=plan["target_dir"], CARGO_NET_OFFLINE="true")
        self.packages: dict[str, dict[str, Any]] = {}
        self.targets: dict[str, dict[str, Any]] = {}
        self.files: dict[str, Optional[str]] = {}

    # -- markers and helpers ------------------------------------------------------------

    def mark(self, action: str, **fields: Any) -> None:
        line = json.dumps({"repogym": action, "nonce": self.nonce, **fields})
        os.write(self.fd, (line + "\n").encode())

    def left(self) -> float:
        return self.plan["budget"] - (time.monotonic() - self.start) - SAFETY

    def read(self, path: str) -> Optional[str]:
        if path not in self.files:
            try:
                with open(os.path.join(self.root, path), encoding="utf-8",
                          errors="replace") as f:
                    self.files[path] = f.read()
            except OSError:
                self.files[path] = None
        return self.files[path]

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    # -- 1. survey ----------------------------------------------------------------------

    def survey(self) -> bool:
        done = subprocess.run(["cargo", "metadata", "--no-deps", "--offline",
                               "--format-version", "1"], env=self.env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=max(5, self.left()))
        if done.returncode != 0:
            self.mark("build", status=done.returncode, log=done.stderr[-LOG_TAIL:],
                      timed_out=False, survey=True)
            return False
        meta = json.loads(done.stdout)
        members = set(meta.get("workspace_members", []))
        for pkg in meta["packages"]:
            if pkg["id"] not in members:
                continue
            self.packages[pkg["id"]] = pkg
            no_harness = self._no_harness(pkg["manifest_path"])
            for target in pkg["targets"]:
                if not target.get("test", False):
                    continue
                kind = kind_of(target["kind"])
                key = f"{pkg['name']}/{kind}/{target['name']}"
                root = self.rel(target["src_path"])
                mods = module_map(root, self.read)
                self.targets[key] = {
                    "key": key, "package": pkg["id"], "kind": kind, "name": target["name"],
                    "root": root, "mods": mods, "files": set(mods.values()),
                    "harness": (kind, target["name"]) not in no_harness,
                    "dir": os.path.dirname(pkg["manifest_path"]), "exe": None,
                    "errors": [], "canary": False}
        return True

    def _no_harness(self, manifest: str) -> set[tuple[str, str]]:
        """(kind, name) of the manifest's targets with ``harness = false``."""
        try:
            import tomllib
            with open(manifest, "rb") as f:
                data = tomllib.load(f)
        except Exception:  # no tomllib (Python < 3.11) or a manifest cargo read anyway
            return set()
        out = set()
        for section, kind in (("lib", "lib"), ("bin", "bin"), ("test", "test"),
                              ("bench", "bench"), ("example", "example")):
            entries = data.get(section, [])
            for entry in entries if isinstance(entries, list) else [entries]:
                if isinstance(entry, dict) and entry.get("harness") is False:
                    name = entry.get("name") or data.get("package", {}).get("name", "")
                    out.add((kind, str(name).replace("-", "_") if kind == "lib" else name))
        return out

    # -- 2. plan ------------------------------------------------------------------------

    def wanted(self) -> list[dict[str, Any]]:
        """The targets to build and run, each with its ``names``, ``skip`` and
        ``whole`` (a whole file of it was selected)."""
        select = self.plan["select"]
        out = []
        for key in sorted(self.targets):
            t = self.targets[key]
            t["names"], t["skip"], t["whole"] = [], [], select is None
            for test in select or ():
                path, name = split_id(test)
                if path in t["files"]:
                    if name:
                        t["names"].append(name)
                    else:
                        t["whole"] = True
            t["skip"] = [n for p, n in map(split_id, self.plan["exclude"])
                         if n and p in t["files"]]
            collected = any(p in t["files"] for p in self.plan["collect"])
            if t["whole"] or t["names"] or collected:
                out.append(t)
        return out

    # -- 3. build -----------------------------------------------------------------------

    def prepare_target_dir(self) -> None:
        target, seed = self.plan["target_dir"], self.plan["seed"]
        os.makedirs(self.plan["tmp_link"], exist_ok=True)
        if self.plan["canary"]:
            shutil.rmtree(target, ignore_errors=True)
        if not os.path.isdir(target):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.isdir(seed):
                subprocess.run(["cp", "-a", seed, target], check=False,
                               stdin=subprocess.DEVNULL)
            os.makedirs(target, exist_ok=True)

    def plant(self, targets: list[dict[str, Any]]) -> dict[str, str]:
        """The canary appended to each root file of a harness binary to run (not to a
        crate that an inner ``#![cfg(...)]`` may configure out); root -> its backup."""
        backups: dict[str, str] = {}
        name = self.plan["canary_name"]
        for t in targets:
            text = self.read(t["root"])
            if not t["harness"] or text is None or scan(text).crate_cfg:
                continue
            t["canary"] = True
            if t["root"] in backups:
                continue
            backup = os.path.join(self.plan["scratch"], f"orig-{len(backups)}")
            shutil.copy2(t["root"], backup)
            backups[t["root"]] = backup
            with open(t["root"], "a", encoding="utf-8") as f:
                f.write(canary_source(name))
        with open(os.path.join(self.plan["scratch"], "planted"), "w") as f:
            f.writelines(f"{b}\t{r}\n" for r, b in backups.items())
        return backups

    def build(self, targets: list[dict[str, Any]]) -> None:
        """Every test binary of ``targets``. ``cargo build --keep-going`` builds the
        integration tests (all test targets when nothing is selected) past one that does
        not compile; a library's or binary's own tests, which only ``cargo test`` builds
        alone, get an invocation each, so none stops another."""
        if self.plan["select"] is None:
            self._cargo(["build", "--profile", "test", "--keep-going", "--workspace",
                         "--tests"])
            return
        for package in sorted({t["package"] for t in targets}):
            spec = package if package.startswith(("path+", "registry+", "git+")) \
                else self.packages[package]["name"]
            mine = [t for t in targets if t["package"] == package]
            tests = [arg for t in mine if t["kind"] == "test" for arg in ("--test", t["name"])]
            if tests:
                self._cargo(["build", "--profile", "test", "--keep-going", "-p", spec, *tests])
            for t in mine:
                if t["kind"] != "test":
                    flag = FLAGS.get(t["kind"], [])
                    self._cargo(["test", "--no-run", "-p", spec,
                                 *(flag if t["kind"] == "lib" else [*flag, t["name"]])])

    def _cargo(self, args: list[str]) -> None:
        cmd = ["cargo", *args, "--message-format=json"]
        log_path = os.path.join(self.plan["scratch"], "build.log")
        with open(log_path, "ab") as log:
            start = log.tell()
            proc = subprocess.Popen(cmd, env=self.env, stdout=subprocess.PIPE, stderr=log,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            timed_out = False
            try:
                out, _ = proc.communicate(timeout=max(1.0, self.left()))
            except subprocess.TimeoutExpired:
                _kill(proc)
                out, _ = proc.communicate()
                timed_out = True
        for line in out.decode("utf-8", "replace").splitlines():
            self._message(line)
        with open(log_path, "rb") as log:
            log.seek(start)
            tail = log.read()[-LOG_TAIL:].decode("utf-8", "replace")
        self.mark("build", status=proc.returncode, log=tail, timed_out=timed_out,
                  command=shlex.join(cmd))

    def _message(self, line: str) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            return
        if not isinstance(msg, dict) or "target" not in msg:
            if isinstance(msg, dict) and msg.get("reason") == "build-script-executed":
                for t in self.targets.values():
                    if t["package"] == msg.get("package_id"):
                        t["out_dir"] = msg.get("out_dir")
            return
        pkg = self.packages.get(msg.get("package_id", ""))
        if pkg is None:
            return
        key = f"{pkg['name']}/{kind_of(msg['target']['kind'])}/{msg['target']['name']}"
        target = self.targets.get(key)
        if target is None:
            return
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg.get("profile", {}).get("test"):
            target["exe"] = msg["executable"]
        elif msg.get("reason") == "compiler-message" \
                and msg.get("message", {}).get("level") == "error":
            target["errors"].append(msg["message"].get("rendered") or
                                    msg["message"].get("message", ""))

    # -- 4. run -------------------------------------------------------------------------

    def binary_env(self, t: dict[str, Any]) -> dict[str, str]:
        pkg = self.packages[t["package"]]
        version = pkg.get("version", "0.0.0")
        core, _, pre = version.partition("-")
        parts = (core.split(".") + ["0", "0", "0"])[:3]
        env = dict(self.env)  # cargo's own settings too: tests that run cargo need them
        deps = os.path.join(self.plan["target_dir"], "debug", "deps")
        env.update({
            "RUSTC_BOOTSTRAP": "-1", "RUST_BACKTRACE": "0",
            "CARGO": shutil.which("cargo") or "cargo",
            "CARGO_MANIFEST_DIR": t["dir"], "CARGO_MANIFEST_PATH": pkg["manifest_path"],
            "CARGO_PKG_NAME": pkg["name"], "CARGO_PKG_VERSION": version,
            "CARGO_PKG_VERSION_MAJOR": parts[0], "CARGO_PKG_VERSION_MINOR": parts[1],
            "CARGO_PKG_VERSION_PATCH": parts[2], "CARGO_PKG_VERSION_PRE": pre,
            "CARGO_PKG_AUTHORS": ":".join(pkg.get("authors") or []),
            "CARGO_PKG_DESCRIPTION": pkg.get("description") or "",
            "CARGO_PKG_HOMEPAGE": pkg.get("homepage") or "",
            "CARGO_PKG_REPOSITORY": pkg.get("repository") or "",
            "CARGO_PKG_LICENSE": pkg.get("license") or "",
            "CARGO_PKG_RUST_VERSION": pkg.get("rust_version") or "",
            "CARGO_CRATE_NAME": t["name"].replace("-", "_"), "CARGO_PRIMARY_PACKAGE": "1",
            "LD_LIBRARY_PATH": os.pathsep.join(
                p for p in (deps, self.env.get("LD_LIBRARY_PATH", "")) if p)})
        if t.get("out_dir"):
            env["OUT_DIR"] = t["out_dir"]
        return env

    def args(self, t: dict[str, Any]) -> list[str]:
        if not t["harness"]:
            return []
        args = list(HARNESS_ARGS)
        names = [] if t["whole"] else list(dict.fromkeys(t["names"]))
        if names and t["canary"]:
            names.append(self.plan["canary_name"])
        if names or t["skip"]:
            args.append("--exact")
        args += names
        for name in dict.fromkeys(t["skip"]):
            args += ["--skip", name]
        return args

    def timeout(self, t: dict[str, Any], env: dict[str, str]) -> float:
        limits = self.plan["limits"]
        default = limits["default"]
        cap = limits["run"]
        if default is None:
            return cap
        if t["whole"] or not t["harness"]:
            count = self._count(t, env) if t["harness"] else 1
            total = count * default
        else:
            total = 0.0
            for name in dict.fromkeys(t["names"]):
                test = next((f"{p}::{name}" for p in t["files"]
                             if f"{p}::{name}" in limits["tests"]), None)
                total += limits["tests"][test] if test else default
        return min(cap, max(MIN_BINARY_TIMEOUT, total + limits["grace"]))

    def _count(self, t: dict[str, Any], env: dict[str, str]) -> int:
        try:
            done = subprocess.run([t["exe"], "--list", "--format", "terse"], cwd=t["dir"],
                                  env=env, capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return 1
        return max(1, sum(1 for ln in done.stdout.splitlines() if ln.endswith(": test")))

    def run_binary(self, t: dict[str, Any]) -> int:
        env = self.binary_env(t)
        limit = min(self.timeout(t, env), max(1.0, self.left()))
        self.mark("binary", key=t["key"], timeout=limit)
        start = time.monotonic()
        killed = False
        try:
            proc = subprocess.Popen([t["exe"], *self.args(t)], cwd=t["dir"], env=env,
                                    stdout=self.fd, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            self.mark("end", key=t["key"], status=126, killed=False, duration=0.0,
                      error=str(exc))
            return 126
        try:
            status = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill(proc)
            status, killed = proc.wait(), True
        _kill(proc)  # what the binary left running
        self.mark("end", key=t["key"], status=status, killed=killed,
                  duration=time.monotonic() - start)
        return status

    # -- the whole run ------------------------------------------------------------------

    def main(self) -> None:
        if not self.survey():
            self.mark("done")
            return
        targets = self.wanted()
        self.prepare_target_dir()
        backups = self.plant(targets) if self.plan["canary"] else {}
        try:
            if targets:
                self.build(targets)
        finally:
            for root, backup in backups.items():
                shutil.copy2(backup, root)
            if self.plan["canary"]:
                os.remove(os.path.join(self.plan["scratch"], "planted"))
        for t in targets:
            self.mark("target", key=t["key"], root=t["root"], mods=t["mods"],
                      harness=t["harness"], canary=t["canary"], built=bool(t["exe"]),
                      errors="\n".join(t["errors"])[-LOG_TAIL * 2:])
        for t in targets:
            if not t["exe"]:
                continue
            if self.left() <= 0:
                break
            status = self.run_binary(t)
            if status != 0 and self.plan["failfast"]:
                break
        if self.plan["canary"]:
            shutil.rmtree(self.plan["target_dir"], ignore_errors=True)
        self.mark("done")


def _kill(proc: "subprocess.Popen[Any]") -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def main(plan: dict[str, Any]) -> None:
    """Run ``plan`` in the current directory (the repository)."""
    Run(plan).main()
    sys.stdout.flush()


def command(script_path: str) -> str:
    """The exec's command: the script read into memory and removed, then run."""
    loader = ("import os,sys;p=sys.argv[1];s=open(p).read();os.remove(p);"
              "exec(compile(s,'repogym-rust-run','exec'),{'__name__':'repogym_rust_run'})")
    return f"python3 -c {shlex.quote(loader)} {shlex.quote(script_path)}"


__all__ = ["canary_source", "command", "file_of", "kind_of", "main", "split_id"]
