"""A Go repository as the toolchain sees it: its module (or the one it needs when it has
no ``go.mod``), and the install recipe.

A repository from before modules (no ``go.mod``: ``pkg/errors``, ``go-shellquote``) is
given one in its environment, named by the import path its own files use: an import
comment (``package errors // import "github.com/pkg/errors"``), an import of itself in an
external test package, or the ``go get``/``import`` line of its README; failing those,
``example.com/<name>``. The ``go.mod`` and ``go.sum`` made so are untracked files of the
environment (a reset restores them), never part of a patch.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from repogym.toolchains.go import files

MOD_CACHE = "$VIRTUAL_ENV/go/mod"  # the environment's modules (read-only once installed)
BUILD_SEED = "$VIRTUAL_ENV/go/build"  # the build cache the install warmed
_IMPORT_COMMENT = re.compile(r'^package\s+\w+\s*//\s*import\s+"([^"]+)"', re.M)
_README_PATH = re.compile(r'(?:go get(?: -u)?|import)\s+"?((?:github\.com|gitlab\.com|'
                          r'golang\.org|gopkg\.in|go\.[a-z]+)/[\w.\-/]+)"?')


@dataclass(frozen=True)
class GoProject:
    root: Path
    module: str  # its module path (declared, or the one it gets)
    declared: bool  # it has a go.mod

    @classmethod
    def read(cls, root: Path) -> GoProject | None:
        """The project at ``root``, or None when it has no Go test file."""
        tracked = _tracked(root)
        if not any(files.is_test_file(p) and p.endswith("_test.go") for p in tracked):
            return None
        gomod = root / "go.mod"
        if gomod.is_file():
            found = re.search(r"^module\s+(\S+)", gomod.read_text(errors="replace"), re.M)
            if found:
                return cls(root, found.group(1).strip('"'), True)
        return cls(root, guess_module(root, tracked), False)

    def install_steps(self) -> list[str]:
        """Modules into the environment's cache, then every package and test binary built
        once (the build cache the runs start from); a module-less repository gets its
        ``go.mod`` first."""
        steps = [f'mkdir -p "{MOD_CACHE}" "{BUILD_SEED}"']
        env = f'export GOMODCACHE="{MOD_CACHE}" GOCACHE="{BUILD_SEED}" GOFLAGS="-buildvcs=false"'
        if not self.declared:
            steps.append(f"{env} && go mod init {shlex.quote(self.module)} && "
                         "(go mod tidy -e || true)")
        steps.append(f"{env} && go mod download")
        steps.append(f"{env} && GOFLAGS='-buildvcs=false -mod=mod' go test -count=1 -run '^$' "
                     "./... >/dev/null || true")
        steps.append(f'chmod -R u+w "{BUILD_SEED}"')
        return steps


def guess_module(root: Path, tracked: list[str]) -> str:
    """The import path a module-less repository's own files use for it."""
    for path in sorted(tracked):
        if path.endswith(".go") and "/" not in path:
            text = _read(root / path)
            found = _IMPORT_COMMENT.search(text)
            if found:
                return found.group(1)
    name = root.name.split("_", 1)[-1] if "_" in root.name else root.name
    for path in sorted(tracked):
        if path.endswith("_test.go") and "/" not in path:
            for imp in re.findall(r'"([\w.\-]+\.[a-z]+/[\w.\-/]+)"', _read(root / path)):
                if imp.rsplit("/", 1)[-1] in {name, name.removeprefix("go-")}:
                    return imp
    for path in sorted(tracked):
        if path.lower().startswith("readme") and "/" not in path:
            for found in _README_PATH.findall(_read(root / path)):
                tail = found.rstrip("/").rsplit("/", 1)[-1]
                if tail in {name, name.removeprefix("go-")} or found.count("/") == 2:
                    return found.rstrip("/")
    return f"example.com/{name}"


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


__all__ = ["BUILD_SEED", "GoProject", "MOD_CACHE", "guess_module"]
