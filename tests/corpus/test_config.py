"""The corpus file: real TOML files on disk, real git repositories, real clones."""

from __future__ import annotations

import multiprocessing
import os
import tomllib
from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.corpus import CorpusConfig, RepoEntry, default_corpus_path
from repogym.errors import ConfigError, SourceError
from repogym.repos import clone
from tests.conftest import git


def make_repo(path: Path, branches: tuple[str, ...] = ()) -> Path:
    """A git repo with one commit on main and one more commit on each extra branch."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("main\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "main")
    for branch in branches:
        git(path, "checkout", "-q", "-b", branch, "main")
        (path / "a.txt").write_text(f"{branch}\n")
        git(path, "commit", "-q", "-am", branch)
    git(path, "checkout", "-q", "main")
    return path


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """<tree>/repos/alpha (branches main, dev), <tree>/repos/plain (not git), <tree>/conf/."""
    root = tmp_path_factory.mktemp("corpus")
    make_repo(root / "repos" / "alpha", ("dev",))
    (root / "repos" / "plain").mkdir()
    (root / "conf").mkdir()
    return root


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


FULL = """\
[defaults]
generators = ["procedural", "mined"]
max_candidates = 7
mine_last = 30
labels = ["py", "shared"]

[[repo]]
name = "alpha-dev"
source = "../repos/alpha"
branch = "dev"
labels = ["small", "shared"]
max_mined = 4

[[repo]]
source = "https://github.com/Owner/Some.Repo.git"
commit = "v1.2"
since = 2024-01-31
range = "v1.0..v1.2"
generators = ["mined"]
max_combined = 0

[[repo]]
sample = "iniconfig==2.0.0"
"""


def test_load_resolves_defaults_names_and_paths(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")  # relative sources are relative to the file, not the cwd
    cfg = CorpusConfig.load(write(tree / "conf" / "corpus.toml", FULL))
    assert cfg.names() == ["alpha-dev", "owner__some.repo", "iniconfig"]
    alpha, url, sample = cfg.entries()
    assert alpha.source == str(tree / "repos" / "alpha") and alpha.branch == "dev"
    assert alpha.labels == ["py", "shared", "small"]  # defaults' first, no repeats
    assert (alpha.max_candidates, alpha.max_mined, alpha.mine_last) == (7, 4, 30)
    assert alpha.generators == ["procedural", "mined"]
    assert url.generators == ["mined"] and url.since == "2024-01-31"  # TOML date -> text
    assert (url.rev_range, url.commit, url.max_combined) == ("v1.0..v1.2", "v1.2", 0)
    assert sample.sample == "iniconfig==2.0.0" and sample.labels == ["py", "shared"]
    assert cfg.get("iniconfig") == sample
    assert cfg.repos[0].source == "../repos/alpha"  # the raw entry is kept as written


def test_save_is_stable_and_round_trips(tree: Path) -> None:
    cfg = CorpusConfig.load(write(tree / "conf" / "rt.toml", FULL))
    out = tree / "conf" / "saved.toml"
    cfg.save(out)
    first = out.read_text()
    again = CorpusConfig.load(out)
    assert again.to_data() == cfg.to_data() and again.entries() == cfg.entries()
    again.save(out)
    assert out.read_text() == first  # stable formatting: saving twice changes nothing
    assert tomllib.loads(first) == cfg.to_data()
    assert first.index("[defaults]") < first.index("[[repo]]")
    assert 'since = "2024-01-31"' in first and "range = " in first
    assert [p.name for p in (tree / "conf").iterdir() if p.suffix == ".tmp"] == []


def test_strings_are_escaped_for_toml(tmp_path: Path) -> None:
    odd = 'quote" back\\slash\ttab\nnl \x7f del \x01 ctl — ünïcode'
    cfg = CorpusConfig.from_data({"repo": [{"source": "https://x.org/a/b", "since": "yesterday",
                                            "labels": [odd, "[x]"]}]})
    cfg.save(tmp_path / "c.toml")
    assert CorpusConfig.load(tmp_path / "c.toml").repos[0].labels == [odd, "[x]"]


ERRORS = [  # (file body, what the one-line message must say)
    ("[[repo]]\nsource = 'https://h/a/b'\nbogus = 1\n",
     ["repo #1 ('https://h/a/b'): bogus: unknown key", "valid keys: name, source"]),
    ("[defaults]\nmax_candidate = 3\n", ["[defaults]: max_candidate: unknown key"]),
    ("repos = []\n", ["repos: unknown key; valid keys: defaults, repo"]),
    ("[[repo]]\nsample = 'x'\nrev_range = 'a..b'\n", ["rev_range: unknown key"]),
    ("[repo]\nsource = 'https://h/a/b'\n", ["repo: must be an array of tables", "[[repo]]"]),
    ("[[repo]]\nname = 'x'\nsource = 'https://h/a/b'\ngenerators = ['mined', 'fuzz']\n",
     ["repo #1 ('x'): generators: unknown generator(s) 'fuzz'", "valid: procedural, mined"]),
    ("[defaults]\ngenerators = []\n", ["[defaults]: generators: give at least one generator"]),
    ("[[repo]]\nsource = 'https://h/a/b'\n[[repo]]\nsource = 'git@h:a/b.git'\n",
     ["duplicate repo name 'a__b' (entries #1 and #2)"]),
    ("[[repo]]\nname = 'x'\nsource = '../repos/nowhere'\n",
     ["repo #1 ('x'): source: no such path:", "nowhere"]),
    ("[[repo]]\nname = 'x'\nsource = '../repos/plain'\n",
     ["repo #1 ('x'): source: not a git repository:", "plain"]),
    ("[[repo]]\nname = 'x'\nsource = 'https://h/a/b'\nsample = 'x'\n",
     ["repo #1 ('x'): give exactly one of 'source'"]),
    ("[[repo]]\nbranch = 'main'\n", ["repo #1: give exactly one of 'source'"]),
    ("[[repo]]\nname = 'Big Name'\nsample = 'x'\n", ["repo #1 ('Big Name'): name:",
                                                     "not a valid name"]),
    ("[[repo]]\nsample = 'x'\nmax_candidates = -1\n",
     ["repo #1 ('x'): max_candidates: Input should be greater than or equal to 0"]),
    ("[[repo]]\nsample = 'x'\nmine_last = true\n", ["mine_last: Input should be a valid integer"]),
    ("[[repo]]\nsample = 'x'\nmax_mined = '3'\n", ["max_mined: Input should be a valid integer"]),
    ("[[repo]]\nsample = 'not a name'\n", ["sample: 'not a name' is not a PyPI name"]),
    ("[[repo]]\nsample = 'x'\ncommit = 'a b'\n", ["commit: must be a non-empty revision"]),
    ("[[repo]]\nsample = 'x'\nlabels = ['ok', ' ']\n", ["labels: labels must be non-empty"]),
    ("[[repo]]\nsample = 'x'\n\nname = = 'y'\n", ["invalid TOML", "line 4"]),
]


@pytest.mark.parametrize("body,expected", ERRORS, ids=[e[1][0][:40] for e in ERRORS])
def test_invalid_files_name_file_repo_and_key(tree: Path, body: str, expected: list[str]) -> None:
    path = write(tree / "conf" / "bad.toml", body)
    with pytest.raises(ConfigError) as info:
        CorpusConfig.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    for part in expected:
        assert part in message


def test_several_problems_are_reported_together(tree: Path) -> None:
    body = "[defaults]\nfoo = 1\n[[repo]]\nsample = 'x'\nmax_mined = -2\n"
    with pytest.raises(ConfigError, match=r"\[defaults\]: foo: unknown key.*; repo #1 .*max_mined"):
        CorpusConfig.load(write(tree / "conf" / "bad2.toml", body))


def test_missing_file_and_unchecked_paths(tree: Path) -> None:
    with pytest.raises(ConfigError, match="no such corpus file"):
        CorpusConfig.load(tree / "conf" / "absent.toml")
    body = "[[repo]]\nname = 'gone'\nsource = '../repos/nowhere'\n"
    path = write(tree / "conf" / "gone.toml", body)
    assert CorpusConfig.load(path, check_paths=False).names() == ["gone"]
    empty = CorpusConfig.load_or_empty(tree / "conf" / "absent.toml")
    assert empty.repos == [] and empty.to_toml().startswith("# repogym corpus")


def test_add_and_remove_return_new_configs(tree: Path) -> None:
    base = CorpusConfig.load(write(tree / "conf" / "ed.toml", FULL))
    grown = base.add({"source": "https://h/o/new", "labels": ["n"]})
    assert grown.names()[-1] == "o__new" and len(base.repos) == 3
    assert grown.add(RepoEntry(name="other", sample="six")).names()[-1] == "other"
    with pytest.raises(ConfigError, match=r"duplicate repo name 'o__new'"):
        grown.add({"source": "https://elsewhere/o/new"})
    with pytest.raises(ConfigError, match=r"repo #4 \('fuzzy'\): generators: unknown"):
        base.add({"name": "fuzzy", "sample": "x", "generators": ["fuzz"]})
    with pytest.raises(ConfigError, match=r"repo #4 \('\.\./repos/none'\): source: no such path"):
        base.add({"source": "../repos/none"})
    shrunk = grown.remove("alpha-dev")
    assert shrunk.names() == ["owner__some.repo", "iniconfig", "o__new"]
    assert shrunk.defaults == base.defaults
    with pytest.raises(ConfigError, match=r"no repo named 'nope'; repos: owner__some.repo, "):
        shrunk.remove("nope")


def test_add_checks_only_the_new_entrys_path(tree: Path) -> None:
    path = write(tree / "conf" / "stale.toml", "[[repo]]\nname = 'gone'\nsource = '../x/gone'\n")
    saved = CorpusConfig.edit(path, lambda c: c.add({"source": "../repos/alpha"}))
    assert saved.names() == ["gone", "alpha"]
    assert CorpusConfig.edit(path, lambda c: c.remove("gone")).names() == ["alpha"]
    assert CorpusConfig.load(path).names() == ["alpha"]


def test_settings_applies_only_the_keys_set(tree: Path) -> None:
    cfg = CorpusConfig.load(write(tree / "conf" / "st.toml", FULL))
    base = Settings(out=tree / "out", max_mined=9, max_combined=5, mine_since=None)
    alpha, url, sample = (e.settings(base) for e in cfg.entries())
    assert (alpha.generators, alpha.max_candidates, alpha.max_mined) == (("procedural", "mined"), 7, 4)
    assert (alpha.mine_last, alpha.max_combined, alpha.mine_since) == (30, 5, None)
    assert (url.generators, url.mine_since, url.mine_range) == (("mined",), "2024-01-31", "v1.0..v1.2")
    assert url.max_combined == 0 and url.out == base.out and url.max_mined == 9
    assert base.max_candidates == 20 and base.generators == Settings().generators  # untouched
    raw = cfg.repos[2].settings(base)  # a raw entry carries no defaults
    assert raw == base and sample.max_candidates == 7


def test_repo_spec_follows_branch_or_pin_in_a_real_clone(tree: Path, tmp_path: Path) -> None:
    alpha = tree / "repos" / "alpha"
    dev_sha, main_sha = git(alpha, "rev-parse", "dev"), git(alpha, "rev-parse", "main")
    cfg = CorpusConfig.from_data({"repo": [
        {"name": "dev", "source": str(alpha), "branch": "dev"},
        {"name": "pinned", "source": str(alpha), "branch": "dev", "commit": main_sha[:10]},
        {"name": "head", "source": str(alpha)}]})
    dev, pinned, head = (e.repo_spec() for e in cfg.entries())
    assert (dev.commit, dev.name, dev.source) == ("origin/dev", "dev", str(alpha))
    assert clone(dev, tmp_path).commit == dev_sha
    assert clone(pinned, tmp_path).commit == main_sha
    assert head.commit is None and clone(head, tmp_path).commit == main_sha
    bad = CorpusConfig.from_data({"repo": [{"source": str(alpha), "branch": "nope"}]})
    with pytest.raises(SourceError, match="no commit 'origin/nope'"):
        clone(bad.entries()[0].repo_spec(), tmp_path)


def test_repo_spec_of_urls_and_samples(tree: Path, tmp_path: Path) -> None:
    cfg = CorpusConfig.load(write(tree / "conf" / "sp.toml", FULL))
    url = cfg.get("owner__some.repo").repo_spec()
    assert (url.source, url.commit, url.name) == ("https://github.com/Owner/Some.Repo.git",
                                                  "v1.2", "owner__some.repo")
    # sample_repo reuses an unpacked sdist already in samples_dir (no download here)
    unpacked = make_repo(tmp_path / "iniconfig-2.0.0")
    spec = cfg.get("iniconfig").repo_spec(samples_dir=tmp_path)
    assert (spec.source, spec.name, spec.commit) == (str(unpacked), "iniconfig", None)


def test_default_path_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPOGYM_CORPUS", raising=False)
    assert default_corpus_path() == Path("corpus.toml")
    monkeypatch.setenv("REPOGYM_CORPUS", "/srv/c.toml")
    assert default_corpus_path() == Path("/srv/c.toml")


def test_failed_save_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.toml"
    CorpusConfig.from_data({"repo": [{"sample": "six"}]}).save(path)
    before = path.read_text()

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        CorpusConfig.from_data({"repo": [{"sample": "attrs"}]}).save(path)
    assert path.read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == ["c.toml"]


def _add_one(args: tuple[str, int]) -> None:
    path, i = args
    CorpusConfig.edit(Path(path), lambda c: c.add({"name": f"r{i}", "source": f"https://h/o/r{i}"}))


def test_concurrent_edits_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_add_one, [(str(path), i) for i in range(12)])
    assert sorted(CorpusConfig.load(path).names()) == sorted(f"r{i}" for i in range(12))
