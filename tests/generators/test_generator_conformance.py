"""One conformance suite for every synthetic generator of :data:`GENERATORS`.

Each one, on a real git repository (LLM generators through litellm's ``mock_response``):
candidates carry the generator's name, stay within the budget, are the same for the same
seed, touch no test file, and their patches are what the judge needs -- the bug applies to
the checkout with ``git apply``, and the gold patch on top of it gives the checkout back.
Without an enabled LLM client, an LLM generator makes nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from repogym.generators.llm import LLMClient, LLMSettings
from repogym.generators.registry import (
    GENERATOR_NAMES,
    GENERATORS,
    GenerationRequest,
    GeneratorKind,
    generate_all,
)
from repogym.schemas.records import Checkout, RepoSpec
from repogym.toolchains.python import PythonToolchain
from tests.conftest import git
from tests.generators.llm.conftest import ANSWERS, LIB, TESTS

SYNTHETIC = [n for n in GENERATOR_NAMES if GENERATORS.get(n).kind is GeneratorKind.synthetic]


@pytest.fixture
def checkout(make_git_repo) -> Checkout:
    root = make_git_repo({"demo/__init__.py": "", "demo/lib.py": LIB, "tests/test_lib.py": TESTS})
    return Checkout(spec=RepoSpec(source=str(root)), name="demo", path=root,
                    commit=git(root, "rev-parse", "HEAD"))


def request(checkout: Checkout, tmp_path: Path, *, seed: int = 0,
            client: LLMClient | None = None) -> GenerationRequest:
    client = client or LLMClient(LLMSettings(model="openai/mock", mock_response=ANSWERS["clamp"]),
                                 cache_dir=tmp_path / "llm-cache")
    return GenerationRequest(checkout=checkout, toolchain=PythonToolchain(), seed=seed,
                             max_candidates=3, client=client)


def applies(root: Path, patch: str) -> bool:
    done = subprocess.run(["git", "apply", "--check", "-"], cwd=root, input=patch, text=True,
                          capture_output=True)
    return done.returncode == 0


def test_the_table_names_every_generator_once_and_the_cli_offers_them() -> None:
    from repogym.config import Settings
    from repogym.generators import GENERATOR_NAMES as exported

    assert exported == GENERATOR_NAMES and len(set(GENERATOR_NAMES)) == len(GENERATOR_NAMES)
    assert set(Settings().generators) <= set(GENERATOR_NAMES)
    assert [n for n in GENERATOR_NAMES if GENERATORS.get(n).kind is GeneratorKind.history] == [
        "mined"]
    with pytest.raises(TypeError, match="no function"):
        GENERATORS.get("mined").load()


@pytest.mark.parametrize("name", SYNTHETIC)
def test_a_synthetic_generator_makes_candidates_the_judge_can_use(
        name: str, checkout: Checkout, tmp_path: Path) -> None:
    entry = GENERATORS.get(name)
    req = request(checkout, tmp_path)
    cands = entry.load()(req)
    assert 0 < len(cands) <= req.max_candidates, name
    assert [c.instance_id for c in entry.load()(req)] == [c.instance_id for c in cands]
    for cand in cands:
        assert cand.generator == name and cand.repo == "demo"
        assert cand.language == req.toolchain.language == "python"
        assert cand.base_commit == checkout.commit and not cand.test_patch
        touched = {ln[6:] for ln in cand.bug_patch.splitlines() if ln.startswith("+++ b/")}
        assert touched and not any(req.toolchain.is_test_file(p) for p in touched), touched
        assert applies(checkout.path, cand.bug_patch), cand.bug_patch
        subprocess.run(["git", "apply", "-"], cwd=checkout.path, input=cand.bug_patch,
                       text=True, check=True)
        try:
            assert applies(checkout.path, cand.gold_patch), cand.gold_patch
            subprocess.run(["git", "apply", "-"], cwd=checkout.path, input=cand.gold_patch,
                           text=True, check=True)
            assert git(checkout.path, "status", "--porcelain") == ""  # the checkout, back
        finally:
            git(checkout.path, "checkout", "--", ".")


@pytest.mark.parametrize("name", [n for n in SYNTHETIC if GENERATORS.get(n).needs_llm])
def test_an_llm_generator_makes_nothing_without_an_enabled_client(
        name: str, checkout: Checkout, tmp_path: Path) -> None:
    off = LLMClient(LLMSettings(), cache_dir=tmp_path / "off")
    assert generate_all([name], request(checkout, tmp_path, client=off)) == []
    assert not (tmp_path / "off").exists()


def test_generate_all_follows_the_table_and_refuses_unknown_names(
        checkout: Checkout, tmp_path: Path) -> None:
    from repogym.errors import UnknownPluginError

    req = request(checkout, tmp_path)
    made = generate_all(["llm_rewrite", "procedural", "mined"], req)
    kinds = [c.generator for c in made]
    assert kinds == sorted(kinds, key=GENERATOR_NAMES.index) and set(kinds) == {
        "procedural", "llm_rewrite"}
    with pytest.raises(UnknownPluginError, match="no_such"):
        generate_all(["no_such"], req)
