"""Planning a corpus run fetches and checks nothing: every entry becomes a job, and each
repository's own run resolves its source (so one bad entry fails only itself)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.corpus import CorpusConfig, SampleSpec
from repogym.errors import ConfigError
from repogym.flows.corpus_flow import jobs_from_config
from repogym.schemas.records import RepoSpec
from tests.corpus.test_config import make_repo


def test_jobs_from_a_corpus_with_bad_entries_are_planned_without_io(tmp_path: Path,
                                                                     monkeypatch) -> None:
    make_repo(tmp_path / "good")
    make_repo(tmp_path / "gone")
    corpus = tmp_path / "corpus.toml"
    CorpusConfig.from_data({"defaults": {"max_mined": 3}, "repo": [
        {"source": "good", "branch": "main"},
        {"sample": "repogym-no-such-project-zz9==1.0", "name": "ghost", "commit": "v1"},
        {"source": "gone"}]}, base_dir=tmp_path).save(corpus)
    (tmp_path / "gone" / ".git").rename(tmp_path / "gone-git")  # no longer a repository
    calls: list[object] = []  # a tripwire: planning must not fetch any sample
    monkeypatch.setattr("repogym.samples.sample_repo", lambda *a, **k: calls.append(a))
    with pytest.raises(ConfigError, match="not a git repository"):
        CorpusConfig.load(corpus)  # `corpus validate` still refuses it
    start = time.monotonic()
    jobs = jobs_from_config(CorpusConfig.load(corpus, check_paths=False),
                            Settings(out=tmp_path / "out"))
    assert time.monotonic() - start < 1.0 and calls == []
    assert [j.name for j in jobs] == ["good", "ghost", "gone"]
    assert jobs[0].spec == RepoSpec(source=str(tmp_path / "good"), commit="origin/main",
                                    name="good")
    assert jobs[1].spec == SampleSpec(requirement="repogym-no-such-project-zz9==1.0",
                                      name="ghost", commit="v1")
    assert (jobs[1].spec.package, jobs[1].spec.version) == ("repogym-no-such-project-zz9", "1.0")
    assert jobs[2].spec.source == str(tmp_path / "gone")
    assert all(j.settings.max_mined == 3 for j in jobs)


def test_a_sample_spec_refuses_what_is_not_a_pypi_name() -> None:
    with pytest.raises(ValueError, match="not a PyPI name"):
        SampleSpec(requirement="no spaces allowed", name="x")
