"""What a JavaScript or TypeScript project says about itself: ``package.json``, its lock
file, its package manager and its test runner.

Package manager, in order: the ``packageManager`` field (``pnpm@10.14.0``), then the lock
file (``pnpm-lock.yaml``, ``yarn.lock``, ``package-lock.json`` / ``npm-shrinkwrap.json``),
else npm. Test runner: the first runner binary the ``test`` script calls (following
``npm run X`` / ``pnpm X`` into other scripts), else the first runner among the
dependencies, in :data:`RUNNERS` order.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repogym.errors import NoTestsError

# the runners repogym reads, by the binary a script calls -> its package
RUNNERS: dict[str, str] = {
    "jest": "jest", "vitest": "vitest", "mocha": "mocha", "ava": "ava", "tap": "tap",
    "uvu": "uvu",
}
NODE_TEST = "node-test"  # node's own runner (`node --test`): no package
LOCK_FILES = {"pnpm-lock.yaml": "pnpm", "yarn.lock": "yarn", "package-lock.json": "npm",
              "npm-shrinkwrap.json": "npm"}
BUILD_WORDS = re.compile(r"\b(build|tsc|tshy|prepare|bundt|rollup|esbuild|tsup|tsdown|babel|"
                         r"webpack|microbundle|swc|unbuild)\b")
LINT_WORDS = re.compile(r"\b(lint|eslint|xo|prettier|biome|oxlint|standard|tsd|attw|size)\b")


@dataclass(frozen=True)
class PackageManager:
    name: str  # npm | pnpm | yarn
    version: str = ""  # pinned by packageManager, else ""
    lock_file: str = ""

    @property
    def pinned(self) -> str:
        """``name@version`` (major of a pin only; a bare name when nothing is pinned)."""
        return f"{self.name}@{self.version}" if self.version else self.name


@dataclass(frozen=True)
class Project:
    """A ``package.json`` and the files beside it."""

    root: Path
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def read(cls, root: Path) -> Project | None:
        """The project at ``root``, or None without a readable ``package.json``."""
        try:
            data = json.loads((root / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        return cls(root, data if isinstance(data, dict) else {})

    @property
    def scripts(self) -> dict[str, str]:
        raw = self.data.get("scripts")
        return {k: v for k, v in raw.items() if isinstance(v, str)} if isinstance(raw, dict) \
            else {}

    def dependencies(self) -> dict[str, str]:
        """Every declared dependency (runtime, dev, peer, optional) -> its range."""
        out: dict[str, str] = {}
        for key in ("peerDependencies", "optionalDependencies", "dependencies",
                    "devDependencies"):
            raw = self.data.get(key)
            if isinstance(raw, dict):
                out.update({k: str(v) for k, v in raw.items()})
        return out

    @property
    def is_module(self) -> bool:
        return self.data.get("type") == "module"

    def package_manager(self) -> PackageManager:
        lock = next((name for name in LOCK_FILES if (self.root / name).is_file()), "")
        field_value = self.data.get("packageManager")
        if isinstance(field_value, str) and "@" in field_value:
            name, _, version = field_value.partition("@")
            if name in ("npm", "pnpm", "yarn"):
                return PackageManager(name, version.split("+")[0], lock)
        return PackageManager(LOCK_FILES[lock] if lock else "npm", "", lock)

    def test_commands(self, script: str = "test", depth: int = 0) -> list[str]:
        """The shell commands the ``script`` runs, with ``npm run X`` (and ``pnpm X``,
        ``yarn X``) expanded into X's commands, ``pre``/``post`` scripts aside."""
        text = self.scripts.get(script, "")
        if not text or depth > 4:
            return []
        out: list[str] = []
        for command in re.split(r"&&|\|\||;", text):
            words = _words(command)
            called = _called_script(words, self.scripts)
            if called and called != script:
                out += self.test_commands(called, depth + 1)
            elif words:
                out.append(" ".join(words))
        return out

    def runner(self) -> str:
        """The runner the tests run with (a key of :data:`RUNNERS`, or :data:`NODE_TEST`).

        Raises:
            NoTestsError: neither the test script nor the dependencies name one.
        """
        for command in self.test_commands():
            words = command.split()
            for i, word in enumerate(words):
                name = Path(word).name
                if name in RUNNERS:
                    return name
                if name == "node" and "--test" in words[i + 1:]:
                    return NODE_TEST
                if name in ("ts-scripts", "borderless") and "vitest" in self.dependencies():
                    return "vitest"  # @borderless/ts-scripts test runs vitest
        deps = self.dependencies()
        for name, package in RUNNERS.items():
            if package in deps:
                return name
        raise NoTestsError(f"{self.root.name}: no test runner found (the test script "
                           f"{self.scripts.get('test', '')!r} and the dependencies name none "
                           f"of {', '.join(RUNNERS)})")

    def runner_args(self, runner: str) -> list[str]:
        """The arguments the test script gives the runner (``--env node``, files, ``-r
        esm``): the first command that calls it, from after the runner's name."""
        for command in self.test_commands():
            words = command.split()
            for i, word in enumerate(words):
                if Path(word).name == runner or (runner == NODE_TEST and word == "node"
                                                 and "--test" in words[i + 1:]):
                    return words[i + 1:]
        return []

    def build_script(self) -> str | None:
        """The script to run before the tests because they read what it builds: ``pretest``
        when it builds something (not when it only lints), else None."""
        pre = self.scripts.get("pretest", "")
        if not pre:
            return None
        expanded = " ".join(self.test_commands("pretest")) or pre
        if BUILD_WORDS.search(expanded) and not LINT_WORDS.search(expanded):
            return "pretest"
        return None


def _words(command: str) -> list[str]:
    """A command's words, environment assignments and ``npx``/``cross-env`` wrappers
    dropped."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    while words and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0])
                     or words[0] in ("npx", "cross-env", "env", "exec", "-y", "--yes")):
        words = words[1:]
    return words


def _called_script(words: list[str], scripts: dict[str, str]) -> str | None:
    """The script ``npm run X`` / ``pnpm [run] X`` / ``yarn [run] X`` calls, if any."""
    if not words or words[0] not in ("npm", "pnpm", "yarn"):
        return None
    rest = [w for w in words[1:] if not w.startswith("-")]
    if rest and rest[0] in ("run", "run-script"):
        rest = rest[1:]
    if rest and rest[0] == "test":
        return "test"
    return rest[0] if rest and rest[0] in scripts else None


def find_project(repo: Path) -> Project:
    """The project at the repository's root.

    Raises:
        NoTestsError: there is no readable ``package.json`` at the root.
    """
    project = Project.read(repo)
    if project is None:
        raise NoTestsError(f"{repo.name}: no readable package.json at the root")
    return project


__all__ = ["NODE_TEST", "RUNNERS", "PackageManager", "Project", "find_project"]
