"""Cloning: local paths and URLs, pinned commits, one-line errors for bad sources."""

import pytest

from repogym.errors import SourceError
from repogym.repos import clone, repo_name
from repogym.schemas.records import RepoSpec
from tests.conftest import git


def test_clone_local_repo_at_head_and_at_commit(make_git_repo, tmp_path):
    src = make_git_repo({"a.py": "x = 1\n"})
    first = git(src, "rev-parse", "HEAD")
    (src / "a.py").write_text("x = 2\n")
    git(src, "commit", "-qam", "two")
    head = clone(RepoSpec(source=str(src)), tmp_path / "cache")
    assert head.commit == git(src, "rev-parse", "HEAD")
    assert (head.path / "a.py").read_text() == "x = 2\n"
    pinned = clone(RepoSpec(source=str(src), commit=first[:10]), tmp_path / "cache")
    assert pinned.commit == first and (pinned.path / "a.py").read_text() == "x = 1\n"


def test_refresh_sees_new_commits(make_git_repo, tmp_path):
    src = make_git_repo({"a.py": "x = 1\n"})
    clone(RepoSpec(source=str(src)), tmp_path / "cache")
    (src / "a.py").write_text("x = 3\n")
    git(src, "commit", "-qam", "three")
    again = clone(RepoSpec(source=str(src)), tmp_path / "cache")
    assert (again.path / "a.py").read_text() == "x = 3\n"


def test_not_a_git_repo(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(SourceError, match="not a git repository"):
        clone(RepoSpec(source=str(tmp_path / "plain")), tmp_path / "cache")


def test_a_bundle_is_a_source_and_a_plain_file_is_not(make_git_repo, tmp_path):
    src = make_git_repo({"a.py": "x = 1\n"})
    bundle = tmp_path / "owner+demo.bundle"
    git(src, "bundle", "create", str(bundle), "HEAD", "--all")
    checkout = clone(RepoSpec(source=str(bundle)), tmp_path / "cache")
    assert checkout.commit == git(src, "rev-parse", "HEAD") and checkout.name == "owner_demo"
    assert (checkout.path / "a.py").read_text() == "x = 1\n"
    again = clone(RepoSpec(source=str(bundle)), tmp_path / "cache")  # the refresh path
    assert again.commit == checkout.commit
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(SourceError, match="not a git repository or bundle"):
        clone(RepoSpec(source=str(tmp_path / "notes.txt")), tmp_path / "cache")


def test_missing_path(tmp_path):
    with pytest.raises(SourceError, match="no such path"):
        clone(RepoSpec(source=str(tmp_path / "nope")), tmp_path / "cache")


def test_uncloneable_url_leaves_nothing(tmp_path):
    with pytest.raises(SourceError, match="cannot clone"):
        clone(RepoSpec(source="file:///nonexistent/repo.git"), tmp_path / "cache")
    assert not any((tmp_path / "cache" / "repos").iterdir())


def test_unknown_commit(make_git_repo, tmp_path):
    src = make_git_repo({"a.py": ""})
    with pytest.raises(SourceError, match="no commit"):
        clone(RepoSpec(source=str(src), commit="deadbeef"), tmp_path / "cache")


@pytest.mark.parametrize("source,name", [
    ("https://github.com/pallets/itsdangerous.git", "pallets__itsdangerous"),
    ("git@github.com:Owner/Repo.git", "owner__repo"),
    ("/tmp/some/inflection", "inflection"),
])
def test_repo_name(source, name):
    assert repo_name(source) == name
