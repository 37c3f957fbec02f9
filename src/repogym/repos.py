"""Clone a repository (git URL or local path) at a pinned commit, with GitPython.

Clones live under ``<cache>/repos/<name>-<hash(source)>`` and are reused (fetched again)
on later runs. Every failure of the source is a :class:`SourceError` with one line
naming the cause; nothing is left half-cloned.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from urllib.parse import urlparse

import git

from repogym.errors import SourceError
from repogym.schemas.records import Checkout, RepoSpec, short_hash

# Repositories may belong to another user (an unpacked sdist, a mounted volume);
# we only read them, so git's ownership check is not a protection here.
os.environ.setdefault("GIT_CONFIG_COUNT", "1")
os.environ.setdefault("GIT_CONFIG_KEY_0", "safe.directory")
os.environ.setdefault("GIT_CONFIG_VALUE_0", "*")


def is_url(source: str) -> bool:
    return "://" in source or bool(re.match(r"^[\w.-]+@[\w.-]+:", source))


def repo_name(source: str) -> str:
    """``owner__repo`` for a URL, the folder name for a local path; safe in paths and tags."""
    if is_url(source):
        path = urlparse(source).path if "://" in source else source.split(":", 1)[1]
        parts = [p for p in path.removesuffix(".git").split("/") if p]
        name = "__".join(parts[-2:]) if len(parts) >= 2 else (parts[-1] if parts else "repo")
    else:
        name = Path(source).resolve().name.removesuffix(".bundle")
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._-").lower() or "repo"


def _local_source(source: str) -> str:
    path = Path(source).expanduser()
    if not path.exists():
        raise SourceError(f"{source}: no such path")
    if path.is_file():  # a git bundle (``git bundle create``): cloned as any repository
        try:
            git.Git().bundle("list-heads", str(path.resolve()))
        except git.GitCommandError:
            raise SourceError(f"{source}: not a git repository or bundle") from None
        return str(path.resolve())
    try:
        git.Repo(path, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise SourceError(f"{source}: not a git repository") from None
    return str(path.resolve())


def clone(spec: RepoSpec, cache_dir: Path) -> Checkout:
    """Clone (or refresh) ``spec.source`` and check out ``spec.commit`` (default HEAD).

    Raises:
        SourceError: not a git repository, cannot be cloned, or no such commit.
    """
    source = spec.source if is_url(spec.source) else _local_source(spec.source)
    name = spec.name or repo_name(spec.source)
    dest = cache_dir / "repos" / f"{name}-{short_hash(source)}"
    repo = _fetch(source, dest)
    try:
        sha = repo.commit(spec.commit or "HEAD").hexsha
    except (git.BadName, ValueError, git.GitCommandError):
        raise SourceError(f"{spec.source}: no commit {spec.commit!r}") from None
    try:
        repo.git.checkout("--detach", "--force", sha)
        repo.git.clean("-fdxq")
    except git.GitCommandError as exc:
        raise SourceError(f"{spec.source}: cannot check out {sha[:12]}: {_first_line(exc)}") from None
    return Checkout(spec=spec, name=name, path=dest, commit=sha)


def _fetch(source: str, dest: Path) -> git.Repo:
    if dest.exists():
        try:
            repo = git.Repo(dest)
            repo.git.fetch("--quiet", "--force", "--tags", source, "+refs/heads/*:refs/remotes/origin/*")
            return _update_head(repo, source)
        except (git.InvalidGitRepositoryError, git.GitCommandError):
            shutil.rmtree(dest, ignore_errors=True)  # broken cache: clone again
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        repo = git.Repo.clone_from(source, tmp, no_checkout=True)
    except git.GitCommandError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SourceError(f"{source}: cannot clone: {_first_line(exc)}") from None
    tmp.rename(dest)
    return git.Repo(dest)


def _update_head(repo: git.Repo, source: str) -> git.Repo:
    """Point FETCH_HEAD's default branch at what the source calls HEAD now."""
    head = str(repo.git.ls_remote(source, "HEAD")).split()
    if head:
        repo.git.fetch("--quiet", source, head[0])
        repo.git.update_ref("refs/remotes/origin/HEAD", head[0])
        repo.git.checkout("--detach", "--force", head[0])
    return repo


def _first_line(exc: git.GitCommandError) -> str:
    text = (exc.stderr or str(exc)).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "stderr:" not in ln]
    msg = lines[-1] if lines else text
    return msg.strip("' ").removeprefix("fatal: ")
