"""Mining fixes from git history, on a realistic history (tests/histories.py)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from repogym.errors import SourceError
from repogym.generators.diffs import changed_lines
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
    expected = {history.initial_commit: "root_commit", history.merge_commit: "merge",
                history.dep_change_commit: "no_test_change",
                **{s: "no_test_change" for s in history.refactor_commits},
                **{s: "only_docs" for s in history.doc_commits},
                **{s: "only_tests" for s in history.test_only_commits}}
    assert default_result.skipped_commits == expected
    assert default_result.skipped == {"root_commit": 1, "merge": 1, "no_test_change": 3,
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
])
def test_file_classes(path: str, install: bool, doc: bool) -> None:
    assert (is_install_file(path), is_doc_file(path)) == (install, doc)


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
