"""Mined candidates: real fixes taken from a repository's git history.

A mined task is a commit that fixed something and proved it with a test:

* **broken state** = the commit's first parent (``base_commit``; ``bug_patch`` is empty);
* ``gold_patch`` = the commit's diff against that parent, restricted to non-test files,
  with pure documentation files dropped;
* ``test_patch`` = the same diff restricted to test files (``toolchain.is_test_file``).

Where a language keeps unit tests inside source files (the toolchain's
``unit_tests_in_sources``: Rust's ``#[cfg(test)]`` modules), a source file's change is cut
at its test code (:func:`~repogym.generators.span_split.cut_at_test_spans`, by the
toolchain's ``test_spans``): the changes there go to the test patch, the rest to the gold
patch. A change that cannot be cut so (test and code lines in one block or within three
lines of each other, a source file with tests added or deleted whole) skips the commit.

Which commits are looked at (:class:`CommitSelection`): ``rev_range`` (default: the
checkout's commit) walked newest first, along first parents by default (the main line;
``first_parent=False`` also walks merged branches), limited by ``since`` (committer date,
``git log --since``) and ``last`` (at most N commits, 200 by default).

Incremental walks: given ``mined_up_to`` (the tip an earlier, complete pass walked from),
only the commits new since then are walked (``mined_up_to..tip``, within the same limits),
provided that commit is an ancestor of this walk's tip. When it is not (history rewritten,
a force push, a commit the repository does not have, a range with several tips) the whole
selection is walked and :attr:`MiningResult.full_walk_reason` (also logged) says why.
:attr:`MiningResult.mined_up_to` is what a later pass may start after: the tip, once the
walk reached the end of the selection; ``None`` when ``max_candidates`` stopped it early
(older commits were never looked at, so the earlier marker must be kept).

Which of those become candidates. Each commit is checked in this order and the first rule
that applies skips it, under the reason in brackets (:class:`SkipReason`):

1. it has no parent [root_commit], or more than one when the walk also follows merged
   branches [merge] (on the main line a merge is the change it brings there: its diff
   against its first parent, the pull request it merged);
2. it is in ``seen_commits`` (judged by an earlier run) [seen];
3. a source file's change cannot be cut at its test code (above) [entangled];
4. it changes nothing but documentation [only_docs];
5. it changes no test file [no_test_change];
6. it changes nothing but test files [only_tests];
7. it changes no runtime source file (e.g. only tests and config) [no_source_change];
8. a file it keeps (test or non-doc) is binary, or its diff is not UTF-8 text [binary];
9. the kept files change more than ``max_changed_lines`` lines (2,000) [too_large].

Rules 4-7 see a source file whose test code changed as a test file, and as a non-test file
too when the rest of it changed.

File classes: a *test file* is whatever the toolchain says; a *doc file* is ``*.md``,
``*.rst``, ``*.adoc``, a top-level ``*.txt`` (except install files such as
``requirements.txt``), anything under ``docs/`` or ``doc/``, release notes and changelog
fragments (``newsfragments/``, ``changelog.d/``, ``.changeset/``, a top-level ``changes/``
or ``news/``, towncrier names like ``123.bugfix``), or a
``CHANGELOG``/``CHANGES``/``HISTORY``/``NEWS``/``RELEASE_NOTES``/``AUTHORS``-style file
that is neither code nor data (:func:`is_doc_file`);
an *install file* is one that decides the environment (:func:`is_install_file`); a
*runtime source file* is a non-test, non-doc, non-install file with a source suffix.
Config and data files that are neither stay in the gold patch.

Install files are Python's (``pyproject.toml``, ``requirements*.txt``, ...), cargo's
root ``Cargo.toml`` and ``Cargo.lock`` and Maven's root ``pom.xml``. A ``Cargo.toml``
counts by its dependency tables only (``[dependencies]``, ``[dev-dependencies]``,
``[features]``, ``[target.*]``, ``[patch]``, ``[workspace]``...), and a ``pom.xml`` without
the project's own version and its descriptive elements (name, description, developers,
scm...), so a version bump does not ask for an environment of its own; a parent POM or a
dependency of another version does (Maven runs offline in the environment: an older
commit's ``commons-parent`` is not in the checkout's repository, commons-codec). (Go's
``go.mod`` is not an install file yet: Go fixes are judged in the checkout's environment.)

Each candidate records the parent's :func:`dependency_fingerprint` (``provenance["deps"]``)
so the caller can build a separate environment when it differs from the checkout's, and
``provenance["deps_changed"] == "true"`` when the fix itself changes it.

The statement is the issue or pull request the message references (``fixes #12``,
``(#34)``) when the repository is on github.com, a token is available (``GITHUB_TOKEN``)
or a fetcher is injected, and its body can be fetched; any failure falls back silently to
the commit message. A commit message is cleaned first
(:func:`~repogym.generators.commit_message.clean_commit_message`): trailers, issue and CI
noise and the sentences that say how the fix was made are dropped, and
``provenance["statement_dropped"]`` lists the reasons (comma-separated
:class:`~repogym.generators.commit_message.DropReason` values, "" when nothing was
dropped). When nothing usable remains the statement is empty, and the pipeline writes one
from the failing tests' evidence. ``provenance["subject"]`` keeps the raw subject line.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Collection, Iterator, Mapping

import git
from pydantic import BaseModel, ConfigDict, Field

from repogym.errors import SourceError
from repogym.generators.commit_message import (
    clean_commit_message,
    statement_from_message,
)
from repogym.generators.span_split import Entangled, SpanCut, cut_at_test_spans
from repogym.schemas.records import Candidate, CandidateKind, Checkout
from repogym.toolchains.base import Toolchain

log = logging.getLogger(__name__)

GENERATOR = "mined"
MAX_CHANGED_LINES = 2000
GITHUB_TIMEOUT = 10.0
SOURCE_SUFFIXES = frozenset({".py", ".pyx", ".pxd", ".pyi", ".js", ".jsx", ".ts", ".tsx",
                             ".mjs", ".cjs", ".go", ".rs", ".c", ".h", ".cc", ".cpp", ".hpp"})
DOC_SUFFIXES = frozenset({".md", ".rst", ".txt", ".adoc"})
DOC_DIRS = frozenset({"docs", "doc", "xdocs", "newsfragments", "newsfragment", "changelog.d",
                      "changes.d", "news.d", ".changeset", "release-notes", "releasenotes"})
TOP_DOC_DIRS = frozenset({"changes", "news", "changelog", "whatsnew"})
DOC_NAMES = frozenset({"changes.xml"})  # maven-changes-plugin's release notes
DOC_STEMS = frozenset({"changelog", "changes", "history", "news", "authors", "contributors",
                       "license", "licence", "copying", "readme", "notice", "codeowners"})
CODE_SUFFIXES = SOURCE_SUFFIXES | frozenset({".java", ".kt", ".kts", ".scala", ".groovy",
                                            ".cs", ".rb", ".php", ".swift", ".m", ".sh", ".pl",
                                            ".lua"})
DATA_SUFFIXES = frozenset({".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".xml", ".csv"})
_RELEASE_NOTES = re.compile(r"^(?:CHANGELOG|CHANGES|HISTORY|NEWS)(?![A-Za-z])"
                            r"|^(?i:release[-_ .]?notes)(?![A-Za-z])")
_FRAGMENT = re.compile(
    r"^(?:\d+|\+[\w-]*|[\w-]+-\d+|gh-\d+)\.(?:feature|bugfix|bug|fix|doc|docs|removal|misc|"
    r"breaking|deprecation|security|significant|trivial|improvement|change|added|changed|fixed|"
    r"removed|deprecated|vendor|packaging|contrib|perf|internal)(?:\.\d+)?"
    r"(?:\.(?:md|rst|txt|adoc))?$", re.IGNORECASE)
INSTALL_FILES = frozenset({"pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "Pipfile",
                           "Pipfile.lock", "environment.yml", "environment.yaml",
                           "tests/requirements.txt", "test/requirements.txt",
                           "Cargo.toml", "Cargo.lock", "pom.xml"})
# the elements of a pom.xml that say what the project is, not what its build downloads
POM_DESCRIPTIVE = frozenset({"version", "name", "description", "url", "inceptionYear",
                             "organization", "licenses", "developers", "contributors",
                             "mailingLists", "scm", "issueManagement", "ciManagement",
                             "distributionManagement"})
# the parts of a Cargo.toml that decide what the install downloads and builds
CARGO_DEPENDENCY_KEYS = ("dependencies", "dev-dependencies", "build-dependencies", "target",
                         "features", "patch", "replace", "workspace")
NOT_RUNTIME = frozenset({"noxfile.py", "fabfile.py", "conftest.py"})
_DIFF_OPTS = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
              "--src-prefix=a/", "--dst-prefix=b/")


class CommitSelection(BaseModel):
    """Which commits to look at; the three limits combine (all must hold).

    Attributes:
        rev_range: a git revision or range (``"v1.0..HEAD"``); default the checkout's commit.
        since: only commits committed after this date (anything ``git log --since`` takes).
        last: at most this many commits, newest first; ``None`` for no limit.
        first_parent: walk only the main line (the default); ``False`` also walks the
            commits of merged branches.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rev_range: str | None = None
    since: str | None = None
    last: int | None = Field(default=200, gt=0)
    first_parent: bool = True


class SkipReason(str, Enum):
    """Why a commit looked at did not become a candidate (see the module docstring)."""

    root_commit = "root_commit"
    merge = "merge"
    seen = "seen"
    only_docs = "only_docs"
    no_test_change = "no_test_change"
    only_tests = "only_tests"
    no_source_change = "no_source_change"
    binary = "binary"
    too_large = "too_large"
    entangled = "entangled"


@dataclass
class MiningResult:
    """What one mining pass found.

    Attributes:
        candidates: the mined candidates, newest commit first.
        scanned: how many commits were looked at.
        skipped: reason -> number of commits skipped for it.
        skipped_commits: commit sha -> reason, for every skipped commit.
        tip: the commit the walk started from ("" when the range has several tips).
        since: only the commits after this one were walked (``None``: the whole selection).
        full_walk_reason: why an earlier pass's ``mined_up_to`` could not be used.
        complete: False when ``max_candidates`` stopped the walk before its end.
    """

    candidates: list[Candidate] = field(default_factory=list)
    scanned: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_commits: dict[str, str] = field(default_factory=dict)
    tip: str = ""
    since: str | None = None
    full_walk_reason: str | None = None
    complete: bool = True

    @property
    def mined_up_to(self) -> str | None:
        """The commit a later pass may start after (module docstring); ``None``: keep the
        earlier one, this walk did not reach the end of the selection."""
        return (self.tip or None) if self.complete else None

    def skip(self, sha: str, reason: SkipReason) -> None:
        """Record that commit ``sha`` was skipped for ``reason``."""
        self.skipped[reason.value] = self.skipped.get(reason.value, 0) + 1
        self.skipped_commits[sha] = reason.value


IssueFetcher = Callable[[str, str, int], Mapping[str, Any]]
"""``(owner, repo, number) -> issue JSON`` (GitHub's ``/issues/{n}`` shape); raises on failure."""


# ---------------------------------------------------------------- file classes


def is_install_file(path: str) -> bool:
    """True for files that decide the environment: Python's (pyproject, requirements*,
    tox...) and cargo's root ``Cargo.toml`` and ``Cargo.lock``."""
    p = PurePosixPath(path)
    if path in INSTALL_FILES:
        return True
    if len(p.parts) == 1 and p.suffix in {".txt", ".in"}:
        return p.name.startswith(("requirements", "constraints"))
    return len(p.parts) == 2 and p.parts[0] == "requirements" and p.suffix in {".txt", ".in"}


def is_doc_file(path: str) -> bool:
    """True for pure documentation: dropped from gold patches, never a reason to mine.

    ``*.md``/``*.rst``/``*.adoc`` anywhere, ``*.txt`` at the top level (deeper ones may be
    package data), anything under ``docs/``/``doc/``/``xdocs/``. Release notes and
    changelog fragments: anything under ``newsfragments/``, ``changelog.d/``,
    ``.changeset/`` (any depth), or a top-level ``changes/``, ``news/``, ``whatsnew/`` or
    Maven's ``src/changes/`` that is not source code (towncrier, scriv, changesets);
    fragment names such as ``123.bugfix`` or ``456.feature.rst``; Maven's ``changes.xml``;
    and files named like ``CHANGELOG``, ``CHANGES*``, ``HISTORY*``, ``NEWS*`` (in capitals:
    ``news_feed.html`` is a template), ``RELEASE_NOTES*``, ``LICENSE`` that are neither
    code nor data (``history.json`` is data). Install files are never docs.
    """
    if is_install_file(path):
        return False
    p = PurePosixPath(path)
    suffix = p.suffix.lower()
    dirs = [d.lower() for d in p.parts[:-1]]
    if suffix in DOC_SUFFIXES - {".txt"} or DOC_DIRS.intersection(dirs):
        return True
    if suffix == ".txt" and not dirs:
        return True
    if suffix in CODE_SUFFIXES:
        return False
    top_notes = bool(dirs) and (dirs[0] in TOP_DOC_DIRS or dirs[:2] == ["src", "changes"])
    if top_notes or _FRAGMENT.match(p.name) or p.name.lower() in DOC_NAMES:
        return True
    if suffix in DATA_SUFFIXES:
        return False
    return p.stem.lower() in DOC_STEMS or bool(_RELEASE_NOTES.match(p.name))


def is_runtime_source(path: str, toolchain: Toolchain) -> bool:
    """True for code the project runs: a source file (of the languages in
    ``SOURCE_SUFFIXES`` or the toolchain's own, ``.java``), not a test, doc, install or
    task-runner file."""
    p = PurePosixPath(path)
    suffixes = SOURCE_SUFFIXES.union(toolchain.source_suffixes)
    return (p.suffix in suffixes and p.name not in NOT_RUNTIME
            and not toolchain.is_test_file(path) and not is_doc_file(path)
            and not is_install_file(path))


# ---------------------------------------------------------------- dependencies


def dependency_fingerprint(repo_path: Path, commit: str) -> str:
    """A hash of the install-relevant files as they are at ``commit`` (read from git).

    Two commits with the same fingerprint can share one environment image. Only the
    paths :func:`is_install_file` accepts are hashed (by blob id, i.e. by content; a
    ``Cargo.toml`` by its dependency tables), so the work tree and the rest of the tree
    do not matter.

    Raises:
        SourceError: no such commit.
    """
    try:
        return _fingerprint(git.Repo(repo_path), commit)
    except (git.BadName, ValueError, git.GitCommandError,
            git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise SourceError(f"{repo_path}: no commit {commit!r}") from exc


def _fingerprint(repo: git.Repo, commit: str) -> str:
    tree = repo.commit(commit).tree
    h = hashlib.sha256()
    for path, digest in sorted(_install_blobs(tree)):
        h.update(f"{path}\0{digest}\0".encode())
    return h.hexdigest()[:16]


def _install_blobs(tree: git.Tree) -> Iterator[tuple[str, str]]:
    """(path, digest) of every install file, without walking the whole tree."""
    for blob in tree.blobs:
        if is_install_file(str(blob.path)):
            yield str(blob.path), _install_digest(blob)
    for sub in tree.trees:
        if sub.name not in {"requirements", "tests", "test"}:
            continue
        for blob in sub.blobs:
            if is_install_file(str(blob.path)):
                yield str(blob.path), _install_digest(blob)


def _install_digest(blob: git.Blob) -> str:
    """The blob's id; for a ``Cargo.toml``, a hash of its dependency tables (the whole
    blob when it is not TOML); for a ``pom.xml``, :func:`pom_digest`."""
    if blob.name == "pom.xml":
        return pom_digest(blob.data_stream.read()) or blob.hexsha
    if blob.name != "Cargo.toml":
        return blob.hexsha
    try:
        manifest = tomllib.loads(blob.data_stream.read().decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return blob.hexsha
    tables = {key: manifest.get(key) for key in CARGO_DEPENDENCY_KEYS}
    text = json.dumps(tables, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def pom_digest(data: bytes) -> str | None:
    """A hash of a POM without its :data:`POM_DESCRIPTIVE` top-level elements and comments
    (None: not XML)."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return None
    for child in list(root):
        if isinstance(child.tag, str) and child.tag.rsplit("}", 1)[-1] in POM_DESCRIPTIVE:
            root.remove(child)
    text = ET.tostring(root, encoding="unicode")
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


# ---------------------------------------------------------------- commits and diffs


@dataclass(frozen=True)
class _FileChange:
    path: str
    lines: int  # added + deleted
    binary: bool


@dataclass(frozen=True)
class _Walk:
    """The revisions to walk: the selection's, less the history an earlier pass walked."""

    revs: list[str]
    tip: str
    since: str | None = None
    full_walk_reason: str | None = None


def _plan(repo: git.Repo, checkout: Checkout, sel: CommitSelection,
          mined_up_to: str | None) -> _Walk:
    rev = sel.rev_range or checkout.commit
    try:
        tips = [t for t in repo.git.rev_parse(rev).split() if not t.startswith("^")]
    except git.GitCommandError as exc:
        raise SourceError(f"{checkout.name}: bad revision range {rev!r}") from exc
    tip = tips[0] if len(tips) == 1 else ""
    if mined_up_to is None:
        return _Walk([rev], tip)
    reason = (_not_ancestor(repo, mined_up_to, tip) if tip
              else f"the range {rev!r} has more than one tip")
    if reason is not None:
        log.warning("%s: walking the whole selection again: %s", checkout.name, reason)
        return _Walk([rev], tip, full_walk_reason=reason)
    return _Walk([rev, f"^{mined_up_to}"], tip, since=mined_up_to)


def _not_ancestor(repo: git.Repo, marker: str, tip: str) -> str | None:
    """Why the commits up to ``marker`` cannot be left out of a walk from ``tip`` (or None)."""
    try:
        repo.git.rev_parse("--verify", "--quiet", f"{marker}^{{commit}}")
    except git.GitCommandError:
        return f"the last mined commit {marker[:12]} is not in the repository"
    if not repo.is_ancestor(marker, tip):  # type: ignore[arg-type]  # shas work as well
        return (f"the last mined commit {marker[:12]} is not an ancestor of {tip[:12]} "
                "(history rewritten?)")
    return None


def _commits(repo: git.Repo, checkout: Checkout, sel: CommitSelection,
             walk: _Walk) -> Iterator[git.Commit]:
    kwargs: dict[str, Any] = {"first_parent": sel.first_parent}
    if sel.last is not None:
        kwargs["max_count"] = sel.last
    if sel.since is not None:
        kwargs["since"] = sel.since
    try:
        yield from repo.iter_commits(walk.revs, **kwargs)  # type: ignore[arg-type]  # a rev list
    except (git.GitCommandError, ValueError) as exc:
        raise SourceError(f"{checkout.name}: bad revision range {walk.revs[0]!r}") from exc


def _changes(repo: git.Repo, parent: str, sha: str) -> list[_FileChange]:
    out = repo.git.diff("--numstat", "-z", *_DIFF_OPTS, parent, sha)
    changes = []
    for entry in out.split("\0"):
        added, _, rest = entry.partition("\t")
        deleted, _, path = rest.partition("\t")
        if not path:
            continue
        binary = added == "-" or deleted == "-"
        lines = 0 if binary else int(added) + int(deleted)
        changes.append(_FileChange(path=path, lines=lines, binary=binary))
    return changes


def _diff(repo: git.Repo, parent: str, sha: str, paths: list[str]) -> str | None:
    """The text diff of ``paths``; ``None`` when it is not UTF-8."""
    if not paths:
        return ""
    raw = repo.git.diff(*_DIFF_OPTS, parent, sha, "--", *(f":(literal){p}" for p in paths),
                        stdout_as_string=False, strip_newline_in_stdout=False)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True)
class _Split:
    """A commit's changed files sorted into the classes the selection rules use. A file in
    ``cuts`` (a source file whose test code changed) is in ``tests``, and in ``gold`` too
    when the rest of it changed."""

    tests: list[_FileChange]
    gold: list[_FileChange]  # non-test, non-doc
    docs: list[_FileChange]
    has_source: bool
    cuts: dict[str, SpanCut] = field(default_factory=dict)


def _split(changes: list[_FileChange], toolchain: Toolchain,
           cuts: Mapping[str, SpanCut] | None = None) -> _Split:
    cuts = dict(cuts or {})
    tests = [c for c in changes if toolchain.is_test_file(c.path) or c.path in cuts]
    rest = [c for c in changes if not toolchain.is_test_file(c.path)
            and (c.path not in cuts or cuts[c.path].gold_patch)]
    docs = [c for c in rest if is_doc_file(c.path)]
    gold = [c for c in rest if not is_doc_file(c.path)]
    has_source = any(is_runtime_source(c.path, toolchain) for c in gold)
    return _Split(tests=tests, gold=gold, docs=docs, has_source=has_source, cuts=cuts)


def _cuts(repo: git.Repo, parent: str, sha: str, changes: list[_FileChange],
          toolchain: Toolchain) -> dict[str, SpanCut] | SkipReason:
    """The source files whose test code the commit changed, cut at it (module docstring);
    ``entangled`` when one cannot be cut; none for a toolchain without unit tests in
    source files."""
    if not toolchain.unit_tests_in_sources:
        return {}
    out: dict[str, SpanCut] = {}
    for change in changes:
        path = change.path
        if (change.binary or toolchain.is_test_file(path) or is_doc_file(path)
                or PurePosixPath(path).suffix not in toolchain.source_suffixes):
            continue
        cut = cut_at_test_spans(toolchain, path, _blob_text(repo, parent, path),
                                _blob_text(repo, sha, path))
        if isinstance(cut, Entangled):
            log.debug("%s: %s: %s", sha[:12], path, cut.value)
            return SkipReason.entangled
        if cut.test_patch:
            out[path] = cut
    return out


def _blob_text(repo: git.Repo, sha: str, path: str) -> str | None:
    """The text of ``path`` at commit ``sha`` (None: no such file; undecodable bytes
    replaced)."""
    try:
        blob = repo.commit(sha).tree / path
    except KeyError:
        return None
    return bytes(blob.data_stream.read()).decode("utf-8", errors="replace")


def _content_skip(split: _Split, max_lines: int) -> SkipReason | None:
    if not split.tests and not split.gold:
        return SkipReason.only_docs
    if not split.tests:
        return SkipReason.no_test_change
    if not split.gold and not split.docs:
        return SkipReason.only_tests
    if not split.has_source:
        return SkipReason.no_source_change
    kept = list({c.path: c for c in [*split.tests, *split.gold]}.values())
    if any(c.binary for c in kept):
        return SkipReason.binary
    if sum(c.lines for c in kept) > max_lines:
        return SkipReason.too_large
    return None


def _structural_skip(commit: git.Commit, seen: Collection[str],
                     first_parent: bool) -> SkipReason | None:
    if not commit.parents:
        return SkipReason.root_commit
    if len(commit.parents) > 1 and not first_parent:
        return SkipReason.merge
    if commit.hexsha in seen:
        return SkipReason.seen
    return None


# ---------------------------------------------------------------- GitHub statements


def github_repo(source: str) -> tuple[str, str] | None:
    """``(owner, repo)`` for a github.com URL (https, ssh or scp-style), else ``None``."""
    m = re.match(r"^(?:(?:https?|ssh|git)://(?:[^@/]+@)?|[^@/]+@)github\.com[:/]+"
                 r"([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", source.strip())
    return (m.group(1), m.group(2)) if m else None


_CLOSING_REF = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#(\d+)\b", re.I)
_ANY_REF = re.compile(r"(?<![\w/&#])#(\d+)\b")


def issue_references(message: str) -> list[int]:
    """Issue/PR numbers a commit message references: closing keywords first, then any ``#N``."""
    refs = [int(n) for n in _CLOSING_REF.findall(message)]
    refs += [int(n) for n in _ANY_REF.findall(message)]
    return list(dict.fromkeys(refs))


def fetch_github_issue(owner: str, repo: str, number: int, *, token: str,
                       timeout: float = GITHUB_TIMEOUT) -> Mapping[str, Any]:
    """GET ``/repos/{owner}/{repo}/issues/{number}`` from the GitHub API (issues and PRs).

    Raises:
        OSError: the request failed (``urllib.error.URLError``/``HTTPError``, timeouts).
        ValueError: the answer is not a JSON object.
    """
    req = urllib.request.Request(
        f"https://api.github.com/repos/{owner}/{repo}/issues/{number}",
        headers={"Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}",
                 "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "repogym"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - fixed https URL
        data = json.loads(resp.read().decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("GitHub answered with something other than an object")
    return data


class _GitHubStatements:
    """Looks statements up for one mining pass: caches answers, and stops after the network fails."""

    def __init__(self, owner: str, repo: str, fetch: IssueFetcher) -> None:
        self.owner, self.repo, self.fetch = owner, repo, fetch
        self.cache: dict[int, Mapping[str, Any] | None] = {}
        self.offline = False

    def _get(self, number: int) -> Mapping[str, Any] | None:
        if number not in self.cache and not self.offline:
            try:
                self.cache[number] = self.fetch(self.owner, self.repo, number)
            except urllib.error.HTTPError:
                self.cache[number] = None  # that number only (404, rate limit...)
            except OSError:
                self.offline = True  # no network: do not wait on every commit
            except Exception:  # noqa: BLE001 - any other failure falls back to the message
                self.cache[number] = None
        return self.cache.get(number)

    def find(self, message: str) -> tuple[str, str] | None:
        """``(statement, source)`` from the first referenced issue/PR with a body."""
        for number in issue_references(message)[:3]:
            item = self._get(number)
            if item is None:
                continue
            is_pr = "pull_request" in item
            if is_pr:  # a PR that closes an issue: the issue states the problem better
                issue = self._closed_issue(item)
                if issue is not None:
                    return issue, "github_issue"
            found = _statement_of(item)
            if found:
                return found, "github_pr" if is_pr else "github_issue"
        return None

    def _closed_issue(self, pr: Mapping[str, Any]) -> str | None:
        refs = _CLOSING_REF.findall(str(pr.get("body") or ""))
        issue = self._get(int(refs[0])) if refs else None
        if issue is None or "pull_request" in issue:
            return None
        return _statement_of(issue)


def _statement_of(item: Mapping[str, Any] | None) -> str | None:
    if not item:
        return None
    body = str(item.get("body") or "").strip()
    if not body:
        return None
    title = str(item.get("title") or "").strip()
    return f"{title}\n\n{body}" if title else body


def _token_fetcher(token: str) -> IssueFetcher:
    def fetch(owner: str, repo: str, number: int) -> Mapping[str, Any]:
        return fetch_github_issue(owner, repo, number, token=token)

    return fetch


def statements_from_github(checkout: Checkout) -> bool:
    """Whether mining this checkout asks GitHub for statements (a github.com source and
    ``GITHUB_TOKEN`` set): its candidates then depend on a service, not on git alone."""
    return _github_lookup(checkout, None) is not None


def _github_lookup(checkout: Checkout, fetch: IssueFetcher | None) -> _GitHubStatements | None:
    slug = github_repo(checkout.spec.source)
    if slug is None:
        return None
    if fetch is None:
        token = os.environ.get("GITHUB_TOKEN", "").strip()
        if not token:
            return None
        fetch = _token_fetcher(token)
    return _GitHubStatements(slug[0], slug[1], fetch)


# ---------------------------------------------------------------- mining


@dataclass
class _Context:
    repo: git.Repo
    checkout: Checkout
    toolchain: Toolchain
    github: _GitHubStatements | None
    max_lines: int
    first_parent: bool = True
    deps_cache: dict[str, str] = field(default_factory=dict)

    def deps(self, sha: str) -> str:
        if sha not in self.deps_cache:
            self.deps_cache[sha] = _fingerprint(self.repo, sha)
        return self.deps_cache[sha]


def mine_candidates(checkout: Checkout, toolchain: Toolchain, selection: CommitSelection, *,
                    seen_commits: Collection[str] = frozenset(),
                    max_candidates: int | None = None,
                    fetch_issue: IssueFetcher | None = None,
                    max_changed_lines: int = MAX_CHANGED_LINES,
                    mined_up_to: str | None = None) -> MiningResult:
    """Turn the fixes in the checkout's history into candidates (rules: module docstring).

    Args:
        checkout: the repository; its history is read through git, the work tree is unused.
        toolchain: says which files are tests.
        selection: which commits to look at.
        seen_commits: shas judged by earlier runs; skipped (reason ``seen``).
        max_candidates: stop once this many candidates are found.
        fetch_issue: GitHub issue fetcher for statements; default: the GitHub API when
            ``GITHUB_TOKEN`` is set and the source is on github.com, else none.
        max_changed_lines: skip commits whose kept files change more lines (``too_large``).
        mined_up_to: the tip of an earlier complete pass (its ``mined_up_to``): when it is
            an ancestor of this walk's tip, only the commits after it are walked.

    Returns:
        The candidates (newest commit first), how many commits were scanned, why each of
        the others was skipped, and what was walked (tip, since, complete).

    Raises:
        SourceError: the checkout is not a git repository or the range is not valid.
    """
    try:
        repo = git.Repo(checkout.path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise SourceError(f"{checkout.path}: not a git repository") from exc
    ctx = _Context(repo, checkout, toolchain, _github_lookup(checkout, fetch_issue),
                   max_changed_lines, selection.first_parent)
    walk = _plan(repo, checkout, selection, mined_up_to)
    result = MiningResult(tip=walk.tip, since=walk.since, full_walk_reason=walk.full_walk_reason)
    for commit in _commits(repo, checkout, selection, walk):
        if max_candidates is not None and len(result.candidates) >= max_candidates:
            result.complete = False
            break
        result.scanned += 1
        outcome = _mine_commit(ctx, commit, seen_commits)
        if isinstance(outcome, SkipReason):
            result.skip(commit.hexsha, outcome)
        else:
            result.candidates.append(outcome)
    return result


def _mine_commit(ctx: _Context, commit: git.Commit,
                 seen: Collection[str]) -> Candidate | SkipReason:
    reason = _structural_skip(commit, seen, ctx.first_parent)
    if reason is not None:
        return reason
    parent = commit.parents[0].hexsha
    changes = _changes(ctx.repo, parent, commit.hexsha)
    cuts = _cuts(ctx.repo, parent, commit.hexsha, changes, ctx.toolchain)
    if isinstance(cuts, SkipReason):
        return cuts
    split = _split(changes, ctx.toolchain, cuts)
    reason = _content_skip(split, ctx.max_lines)
    if reason is not None:
        return reason
    gold = _diff(ctx.repo, parent, commit.hexsha,
                 [c.path for c in split.gold if c.path not in cuts])
    tests = _diff(ctx.repo, parent, commit.hexsha,
                  [c.path for c in split.tests if c.path not in cuts])
    if gold is None or tests is None:
        return SkipReason.binary
    gold += "".join(cuts[p].gold_patch for p in sorted(cuts))
    tests += "".join(cuts[p].test_patch for p in sorted(cuts))
    return _candidate(ctx, commit, parent, split, gold, tests)


def _candidate(ctx: _Context, commit: git.Commit, parent: str, split: _Split,
               gold: str, tests: str) -> Candidate:
    message = _text(commit.message).strip()
    found = ctx.github.find(message) if ctx.github is not None else None
    provenance = {
        "commit": commit.hexsha,
        "author_date": commit.authored_datetime.isoformat(),
        "subject": message.splitlines()[0] if message else "",
        "statement_source": found[1] if found else "commit_message",
        "deps": ctx.deps(parent),
        "deps_changed": str(any(is_install_file(c.path) for c in split.gold)
                            and ctx.deps(commit.hexsha) != ctx.deps(parent)).lower(),
    }
    if found is not None:
        statement = found[0]
    else:
        cleaned = clean_commit_message(message, gold, test_patch=tests)
        statement = statement_from_message(cleaned)
        provenance["statement_dropped"] = ",".join(r.value for r in cleaned.reasons)
    return Candidate(kind=CandidateKind.mined, repo=ctx.checkout.name,
                     language=ctx.toolchain.language, base_commit=parent,
                     bug_patch="", gold_patch=gold, test_patch=tests, statement=statement,
                     generator=GENERATOR, mutator="",
                     files=tuple(c.path for c in split.gold), provenance=provenance)


def _text(message: str | bytes) -> str:
    return message.decode("utf-8", errors="replace") if isinstance(message, bytes) else message
