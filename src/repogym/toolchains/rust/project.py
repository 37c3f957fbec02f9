"""A Rust repository as the toolchain sees it, and its install recipe.

A repository is a Rust project when it has a ``Cargo.toml`` at its root (a package or a
workspace) and tests: a tracked file under a ``tests`` folder, or a source file with unit
tests (``#[test]``, ``#[cfg(test)]``).

The environment keeps cargo's state in the venv (read-only once installed, like every
other part of the venv)::

    $VIRTUAL_ENV/cargo/home     CARGO_HOME: the crates the project needs, from crates.io
    $VIRTUAL_ENV/cargo/target   every test target built once (the warm seed a run copies)

The install resolves the dependencies (with the committed ``Cargo.lock`` when there is
one: ``cargo fetch --locked``, falling back to updating it when it no longer matches the
manifests; else a new lock file, an untracked file of the environment a reset restores),
downloads them for the host's platform only, then builds every test target of the
workspace as ``cargo test`` builds them (``cargo build --profile test --keep-going
--workspace --tests``: past a target that does not compile). The runs use the
same settings (:data:`CARGO_ENV`: no incremental compilation, no debug info -- smaller,
faster to copy and to build -- and none of the caller's ``RUSTFLAGS``), so what the
install built is what they find. Doc-tests are not run (``--tests`` builds none: they
would need rustdoc per run and map to no test file).

A test built at the install bakes in its target directory's ``tmp`` folder
(``CARGO_TARGET_TMPDIR``); in the seed that folder is a link to
:data:`TARGET_TMP` (scratch space a reset empties), so a binary built at the install and
one built in a run's copy write to the same writable place.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from repogym.layout import SCRATCH
from repogym.toolchains.rust import files

CARGO_HOME = "$VIRTUAL_ENV/cargo/home"
SEED = "$VIRTUAL_ENV/cargo/target"
TARGET_TMP = f"{SCRATCH}/repogym-cargo-tmp"
CARGO_ENV = {"CARGO_HOME": CARGO_HOME, "CARGO_INCREMENTAL": "0",
             "CARGO_PROFILE_DEV_DEBUG": "false", "CARGO_PROFILE_TEST_DEBUG": "false",
             "CARGO_TERM_COLOR": "never"}
# settings of the caller's that would make a run build differently from the install
DROP_ENV = ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTDOCFLAGS", "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER", "RUSTC_BOOTSTRAP", "CARGO_BUILD_TARGET",
            "CARGO_BUILD_RUSTFLAGS", "CARGO_TARGET_DIR", "CARGO_BUILD_TARGET_DIR",
            "CARGO_BUILD_JOBS", "RUSTUP_TOOLCHAIN")
BUILD = "cargo build --profile test --keep-going --workspace --tests"


@dataclass(frozen=True)
class RustProject:
    root: Path
    test_files: int  # tracked files under tests/ plus source files with unit tests
    locked: bool  # a Cargo.lock is tracked

    @classmethod
    def read(cls, root: Path) -> RustProject | None:
        """The project at ``root``, or None when it has no Cargo.toml or no tests."""
        if not (root / "Cargo.toml").is_file():
            return None
        tracked = _tracked(root)
        count = 0
        for path in tracked:
            if not path.endswith(".rs"):
                continue
            if files.is_test_file(path):
                count += 1
            elif "src" in PurePosixPath(path).parts and files.has_inline_tests(
                    _read(root / path)):
                count += 1
        return cls(root, count, "Cargo.lock" in tracked) if count else None

    def install_steps(self) -> list[str]:
        """Dependencies into the environment's cargo home, then every test target built
        into the seed (module docstring)."""
        env = "unset " + " ".join(DROP_ENV) + "; export " + " ".join(
            f'{k}="{v}"' for k, v in CARGO_ENV.items())
        host = "host=$(rustc -vV | sed -n 's/^host: //p')"
        fetch = ('cargo fetch --locked --target "$host" || cargo fetch --target "$host"'
                 if self.locked else
                 'cargo generate-lockfile && cargo fetch --target "$host"')
        return [
            f'mkdir -p "{CARGO_HOME}" "{SEED}"',
            f"{env} && {host} && {{ {fetch}; }}",
            f'{env} CARGO_TARGET_DIR="{SEED}" && {{ {BUILD} 2>&1 | tail -n 40 || true; }}',
            f'rm -rf "{SEED}/tmp" && ln -s {shlex.quote(TARGET_TMP)} "{SEED}/tmp"',
        ]


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _tracked(repo: Path) -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


__all__ = ["BUILD", "CARGO_ENV", "CARGO_HOME", "DROP_ENV", "RustProject", "SEED",
           "TARGET_TMP"]
