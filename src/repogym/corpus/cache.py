"""Prefect result caching for the corpus stages whose inputs are plain values.

Layout, under the data folder (``settings.out``)::

    <out>/prefect-results/<stage>-<key32>     one Prefect result record per stage and key

Three stages are cached, each under a key naming everything its result depends on, plus
:func:`code_version` (a hash of repogym's own source, so an upgrade never reads results
another version computed):

* ``resolve``: a PyPI sample made into a git repository, keyed by the requirement, the pin,
  the name and the samples folder (:func:`resolve_key`).
* ``clone``: the source cloned at a commit, with its toolchain and install recipe, keyed by
  the source, the *resolved* commit sha (``git rev-parse`` on a local source, ``git
  ls-remote`` on a URL; a revision that does not resolve is not cached), the name, the
  cache folder and the base image (:func:`clone_key`).
* ``mine``: one mining pass, keyed by the repository's tip, the commit selection and
  budget, the commit it starts after and the commits already judged (:func:`mine_key`).
  A pass that asks GitHub for statements is not cached (the answer is not git's).

A result that names something outside the record (a folder, a checkout at a commit) is
checked before Prefect may use it (``valid``): when the folder is gone or the checkout has
moved, the task runs again with ``refresh_cache`` and its new result replaces the record.
A task that fails is never cached. Deleting ``<out>/prefect-results`` only costs time.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Callable, Collection, TypeVar

import git
from prefect.cache_policies import NO_CACHE
from prefect.filesystems import LocalFileSystem
from prefect.results import ResultStore
from prefect.states import State

import repogym
from repogym.config import Settings
from repogym.errors import RepogymError
from repogym.flows.repo_flow import stage_state
from repogym.generators.mined import CommitSelection, statements_from_github
from repogym.repos import is_url
from repogym.schemas.records import Checkout, RepoSpec, short_hash

T = TypeVar("T")
log = logging.getLogger(__name__)

RESULTS_DIR = "prefect-results"
LS_REMOTE_TIMEOUT = 60.0  # seconds
_FULL_SHA = re.compile(r"^[0-9a-fA-F]{40}$")


def results_dir(settings: Settings) -> Path:
    """Where a run's cached stage results live: ``<out>/prefect-results``."""
    return Path(settings.out).resolve() / RESULTS_DIR


@functools.cache
def code_version() -> str:
    """A hash of every ``*.py`` file of the installed repogym package (read once a process)."""
    root = Path(repogym.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def stage_key(stage: str, *parts: str) -> str:
    """``<stage>-<hash>``: the record name of ``stage`` for these inputs and this code."""
    return f"{stage}-{short_hash(stage, code_version(), *parts, n=32)}"


# -- keys ------------------------------------------------------------------------------


def resolve_key(requirement: str, commit: str | None, name: str, samples_dir: Path) -> str:
    """The key of a sample's resolution (the sdist is only fetched once per folder)."""
    return stage_key("resolve", requirement, commit or "", name, str(samples_dir.resolve()))


def clone_key(spec: RepoSpec, settings: Settings) -> str | None:
    """The key of cloning ``spec``; None when its revision does not resolve to a commit
    (unknown, unreachable or ambiguous: the clone then runs uncached and says why)."""
    sha = resolved_commit(spec)
    if sha is None:
        return None
    return stage_key("clone", spec.source, spec.name or "", spec.commit or "", sha,
                     str(Path(settings.cache_dir).resolve()), settings.base_image)


def mine_key(checkout: Checkout, toolchain: str, selection: CommitSelection, max_mined: int,
             mined_up_to: str | None, seen: Collection[str]) -> str | None:
    """The key of one mining pass; None when its statements come from GitHub."""
    if statements_from_github(checkout):
        return None
    return stage_key("mine", checkout.name, checkout.spec.source, checkout.commit, toolchain,
                     selection.model_dump_json(), str(max_mined), mined_up_to or "",
                     ",".join(sorted(seen)))


# -- resolving a revision without cloning ------------------------------------------------


def resolved_commit(spec: RepoSpec) -> str | None:
    """The full sha ``spec.commit`` (default HEAD) names at the source now, or None.

    ``origin/<branch>`` is the source's branch (as :func:`repogym.repos.clone` maps it).
    A URL is asked with ``git ls-remote`` (branches, tags and HEAD only: a short sha there
    gives None).
    """
    rev = spec.commit or "HEAD"
    if _FULL_SHA.match(rev):
        return rev.lower()
    if is_url(spec.source):
        return _remote_commit(spec.source, rev)
    return _local_commit(spec.source, rev)


def _local_commit(source: str, rev: str) -> str | None:
    names = [f"refs/heads/{rev[len('origin/'):]}", rev] if rev.startswith("origin/") else [rev]
    try:
        repo = git.Repo(source, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    for name in names:
        try:
            return str(repo.git.rev_parse("--verify", "--quiet", f"{name}^{{commit}}"))
        except git.GitCommandError:
            continue
    return None


def _remote_commit(url: str, rev: str) -> str | None:
    try:
        proc = subprocess.run(["git", "ls-remote", "--", url], capture_output=True, text=True,
                              timeout=LS_REMOTE_TIMEOUT, stdin=subprocess.DEVNULL,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    refs = {ref: sha for sha, _, ref in (line.partition("\t") for line in proc.stdout.splitlines())}
    name = rev[len("origin/"):] if rev.startswith("origin/") else rev
    for ref in ((rev,) if rev == "HEAD" else
                (f"refs/heads/{name}", f"refs/tags/{name}^{{}}", f"refs/tags/{name}")):
        if ref in refs:
            return refs[ref]
    return None


# -- checks of cached results ------------------------------------------------------------


def checkout_intact(checkout: Checkout) -> bool:
    """The checkout's folder is a git repository at its commit, with nothing changed or added
    (ignored files included): what :func:`repogym.repos.clone` leaves."""
    try:
        repo = git.Repo(checkout.path, search_parent_directories=False)
        if repo.head.commit.hexsha != checkout.commit:
            return False
        return not repo.git.status("--porcelain", "--ignored", "--untracked-files=all").strip()
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, git.GitCommandError,
            ValueError):
        return False


def git_folder_exists(spec: RepoSpec) -> bool:
    """The spec's local source is still a git repository."""
    return (Path(spec.source) / ".git").is_dir()


# -- running a stage -----------------------------------------------------------------------


def stale(results: Path, key: str, valid: Callable[[Any], bool]) -> bool:
    """Whether the record under ``key`` exists but may not be used: unreadable, or its
    result fails ``valid`` (then the task must run again and replace it)."""
    store = ResultStore(result_storage=LocalFileSystem(basepath=str(results)))
    if not store.exists(key):
        return False
    try:
        return not valid(store.read(key).result)
    except Exception:  # noqa: BLE001 - an unreadable record is recomputed, never trusted
        return True


def cached_stage(stage: str, fn: Callable[[], T], *, key: str | None, results: Path | None,
                 valid: Callable[[T], bool] = lambda _: True, retries: int = 0,
                 retry_if: Callable[[RepogymError], bool] | None = None,
                 retry_delay: float = 0.0, tags: Collection[str] = ()) -> tuple[T, bool]:
    """Run one stage as a Prefect task whose result is cached under ``key``.

    Without a key or a results folder the task is not cached (as
    :func:`repogym.flows.repo_flow.prefect_stage`). A RepogymError ends the task run as
    Failed with its one-line message (never cached) and is raised again here; with
    ``retries``, a failure ``retry_if`` accepts is retried.

    Returns:
        The result, and whether it came from the cache (the task run is ``Cached``).
    """
    options: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}
    if key is not None and results is not None:
        refresh = stale(results, key, valid)
        if refresh:
            run_logger().info("%s: the cached result %s refers to something gone or changed: "
                              "recomputing", stage, key)
        options = {"cache_key_fn": lambda *_: key, "result_storage": results,
                   "persist_result": True, "refresh_cache": refresh}
    state, caught = stage_state(stage, fn, retries=retries, retry_if=retry_if,
                                retry_delay=retry_delay, tags=tags, **options)
    if state.is_failed():
        _drop_failure_record(state, results)
        if caught:
            raise caught[-1]
    return state.result(), state.name == "Cached"


def _drop_failure_record(state: State, results: Path | None) -> None:
    """Prefect keeps a failed persisted run's result under a random key; a failure is never
    read back here, so remove it rather than let one file pile up per failed run."""
    key = getattr(getattr(state.data, "metadata", None), "storage_key", None)
    if results is None or not key:
        return
    path = Path(results) / key
    if path.parent == Path(results) and path.is_file():
        path.unlink(missing_ok=True)


def run_logger() -> logging.Logger | logging.LoggerAdapter[logging.Logger]:
    """The Prefect run's logger when there is a run (its lines show in the UI), else ours."""
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        return get_run_logger()
    except MissingContextError:
        return log
