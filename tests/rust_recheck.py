"""Re-check a Rust task without repogym's runner or its image: a fresh clone of the
repository on the host, the host's own ``cargo test``; the FAIL_TO_PASS tests must not pass
at the broken state (failing, or not built) and must pass with the row's patch; the
PASS_TO_PASS tests that do not pass on the host are returned (the host runs as another user,
with other tools, than the task's environment).

The fixed state is made as grading makes it (bug patch, the row's patch, then the test
patch), the broken one as the judge does (bug patch, test patch), so a mined fix whose test
and gold patches cut one source file (``#[cfg(test)]`` changes in the test patch) is checked
in both orders.

Outcomes are read from cargo and libtest themselves: ``--message-format json`` says whether
the build finished, and libtest's ``test <name> ... ok|FAILED|ignored`` lines, under the
``Running <target>`` line of their binary, give each test's outcome. A repogym test id is
``<file>::<libtest name>``; a file under a ``tests`` folder names the integration target
(``tests/glob-std.rs`` -> ``glob-std``), any other file the unit tests (:func:`target_of`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

UNIT = "unit"  # the target key of unit tests (a library's or binary's own)
ENV = {**os.environ, "CARGO_TERM_COLOR": "never", "CARGO_INCREMENTAL": "0"}
for _name in ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTC_WRAPPER", "CARGO_BUILD_TARGET"):
    ENV.pop(_name, None)
_RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+)")
# "test a::b ... ok", "test a::b - should panic ... ok", "test a::b ... ignored, why"
_RESULT = re.compile(r"^test (\S+) (?:- should panic.*? )?\.\.\. (ok|FAILED|ignored)\b")


@dataclass(frozen=True)
class CargoRun:
    """What one ``cargo test`` said: whether every target built, and each test's outcome
    (``ok``, ``FAILED``, ``ignored``) by (target key, libtest name)."""

    built: bool
    outcomes: dict[tuple[str, str], str] = field(default_factory=dict)

    def outcome(self, test_id: str) -> str | None:
        """The outcome of a repogym test id (None: the test did not run)."""
        return self.outcomes.get(key_of(test_id))


def target_of(path: str) -> str:
    """The target key of a source path: the integration test a ``tests/`` file belongs to
    (``tests/a.rs``, ``tests/a/main.rs``, ``tests/a/helpers.rs`` -> ``a``), else ``unit``
    (``src/lib.rs``, and ``src/tests/a.rs``: a ``tests`` module under ``src``)."""
    parts = PurePosixPath(path).parts
    if "tests" in parts[:-1]:
        at = parts.index("tests")
        if "src" in parts[:at]:  # bitflags' src/tests/fmt.rs: a module of the library
            return UNIT
        rest = parts[at + 1:]
        return PurePosixPath(rest[0]).stem if rest else UNIT
    return UNIT


def key_of(test_id: str) -> tuple[str, str]:
    """(target key, libtest name) of a repogym id ``<file>::<module::test>``."""
    path, _, name = test_id.partition("::")
    return target_of(path), name


def parse(output: str) -> CargoRun:
    """Read ``cargo test --message-format json`` output (stdout and stderr merged, in
    order): cargo's JSON messages, its ``Running`` lines, libtest's result lines."""
    built, target = True, UNIT
    outcomes: dict[tuple[str, str], str] = {}
    for line in output.splitlines():
        if line.startswith("{"):
            built = built and _build_ok(line)
            continue
        running = _RUNNING.match(line)
        if running:
            target = target_of(running.group(1))
            continue
        result = _RESULT.match(line)
        if result:
            outcomes[(target, result.group(1))] = result.group(2)
    return CargoRun(built=built, outcomes=outcomes)


def _build_ok(line: str) -> bool:
    try:
        message: Any = json.loads(line)
    except ValueError:
        return True
    if not isinstance(message, dict):
        return True
    if message.get("reason") == "build-finished":
        return bool(message.get("success"))
    return not (message.get("reason") == "compiler-message"
                and (message.get("message") or {}).get("level") == "error")


def cargo_test(repo: Path, tests: Iterable[str], target_dir: Path) -> CargoRun:
    """Run ``tests`` (repogym ids) with the host's ``cargo test`` in ``repo``: every test
    target, no doc-tests, libtest filtering by exact name."""
    names = sorted({key_of(t)[1] for t in tests})
    res = subprocess.run(
        ["cargo", "test", "--workspace", "--tests", "--no-fail-fast", "--message-format",
         "json", "--", "--exact", *names],
        cwd=repo, env={**ENV, "CARGO_TARGET_DIR": str(target_dir)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=1800)
    return parse(res.stdout)


def _apply(repo: Path, patch: str) -> None:
    if patch:
        subprocess.run(["git", "apply", "-"], input=patch.encode(), cwd=repo, check=True)


def _state(source: Path, repo: Path, commit: str, *patches: str) -> None:
    if not repo.exists():
        subprocess.run(["git", "clone", "-q", str(source), str(repo)], check=True)
    subprocess.run(["git", "checkout", "-q", "-f", commit], cwd=repo, check=True)
    subprocess.run(["git", "clean", "-qfdx"], cwd=repo, check=True)
    for patch in patches:
        _apply(repo, patch)


def recheck(source: Path, workdir: Path, row: Any) -> list[str]:
    """The row's FAIL_TO_PASS tests do not pass at the broken state and pass with its
    patch, as the host's ``cargo test`` says in a fresh clone of ``source``.

    Returns:
        The PASS_TO_PASS tests that did not pass with the patch on the host (the host is not
        the task's environment: a test that needs an unprivileged user fails as root).

    Raises:
        AssertionError: the FAIL_TO_PASS tests do not behave (the message names the row
            and the outcomes).
    """
    repo = workdir / f"recheck-{row.instance_id}"
    target = workdir / "target"  # shared by the rows of one repository: builds are reused
    f2p, listed = list(row.FAIL_TO_PASS), [*row.FAIL_TO_PASS, *row.PASS_TO_PASS]
    _state(source, repo, row.base_commit, row.bug_patch, row.test_patch)
    broken = cargo_test(repo, f2p, target)
    passed = [t for t in f2p if broken.outcome(t) == "ok"]
    assert not passed, (row.instance_id, "passes at the broken state", passed)
    _state(source, repo, row.base_commit, row.bug_patch, row.patch, row.test_patch)
    fixed = cargo_test(repo, listed, target)
    failing = {t: fixed.outcome(t) for t in f2p if fixed.outcome(t) != "ok"}
    assert fixed.built and not failing, (row.instance_id, "fixed state", failing)
    return [t for t in row.PASS_TO_PASS if fixed.outcome(t) != "ok"]
