"""``repogym corpus ...`` through the real CLI app (CliRunner), on real files and git repos."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.corpus import CorpusConfig
from tests.corpus.test_config import make_repo

WIDE = {"COLUMNS": "200", "NO_COLOR": "1"}


def cli(*args: str, **env: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["corpus", *args], env={**WIDE, **env})
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("cli") / "tinycalc", ("dev",))


def test_add_list_validate_remove(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo.parent)
    file = tmp_path / "sub" / "corpus.toml"
    code, out, _ = cli("add", "tinycalc", "--branch", "dev", "--generators", "mined, procedural",
                       "--max-candidates", "5", "--label", "tiny", "--label", "py",
                       "--file", str(file))
    assert code == 0 and out.strip() == f"added tinycalc ({repo}) to {file}"
    code, _, _ = cli("add", "https://github.com/Acme/Widget.git", "--commit", "v2.0", "--since",
                     "2024-05-01", "--range", "v1.0..v2.0", "--mine-last", "9", "--max-mined", "3",
                     "--max-combined", "1", "--file", str(file))
    assert code == 0
    code, out, _ = cli("add", "iniconfig==2.0.0", "--sample", "--name", "ini", "--file", str(file))
    assert code == 0 and "added ini (iniconfig==2.0.0)" in out
    data = tomllib.loads(file.read_text())
    assert data["repo"][0] == {"source": str(repo), "branch": "dev", "labels": ["tiny", "py"],
                               "generators": ["mined", "procedural"], "max_candidates": 5}
    assert data["repo"][1]["range"] == "v1.0..v2.0" and data["repo"][2]["name"] == "ini"

    code, out, _ = cli("list", "--file", str(file))
    lines = out.splitlines()
    assert code == 0 and [ln.split()[0] for ln in lines] == ["tinycalc", "acme__widget", "ini"]
    assert lines[0].split()[1:] == [str(repo), "branch:dev", "mined,procedural", "tiny,py"]
    assert lines[2].split()[1:3] == ["sample:iniconfig==2.0.0", "HEAD"]
    code, out, _ = cli("list", "--json", "--file", str(file))
    listed = json.loads(out)
    assert code == 0 and [e["name"] for e in listed] == ["tinycalc", "acme__widget", "ini"]
    assert listed[1] == {"name": "acme__widget", "source": "https://github.com/Acme/Widget.git",
                         "commit": "v2.0", "mine_last": 9, "since": "2024-05-01",
                         "range": "v1.0..v2.0", "max_mined": 3, "max_combined": 1}

    code, out, _ = cli("validate", "--file", str(file))
    assert code == 0 and out.strip() == f"{file}: valid, 3 repo(s): tinycalc, acme__widget, ini"
    code, out, _ = cli("remove", "acme__widget", "--file", str(file))
    assert code == 0 and "removed acme__widget" in out and "(2 repo(s) left)" in out
    assert CorpusConfig.load(file).names() == ["tinycalc", "ini"]


def test_file_from_environment(repo: Path, tmp_path: Path) -> None:
    file = tmp_path / "env.toml"
    code, _, _ = cli("add", str(repo), "--name", "t1", REPOGYM_CORPUS=str(file))
    assert code == 0 and CorpusConfig.load(file).names() == ["t1"]
    code, out, _ = cli("list", REPOGYM_CORPUS=str(file))
    assert code == 0 and out.startswith("t1 ")


def test_empty_corpus_lists_nothing(tmp_path: Path) -> None:
    file = tmp_path / "e.toml"
    file.write_text("[defaults]\nlabels = ['x']\n")
    code, out, err = cli("list", "--file", str(file))
    assert code == 0 and out == "" and "no repositories in" in err
    assert cli("list", "--json", "--file", str(file))[1].strip() == "[]"


def _one_error(code: int, err: str, expected_code: int = 2) -> str:
    lines = err.strip().splitlines()
    assert code == expected_code and len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_bad_input_is_one_error_line_exit_2(repo: Path, tmp_path: Path) -> None:
    file = tmp_path / "c.toml"
    assert cli("add", str(repo), "--file", str(file))[0] == 0
    before = file.read_text()
    cases = [
        (("add", str(repo)), "duplicate repo name 'tinycalc'"),
        (("add", str(tmp_path / "missing")), "source: no such path"),
        (("add", "https://h/o/r", "--generators", "mined,fuzz"), "unknown generator(s) 'fuzz'"),
        (("add", "https://h/o/r", "--max-candidates", "-1"), "max_candidates: Input should be"),
        (("add", "https://h/o/r", "--name", "Not OK"), "name: 'Not OK' is not a valid name"),
        (("add", "no way", "--sample"), "sample: 'no way' is not a PyPI name"),
        (("remove", "nope"), "no repo named 'nope'; repos: tinycalc"),
    ]
    for args, expected in cases:
        code, _, err = cli(*args, "--file", str(file))
        assert expected in _one_error(code, err), (args, err)
    assert file.read_text() == before  # a refused edit leaves the file alone


def test_invalid_files_are_reported_with_location(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[repo]]\nsample = 'x'\n[repo]\n")
    code, _, err = cli("validate", "--file", str(bad))
    assert "invalid TOML" in _one_error(code, err) and "line 3" in err
    bad.write_text("[repo]\nsample = 'x'\n")  # markup-like text is printed as is
    code, _, err = cli("list", "--file", str(bad))
    assert "write each repo as [[repo]]" in _one_error(code, err)
    bad.write_text("[[repo]]\nname = 'gone'\nsource = 'nowhere'\n")
    code, _, err = cli("validate", "--file", str(bad))
    assert f"{bad}: repo #1 ('gone'): source: no such path" in _one_error(code, err)
    assert cli("list", "--file", str(bad))[0] == 0  # listing does not need the folders
    assert cli("remove", "gone", "--file", str(bad))[0] == 0  # nor does removing one
    for command in ("list", "validate", "remove x"):
        code, _, err = cli(*command.split(), "--file", str(tmp_path / "absent.toml"))
        assert "no such corpus file" in _one_error(code, err)


def test_unwritable_location_is_exit_1(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    code, _, err = cli("add", "https://h/o/r", "--file", str(tmp_path / "afile" / "c.toml"))
    line = _one_error(code, err, expected_code=1)
    assert line.startswith(f"error: {tmp_path / 'afile' / 'c.toml'}: cannot read or write: ")
