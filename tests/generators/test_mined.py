"""Mining fixes from git history, on a realistic history (tests/histories.py)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from repogym.errors import SourceError
from repogym.generators.leaks import LeakKind, statement_leaks
from repogym.generators.mined import (
    CommitSelection,
    MiningResult,
    dependency_fingerprint,
    github_repo,
    is_doc_file,
    is_install_file,
    issue_references,
    mine_candidates,
)
from repogym.patches import changed_lines
from repogym.schemas.records import Candidate, CandidateKind, Checkout, RepoSpec
from repogym.toolchains.python import PythonToolchain
from tests.conftest import git
from tests.histories import History, build_realistic_history

TC = PythonToolchain()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    return build_realistic_history(tmp_path_factory.mktemp("hist") / "shopcart")


def checkout_of(h: History, source: str | None = None) -> Checkout:
    return Checkout(spec=RepoSpec(source=source or str(h.root)), name="acme__shopcart",
                    path=h.root, commit=h.head)


def mine(h: History, selection: CommitSelection | None = None, **kwargs: Any) -> MiningResult:
    return mine_candidates(checkout_of(h, kwargs.pop("source", None)), TC,
                           selection or CommitSelection(), **kwargs)


def mined_commits(result: MiningResult) -> list[str]:
    return [c.provenance["commit"] for c in result.candidates]


def patch_files(patch: str) -> set[str]:
    return set(changed_lines(patch))


@pytest.fixture(scope="module")
def default_result(history: History) -> MiningResult:
    return mine(history)


# ---------------------------------------------------------------- which commits


def test_exactly_the_fix_commits_are_mined(history: History, default_result: MiningResult) -> None:
    assert mined_commits(default_result) == list(reversed(history.fix_commits))
    assert default_result.scanned == len(history.first_parent_line) == 13
    # on the main line a merge is the change it brings: here a refactor, no test changed
    expected = {history.initial_commit: "root_commit", history.merge_commit: "no_test_change",
                history.dep_change_commit: "no_test_change",
                **{s: "no_test_change" for s in history.refactor_commits},
                **{s: "only_docs" for s in history.doc_commits},
                **{s: "only_tests" for s in history.test_only_commits}}
    assert default_result.skipped_commits == expected
    assert default_result.skipped == {"root_commit": 1, "no_test_change": 4,
                                      "only_docs": 2, "only_tests": 1}


def test_merged_branches_are_walked_only_when_asked(history: History) -> None:
    result = mine(history, CommitSelection(first_parent=False))
    assert result.scanned == 14
    assert result.skipped_commits[history.branch_commits[0]] == "no_test_change"
    assert sorted(mined_commits(result)) == sorted(history.fix_commits)


def test_candidate_fields(history: History, default_result: MiningResult) -> None:
    first_fix = default_result.candidates[-1]
    assert first_fix.kind is CandidateKind.mined
    assert first_fix.base_commit == history.initial_commit
    assert first_fix.bug_patch == "" and first_fix.generator == "mined" and first_fix.mutator == ""
    assert first_fix.repo == "acme__shopcart"
    assert first_fix.files == ("shopcart/pricing.py",)
    assert first_fix.statement == ("Fix off-by-one in the bulk discount threshold\n\n"
                                   "Buying exactly BULK_THRESHOLD items did not give the bulk "
                                   "discount.")
    prov = first_fix.provenance
    assert prov["commit"] == history.fix_commits[0]
    assert prov["subject"] == "Fix off-by-one in the bulk discount threshold"
    assert prov["author_date"] == "2024-01-02T12:00:00+00:00"
    assert prov["statement_source"] == "commit_message"
    assert prov["statement_dropped"] == ""  # a clean message: nothing to drop
    assert prov["deps_changed"] == "false"


def test_patches_split_tests_from_gold_and_drop_docs(default_result: MiningResult) -> None:
    for cand in default_result.candidates:
        gold, tests = patch_files(cand.gold_patch), patch_files(cand.test_patch)
        assert gold and tests
        assert not any(TC.is_test_file(p) for p in gold)
        assert all(TC.is_test_file(p) for p in tests)
        assert set(cand.files) == gold
    first_fix = default_result.candidates[-1]  # its commit also edits CHANGELOG.md
    assert "CHANGELOG" not in first_fix.gold_patch + first_fix.test_patch


def test_ids_are_stable_across_runs(history: History, default_result: MiningResult) -> None:
    again = mine(history)
    assert [c.instance_id for c in again.candidates] == \
        [c.instance_id for c in default_result.candidates]
    assert len({c.instance_id for c in again.candidates}) == 5


# ---------------------------------------------------------------- selection


def test_last_limits_the_commits_scanned(history: History) -> None:
    result = mine(history, CommitSelection(last=3))
    assert result.scanned == 3
    assert mined_commits(result) == [history.fix_commits[-1]]


def test_since_keeps_later_commits(history: History) -> None:
    day = history.dates[history.fix_commits[2]][:10]  # the quantity fix
    result = mine(history, CommitSelection(since=f"{day}T00:00:00+00:00"))
    assert mined_commits(result) == list(reversed(history.fix_commits[2:]))


def test_rev_range(history: History) -> None:
    result = mine(history, CommitSelection(rev_range=f"{history.tag}..HEAD", last=None))
    assert mined_commits(result) == list(reversed(history.fix_commits[2:]))
    assert result.scanned == 6


def test_bad_rev_range_is_a_source_error(history: History) -> None:
    with pytest.raises(SourceError, match="bad revision range"):
        mine(history, CommitSelection(rev_range="no-such-tag..HEAD"))


def test_seen_commits_are_skipped(history: History) -> None:
    seen = set(history.fix_commits[:2])
    result = mine(history, seen_commits=seen)
    assert mined_commits(result) == list(reversed(history.fix_commits[2:]))
    assert result.skipped["seen"] == 2


def test_max_candidates_stops_early(history: History) -> None:
    result = mine(history, max_candidates=2)
    assert mined_commits(result) == list(reversed(history.fix_commits[-2:]))
    assert result.scanned == 4  # fix, refactor, docs, fix


def test_selection_validates() -> None:
    with pytest.raises(ValueError):
        CommitSelection(last=0)
    assert CommitSelection().last == 200


# ---------------------------------------------------------------- dependencies


def test_dependency_fingerprint_changes_only_with_the_dependencies(history: History) -> None:
    line = list(reversed(history.first_parent_line))  # oldest first
    fps = [dependency_fingerprint(history.root, sha) for sha in line]
    cut = line.index(history.dep_change_commit)
    assert len(set(fps[:cut])) == 1 and len(set(fps[cut:])) == 1
    assert fps[cut - 1] != fps[cut]


def test_candidates_record_their_parents_fingerprint(history: History,
                                                     default_result: MiningResult) -> None:
    before = dependency_fingerprint(history.root, history.initial_commit)
    after = dependency_fingerprint(history.root, history.head)
    deps = {c.provenance["commit"]: c.provenance["deps"] for c in default_result.candidates}
    assert [deps[s] for s in history.fix_commits] == [before, before, after, after, after]


def test_fingerprint_of_unknown_commit_is_a_source_error(history: History) -> None:
    with pytest.raises(SourceError):
        dependency_fingerprint(history.root, "0" * 40)


@pytest.mark.parametrize("path, install, doc", [
    ("pyproject.toml", True, False), ("requirements-dev.txt", True, False),
    ("requirements/test.txt", True, False), ("tests/requirements.txt", True, False),
    ("setup.py", True, False), ("README.md", False, True), ("docs/conf.py", False, True),
    ("CHANGELOG", False, True), ("notes.txt", False, True), ("pkg/mod.py", False, False),
    ("pkg/requirements.txt", False, False), ("pkg/data/words.txt", False, False),
    ("pkg/history.py", False, False), ("LICENSE", False, True), ("HISTORY.rst", False, True),
    ("pom.xml", True, False), ("Cargo.toml", True, False),
])
def test_file_classes(path: str, install: bool, doc: bool) -> None:
    assert (is_install_file(path), is_doc_file(path)) == (install, doc)


@pytest.mark.parametrize("path", [
    "newsfragments/1234.bugfix", "newsfragments/1234.feature.rst", "changelog.d/fix-parser.md",
    "src/pkg/changelog.d/20240102_scriv.rst", "changes/456.feature", "changes/456.bugfix.md",
    ".changeset/funny-cats-dance.md", ".changeset/config.json", "news/789.misc",
    "NEWS.d/next/Library/2024-01-01.gh-issue-1.rst", "whatsnew/v2.txt", "docs/whatsnew/2.0.rst",
    "123.bugfix", "+orphan.misc", "CHANGES", "CHANGES.txt", "CHANGES-1.x", "HISTORY",
    "HISTORY.txt", "NEWS", "NEWS.txt", "RELEASE_NOTES", "RELEASE-NOTES.txt", "ReleaseNotes",
    "release-notes.html", "pkg/CHANGELOG", "pkg/CHANGES.rst",
    # apache+commons-cli: maven-changes-plugin files and Maven 1 docs
    "src/changes/changes.xml", "src/changes/release-notes.vm", "xdocs/changes.xml",
])
def test_release_notes_and_changelog_fragments_are_docs(path: str) -> None:
    assert is_doc_file(path)


@pytest.mark.parametrize("path", [
    "pkg/changes.py", "src/app/changes/models.py", "changes/__init__.py", "src/news/feed.py",
    "src/main/java/org/acme/History.java", "lib/changes.rb", "pkg/data/history.json",
    "pkg/changes/schema.json", "pkg/news/items.yaml", "newsletter.html", "pyproject.toml",
    "setup.cfg", "tox.ini", ".github/workflows/ci.yml", "Makefile", "Cargo.toml", "go.mod",
    "package.json", "pkg/bugfix.py", "src/123.feature.py", "templates/news_feed.html",
    "static/NEWSLETTER.html", "pkg/historyview.txt",
])
def test_code_and_config_named_like_release_notes_stay_in_gold(path: str) -> None:
    assert not is_doc_file(path)


# ---------------------------------------------------------------- re-checked independently


def export(repo: Path, commit: str, dest: Path) -> None:
    tar = subprocess.run(["git", "archive", "--format=tar", commit], cwd=repo,
                         check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(dest, filter="data")


def apply(dest: Path, patch: str) -> None:
    subprocess.run(["git", "apply", "-"], input=patch, cwd=dest, check=True, text=True,
                   capture_output=True)


def run_tests(dest: Path, files: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(dest), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *files], cwd=dest, env=env, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("index", range(5))
def test_each_fix_fails_at_its_parent_and_passes_with_gold(
        history: History, default_result: MiningResult, tmp_path: Path, index: int) -> None:
    cand = next(c for c in default_result.candidates
                if c.provenance["commit"] == history.fix_commits[index])
    export(history.root, cand.base_commit, tmp_path)
    apply(tmp_path, cand.test_patch)
    files = sorted(p for p in patch_files(cand.test_patch) if Path(p).name.startswith("test_"))
    broken = run_tests(tmp_path, files)
    assert broken.returncode == 1 and " failed" in broken.stdout, broken.stdout
    apply(tmp_path, cand.gold_patch)
    fixed = run_tests(tmp_path, files)
    assert fixed.returncode == 0, fixed.stdout


# ---------------------------------------------------------------- GitHub statements

GITHUB = "https://github.com/acme/shopcart.git"
ISSUE_12 = {"title": "Cart accepts negative quantities",
            "body": "Adding -1 pens makes the total negative."}


def quantity_fix(result: MiningResult, history: History) -> Candidate:
    return next(c for c in result.candidates if c.provenance["commit"] == history.fix_commits[2])


def fetcher(answers: Mapping[int, Any], calls: list[int]) -> Callable[..., Mapping[str, Any]]:
    def fetch(owner: str, repo: str, number: int) -> Mapping[str, Any]:
        assert (owner, repo) == ("acme", "shopcart")
        calls.append(number)
        answer = answers[number]
        if isinstance(answer, BaseException):
            raise answer
        return answer
    return fetch


def test_github_issue_becomes_the_statement(history: History) -> None:
    calls: list[int] = []
    result = mine(history, source=GITHUB, fetch_issue=fetcher({12: ISSUE_12}, calls))
    cand = quantity_fix(result, history)
    assert cand.statement == ("Cart accepts negative quantities\n\n"
                              "Adding -1 pens makes the total negative.")
    assert cand.provenance["statement_source"] == "github_issue"
    assert "statement_dropped" not in cand.provenance  # an issue body is not cleaned
    assert calls == [12]  # the other commits reference nothing
    others = [c for c in result.candidates if c is not cand]
    assert {c.provenance["statement_source"] for c in others} == {"commit_message"}


def test_pull_request_closing_an_issue_prefers_the_issue(history: History) -> None:
    pr = {"title": "Validate quantity", "body": "Fixes #7", "pull_request": {}}
    result = mine(history, source=GITHUB, fetch_issue=fetcher({12: pr, 7: ISSUE_12}, []))
    assert quantity_fix(result, history).provenance["statement_source"] == "github_issue"
    result = mine(history, source=GITHUB,
                  fetch_issue=fetcher({12: {**pr, "body": "Checks quantities."}}, []))
    cand = quantity_fix(result, history)
    assert cand.provenance["statement_source"] == "github_pr"
    assert cand.statement == "Validate quantity\n\nChecks quantities."


@pytest.mark.parametrize("answer", [RuntimeError("boom"), {"title": "empty", "body": None},
                                    urllib.error.URLError("no network")])
def test_fetch_failure_falls_back_to_the_commit_message(history: History, answer: Any) -> None:
    result = mine(history, source=GITHUB, fetch_issue=fetcher({12: answer}, []))
    cand = quantity_fix(result, history)
    assert cand.statement.startswith("Cart.add: reject zero and negative quantities")
    assert cand.provenance["statement_source"] == "commit_message"


def test_no_lookup_without_token_or_github(history: History,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    calls: list[str] = []
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: calls.append("x"))
    mine(history, source=GITHUB)
    boom = fetcher({12: AssertionError("must not be called")}, [])
    result = mine(history, fetch_issue=boom)  # a local source: never GitHub
    assert calls == [] and quantity_fix(result, history).provenance["statement_source"] == \
        "commit_message"


def test_token_uses_the_api_and_survives_no_network(history: History,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
    requests: list[urllib.request.Request] = []

    def offline(req: urllib.request.Request, timeout: float) -> None:
        requests.append(req)
        raise urllib.error.URLError("Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    result = mine(history, source=GITHUB)
    assert quantity_fix(result, history).provenance["statement_source"] == "commit_message"
    assert [r.full_url for r in requests] == ["https://api.github.com/repos/acme/shopcart/issues/12"]
    assert requests[0].get_header("Authorization") == "Bearer t0ken"


@pytest.mark.parametrize("source, slug", [
    ("https://github.com/acme/shopcart", ("acme", "shopcart")),
    ("https://github.com/acme/shop.cart.git", ("acme", "shop.cart")),
    ("git@github.com:acme/shopcart.git", ("acme", "shopcart")),
    ("ssh://git@github.com/acme/shopcart", ("acme", "shopcart")),
    ("https://gitlab.com/acme/shopcart", None), ("/srv/shopcart", None),
])
def test_github_repo(source: str, slug: tuple[str, str] | None) -> None:
    assert github_repo(source) == slug


def test_issue_references() -> None:
    assert issue_references("Fix totals (#34)\n\nCloses #12, see #34 and a&#39;b") == [12, 34]
    assert issue_references("Nothing here; color #fff is not an issue") == []


# ---------------------------------------------------------------- the other skip reasons


def test_other_skip_reasons_and_dependency_fixes(make_git_repo: Callable[..., Path]) -> None:
    root = make_git_repo({"pkg/__init__.py": "", "pkg/mod.py": "X = 1\n",
                          "tests/test_mod.py": "def test_x():\n    pass\n",
                          "requirements.txt": "six\n"}, name="edge")
    shas: dict[str, str] = {}

    def commit(name: str, files: dict[str, str | bytes]) -> None:
        for rel, data in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data if isinstance(data, bytes) else data.encode())
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", name)
        shas[name] = git(root, "rev-parse", "HEAD")

    commit("config and tests", {"setup.cfg": "[metadata]\n", "tests/test_mod.py": "# a\n"})
    commit("binary test data", {"pkg/mod.py": "X = 2\n", "tests/data.bin": b"\0\1\2\xff"})
    commit("big", {"pkg/mod.py": "X = 3\n" * 40, "tests/test_mod.py": "# b\n" * 20})
    commit("fix with deps", {"pkg/mod.py": "X = 3\n" * 40 + "import six\n",
                             "requirements.txt": "six>=1.16\n",
                             "tests/test_mod.py": "# b\n" * 20 + "# c\n",
                             "docs/conf.py": "# d\n"})
    co = Checkout(spec=RepoSpec(source=str(root)), name="edge", path=root,
                  commit=shas["fix with deps"])
    result = mine_candidates(co, TC, CommitSelection(), max_changed_lines=50)
    assert result.skipped_commits == {
        shas["config and tests"]: "no_source_change", shas["binary test data"]: "binary",
        shas["big"]: "too_large", git(root, "rev-parse", "HEAD~4"): "root_commit"}
    (cand,) = result.candidates
    assert cand.files == ("pkg/mod.py", "requirements.txt")  # docs/conf.py dropped
    assert cand.provenance["deps_changed"] == "true"
    assert cand.provenance["deps"] == dependency_fingerprint(root, shas["big"])


# ---------------------------------------------------------------- release notes, statements


def test_release_notes_leave_the_gold_patch_and_the_message_is_cleaned(
        make_git_repo: Callable[..., Path]) -> None:
    root = make_git_repo({"pkg/__init__.py": "", "pkg/cart.py": "def total(xs):\n    return 0\n",
                          "tests/test_cart.py": "def test_x():\n    pass\n",
                          "setup.cfg": "[metadata]\nname = pkg\n"}, name="notes")
    files = {"pkg/cart.py": "def total(xs):\n    return _sum_lines(xs)\n\n\n"
                            "def _sum_lines(xs):\n    return sum(xs)\n",
             "tests/test_cart.py": "from pkg.cart import total\n\n\ndef test_total():\n"
                                   "    assert total([1, 2]) == 3\n",
             "setup.cfg": "[metadata]\nname = pkg\nversion = 2\n",
             "newsfragments/12.bugfix": "total() is right again.\n",
             "changelog.d/20240101_total.md": "- Fixed `total`.\n",
             "CHANGES": "2.0: total fixed\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    message = ("fix(cart): total() returns 0 for any cart (#12)\n\n"
               "Summing [1, 2] gives 0 when it should give 3.\n\n"
               "Fix by delegating to _sum_lines.\n\n"
               "Signed-off-by: A Dev <dev@example.com>\nChange-Id: I0123456789abcdef\n")
    git(root, "commit", "-q", "-m", message)
    co = Checkout(spec=RepoSpec(source=str(root)), name="notes", path=root,
                  commit=git(root, "rev-parse", "HEAD"))
    (cand,) = mine_candidates(co, TC, CommitSelection()).candidates
    assert cand.files == ("pkg/cart.py", "setup.cfg")  # code and config stay, notes go
    assert patch_files(cand.gold_patch) == {"pkg/cart.py", "setup.cfg"}
    assert cand.statement == "cart: total() returns 0 for any cart\n\n" \
                             "Summing [1, 2] gives 0 when it should give 3."
    assert cand.provenance["subject"] == "fix(cart): total() returns 0 for any cart (#12)"
    assert cand.provenance["statement_source"] == "commit_message"
    assert cand.provenance["statement_dropped"] == "trailer,issue_reference,commit_type,approach"


def test_a_message_that_is_all_solution_leaves_the_statement_to_the_pipeline(
        make_git_repo: Callable[..., Path]) -> None:
    """An empty statement: the pipeline writes one from the failing tests (pipeline.py)."""
    root = make_git_repo({"pkg/__init__.py": "", "pkg/m.py": "def f():\n    return 1\n",
                          "tests/test_m.py": "def test_x():\n    pass\n"}, name="allfix")
    (root / "pkg/m.py").write_text("def f():\n    return _two()\n\n\ndef _two():\n    return 2\n")
    (root / "tests/test_m.py").write_text("from pkg.m import f\n\n\ndef test_f():\n"
                                          "    assert f() == 2\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Refactor f to call _two")
    co = Checkout(spec=RepoSpec(source=str(root)), name="allfix", path=root,
                  commit=git(root, "rev-parse", "HEAD"))
    (cand,) = mine_candidates(co, TC, CommitSelection()).candidates
    assert cand.statement == ""
    assert cand.provenance["statement_dropped"] == "approach"


class _TopLevelTestModules(PythonToolchain):
    """The Python toolchain, also counting the top-level ``test.py``/``tests.py`` that
    python-slugify and early markupsafe keep their tests in (the toolchain does not)."""

    def is_test_file(self, path: str) -> bool:
        return path in {"test.py", "tests.py"} or super().is_test_file(path)


BUNDLES = Path(__file__).resolve().parents[3] / "shared" / "repos"
TRAILER_LINE = re.compile(r"^\s*(?:[\w-]+-by|change-id|reviewed-on|git-svn-id|cherry-picked-from)"
                          r"\s*:|^\s*\(cherry picked from commit|\[(?:skip ci|ci skip)\]",
                          re.IGNORECASE | re.MULTILINE)


@pytest.mark.slow
@pytest.mark.parametrize("bundle, at_least", [("pallets+markupsafe", 20),
                                              ("pytest-dev+iniconfig", 30),
                                              ("un33k+python-slugify", 30)])
def test_real_histories_give_statements_without_trailers_or_leaks(
        tmp_path: Path, bundle: str, at_least: int) -> None:
    source = BUNDLES / f"{bundle}.bundle"
    if not source.exists():
        pytest.fail(f"{source} is missing: the real-repository bundles are part of shared/")
    root = tmp_path / bundle
    subprocess.run(["git", "clone", "-q", str(source), str(root)], check=True,
                   capture_output=True)
    co = Checkout(spec=RepoSpec(source=str(root)), name=bundle, path=root,
                  commit=git(root, "rev-parse", "HEAD"))
    result = mine_candidates(co, _TopLevelTestModules(),
                             CommitSelection(last=None, first_parent=False))
    assert len(result.candidates) >= at_least
    for cand in result.candidates:
        assert not TRAILER_LINE.search(cand.statement), cand.statement
        leaks = statement_leaks(cand.statement, cand.gold_patch, cand.test_patch)
        bad = [leak for leak in leaks if leak.kind in (LeakKind.verbatim_line, LeakKind.approach)]
        assert not bad, (cand.provenance["commit"], cand.statement, bad)
        assert "statement_dropped" in cand.provenance


POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <parent>
    <groupId>org.apache.commons</groupId>
    <artifactId>commons-parent</artifactId>
    <version>{parent}</version>
  </parent>
  <artifactId>commons-codec</artifactId>
  <version>{version}</version>
  <name>Apache Commons Codec</name>
  <description>{description}</description>
  <dependencies>
    <dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter</artifactId>
      <scope>test</scope></dependency>
  </dependencies>
</project>
"""


def test_a_pom_counts_by_what_its_build_downloads() -> None:
    """commons-codec's older fixes failed in the checkout's environment (Maven offline, an
    older commons-parent missing): the POM is an install file, but its own version and
    description do not ask for an environment of their own."""
    from repogym.generators.mined import pom_digest

    def digest(parent: str = "79", version: str = "1.18.0-SNAPSHOT",
               description: str = "Codecs") -> str | None:
        return pom_digest(POM.format(parent=parent, version=version,
                                     description=description).encode())

    assert digest() == digest(version="1.18.1-SNAPSHOT", description="Encoders, decoders")
    assert digest() != digest(parent="78")
    assert pom_digest(b"<project") is None  # not XML: the blob's id is used
