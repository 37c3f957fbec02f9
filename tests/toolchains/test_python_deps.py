"""Test dependencies from PEP 735 groups, Poetry, PDM and Hatch tables (python_deps)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from repogym.toolchains.python import PythonToolchain
from repogym.toolchains.python_deps import (
    DeclaredDeps,
    Source,
    Unconvertible,
    best_effort_install,
    declared_test_deps,
    from_pyproject,
    poetry_constraint,
    poetry_requirement,
    static_requirements,
)


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def reasons(deps: DeclaredDeps) -> dict[str, str]:
    return {s.entry: s.reason for s in deps.skipped}


# -- Poetry constraints ------------------------------------------------------------------------


@pytest.mark.parametrize("poetry,pep440", [
    ("^1.2", ">=1.2,<2.0"), ("^1.2.3", ">=1.2.3,<2.0.0"), ("^0.2.3", ">=0.2.3,<0.3.0"),
    ("^0.0.3", ">=0.0.3,<0.0.4"), ("^0", ">=0,<1"), ("^0.0", ">=0.0,<0.1"), ("^1", ">=1,<2"),
    ("~1.2", ">=1.2,<1.3"), ("~1.2.3", ">=1.2.3,<1.3.0"), ("~1", ">=1,<2"),
    ("*", ""), ("", ""), ("1.2.3", "==1.2.3"), ("=1.2", "==1.2"), ("==2.0", "==2.0"),
    ("1.2.*", "==1.2.*"), (">=1.2", ">=1.2"), (">=1.2,<2", ">=1.2,<2"),
    (">= 1.2, < 2", ">=1.2,<2"), (">=1.2 <2", ">=1.2,<2"), ("!=1.5", "!=1.5"),
    ("~=1.4", "~=1.4"), ("^1.2.3b1", ">=1.2.3b1,<2.0.0"),
])
def test_poetry_constraints_become_pep440(poetry, pep440):
    assert poetry_constraint(poetry) == pep440


@pytest.mark.parametrize("poetry", ["^1 || ^2", "latest", ">=1.2.*", "~=1", "^1.*", ">=x"])
def test_inexpressible_constraints_are_unconvertible(poetry):
    with pytest.raises(Unconvertible):
        poetry_constraint(poetry)


@pytest.mark.parametrize("value,requirement", [
    ("^1.15", "six>=1.15,<2.0"),
    ("*", "six"),
    ({"version": "~1.15", "extras": ["a", "b"]}, "six[a,b]>=1.15,<1.16"),
    ({"version": "^1.15", "python": "^3.8"},
     'six>=1.15,<2.0; python_version >= "3.8" and python_version < "4.0"'),
    ({"python": ">=3.8.1"}, 'six; python_full_version >= "3.8.1"'),
    ({"python": "~2.7 || >=3.8"},
     'six; (python_version >= "2.7" and python_version < "2.8") or (python_version >= "3.8")'),
    ({"version": "1.16.0", "markers": "sys_platform != 'win32'"},
     "six==1.16.0; sys_platform != 'win32'"),
    ({"version": "*", "python": ">=3.9", "platform": "linux"},
     'six; (python_version >= "3.9") and (sys_platform == "linux")'),
    ({"version": "^1.0", "optional": True, "source": "pypi"}, "six>=1.0,<2.0"),
])
def test_poetry_dependencies_become_pep508(value, requirement):
    got = poetry_requirement("six", value)
    assert got == requirement
    Requirement(got)  # valid PEP 508


@pytest.mark.parametrize("value,reason", [
    ({"path": "../six", "develop": True}, "path dependency"),
    ({"git": "https://github.com/x/six.git", "branch": "main"}, "git dependency"),
    ({"url": "https://example.com/six.tar.gz"}, "url dependency"),
    ({"version": "^1 || ^2"}, "cannot express '||'"),
    ({"version": "^1", "extras": "a"}, "extras is not a list"),
    ({"version": "^1", "markers": "python_version >>> 3"}, "not a PEP 508 requirement"),
    (3, "unsupported value"),
])
def test_unconvertible_poetry_dependencies_say_why(value, reason):
    with pytest.raises(Unconvertible, match=reason):
        poetry_requirement("six", value)


# -- each tool's tables --------------------------------------------------------------------


POETRY = '''
[tool.poetry]
name = "demo-pkg"
[tool.poetry.dependencies]
python = "^3.8"
requests = "^2.0"
[tool.poetry.group.dev.dependencies]
pytest = "^7.0"
python = "^3.8"
pywin32 = {version = "*", markers = "sys_platform == 'win32'"}
sibling = {path = "../sibling", develop = true}
broken = "^1 || ^2"
numpy = [{version = "^1.24", python = "<3.12"}, {version = "^2.0", python = ">=3.12"}]
[tool.poetry.group.Test.dependencies]
hypothesis = ">=6"
demo_pkg = {version = "*", extras = ["yaml"]}
[tool.poetry.group.docs.dependencies]
sphinx = "*"
[tool.poetry.dev-dependencies]
mock = "~4.0"
'''


def test_poetry_groups_and_legacy_dev_dependencies():
    import tomllib

    deps = from_pyproject(tomllib.loads(POETRY))
    assert deps.requirements(Source.POETRY) == [
        "pytest>=7.0,<8.0", "pywin32; sys_platform == 'win32'",
        'numpy>=1.24,<2.0; python_version < "3.12"', 'numpy>=2.0,<3.0; python_version >= "3.12"',
        "hypothesis>=6", "mock>=4.0,<4.1"]
    assert {d.group for d in deps.found} == {"dev", "Test"}
    why = reasons(deps)
    assert "path dependency" in why["sibling = {'path': '../sibling', 'develop': True}"]
    assert "'||'" in why["broken = '^1 || ^2'"]
    assert "the project itself" in why["demo_pkg[yaml]"]
    assert not any("requests" in r or "sphinx" in r for r in deps.requirements())


def test_pdm_dev_dependencies():
    import tomllib

    deps = from_pyproject(tomllib.loads('''
[project]
name = "demo"
[tool.pdm.dev-dependencies]
test = ["pytest>=7", "-e file:///${PROJECT_ROOT}/plugins/demo-plugin#egg=demo-plugin",
        "demo[extra]", "pytest-mock ; python_version >= '3.8'", "not a requirement !"]
lint = ["ruff"]
'''))
    assert deps.requirements() == ["pytest>=7", "pytest-mock ; python_version >= '3.8'"]
    why = reasons(deps)
    assert why["-e file:///${PROJECT_ROOT}/plugins/demo-plugin#egg=demo-plugin"] == \
        "editable (-e) entry"
    assert "the project itself" in why["demo[extra]"]
    assert "not a PEP 508 requirement" in why["not a requirement !"]


def test_hatch_envs_in_pyproject_and_hatch_toml(tmp_path):
    write(tmp_path, {"pyproject.toml": '''
[project]
name = "demo"
[tool.hatch.envs.default]
dependencies = ["coverage[toml]>=6.5", "pytest"]
[tool.hatch.envs.hatch-test]
extra-dependencies = ["pytest-asyncio", "{root:uri}/plugins/demo-plugin"]
[tool.hatch.envs.docs]
dependencies = ["mkdocs"]
''', "hatch.toml": '''
[envs.test]
dependencies = ["hypothesis", "pytest-xdist ; sys_platform != 'win32'"]
'''})
    deps = declared_test_deps(tmp_path)
    assert deps.requirements(Source.HATCH) == [
        "coverage[toml]>=6.5", "pytest", "pytest-asyncio", "hypothesis",
        "pytest-xdist ; sys_platform != 'win32'"]
    assert reasons(deps) == {"{root:uri}/plugins/demo-plugin": "uses {...} context formatting"}
    assert {d.group for d in deps.found} == {"default", "hatch-test", "test"}


# -- PEP 735 ---------------------------------------------------------------------------------


def test_dependency_groups_expand_include_group():
    import tomllib

    deps = from_pyproject(tomllib.loads('''
[dependency-groups]
coverage = ["coverage[toml]"]
Typing = ["mypy", {include-group = "coverage"}]
test = ["pytest", {include-group = "typing"}, {include-group = "missing"}]
dev = [{include-group = "Test"}, "ruff", {include-group = "dev"}, {not-a = "key"}]
'''))
    assert deps.requirements(Source.PEP735, group="test") == ["pytest", "mypy", "coverage[toml]"]
    assert deps.requirements(Source.PEP735, group="dev") == [
        "pytest", "mypy", "coverage[toml]", "ruff"]
    why = {(s.group, s.entry): s.reason for s in deps.skipped}
    assert why[("test", "{'include-group': 'missing'}")] == "no group named 'missing'"
    assert why[("dev", "{'include-group': 'dev'}")] == "include cycle: dev -> dev"
    assert why[("dev", "{'not-a': 'key'}")] == "unknown table entry"


def test_include_cycle_between_groups_is_skipped_not_fatal():
    deps = from_pyproject({"dependency-groups": {"test": ["a", {"include-group": "dev"}],
                                                  "dev": ["b", {"include-group": "test"}]}})
    assert deps.requirements(group="test") == ["a", "b"]
    assert deps.requirements(group="dev") == ["b", "a"]
    assert sorted(s.reason for s in deps.skipped) == [
        "include cycle: dev -> test -> dev", "include cycle: test -> dev -> test"]


# -- malformed input -------------------------------------------------------------------------


def test_malformed_toml_is_a_problem_not_an_error(tmp_path):
    write(tmp_path, {"pyproject.toml": "[tool.poetry.group.dev.dependencies\npytest = '^7'\n",
                     "hatch.toml": '[envs.test]\ndependencies = ["hypothesis"]\n'})
    deps = declared_test_deps(tmp_path)
    assert deps.requirements() == ["hypothesis"]
    assert len(deps.problems) == 1 and deps.problems[0].startswith("pyproject.toml: not readable")


@pytest.mark.parametrize("pyproject", [
    {"tool": {"poetry": {"group": "dev"}}},
    {"tool": {"poetry": {"group": {"dev": {"dependencies": ["pytest"]}}}}},
    {"tool": {"pdm": {"dev-dependencies": {"test": "pytest"}}}},
    {"tool": {"hatch": {"envs": {"test": ["pytest"]}}}},
    {"tool": {"hatch": {"envs": {"test": {"dependencies": [1, "pytest"]}}}}},
    {"dependency-groups": {"test": "pytest"}},
    {"dependency-groups": {"test": [{"include-group": 3}, "pytest"]}},
])
def test_wrongly_shaped_tables_never_raise(pyproject):
    deps = from_pyproject(pyproject)
    assert set(deps.requirements()) <= {"pytest"}


def test_no_files_no_dependencies(tmp_path):
    assert declared_test_deps(tmp_path) == DeclaredDeps()


# -- the recipe ------------------------------------------------------------------------------


def test_recipe_installs_tool_dependencies_best_effort(tmp_path):
    write(tmp_path, {"pyproject.toml": POETRY, "tests/test_a.py": "import hypothesis\n"})
    steps = PythonToolchain().install_steps(tmp_path)
    step = next(s for s in steps if "pytest>=7.0,<8.0" in s)
    assert step.startswith("python -m pip install -q 'pytest>=7.0,<8.0' ")
    assert "could not install $r (skipped)" in step
    assert "sibling" not in step and "sphinx" not in step
    assert steps.index(step) < next(i for i, s in enumerate(steps) if "pytest-cov" in s)


def test_recipe_keeps_pip_for_dependency_groups_with_a_fallback(tmp_path):
    write(tmp_path, {"pyproject.toml": '[project]\nname="x"\n[dependency-groups]\n'
                     'test = ["pytest", {include-group = "typing"}]\ntyping = ["mypy"]\n',
                     "tests/test_a.py": ""})
    steps = PythonToolchain().install_steps(tmp_path)
    group = next(s for s in steps if "--group" in s)
    assert group.startswith("python -m pip install -q --group test || { ")
    assert "for r in pytest mypy;" in group
    assert not any("--group typing" in s for s in steps)


def test_recipe_without_tool_tables_has_no_extra_step(tmp_path):
    write(tmp_path, {"setup.py": "", "tests/test_a.py": ""})
    steps = PythonToolchain().install_steps(tmp_path)
    assert not any("one at a time" in s or "--group" in s for s in steps)


def test_best_effort_command_installs_what_it_can(tmp_path):
    """The shell of the step, with a fake pip: a failing name is reported and skipped."""
    fake = write(tmp_path, {"bin/python": '#!/bin/sh\n'
                            'for a; do case "$a" in bad*) exit 1;; esac; done\n'
                            'echo "$@" >> "$LOG"\n'})
    (fake / "bin/python").chmod(0o755)
    reqs = ["good>=1; python_version >= '3.8'", "bad", "also-good"]
    proc = subprocess.run(["bash", "-c", best_effort_install(reqs)], check=False,
                          capture_output=True,
                          text=True, env={"PATH": f"{fake}/bin:/usr/bin:/bin",
                                          "LOG": str(tmp_path / "log")})
    assert proc.returncode == 0
    assert "repogym: could not install bad (skipped)" in proc.stdout
    installed = (tmp_path / "log").read_text().splitlines()
    assert installed == ["-m pip install -q good>=1; python_version >= '3.8'",
                         "-m pip install -q also-good"]
    assert shlex.split(best_effort_install(reqs))[5:8] == reqs


# -- end to end: a real image ----------------------------------------------------------------


POETRY_PROJECT = {
    "pyproject.toml": '''[build-system]
requires = ["poetry-core>=1.0"]
build-backend = "poetry.core.masonry.api"

[tool.poetry]
name = "poetrycalc"
version = "0.1.0"
description = "tiny"
authors = ["t <t@example.com>"]
packages = [{include = "poetrycalc"}]

[tool.poetry.dependencies]
python = ">=3.8"

[tool.poetry.group.dev.dependencies]
six = {version = "~1.15", python = ">=3.8"}
pywin32 = {version = "*", markers = "sys_platform == 'win32'"}
sibling = {path = "../sibling", develop = true}
idna = ">=999"

[dependency-groups]
test = [{include-group = "pinned"}]
pinned = ["text-unidecode==1.2"]
''',
    "poetrycalc/__init__.py": "def add(a, b):\n    return a + b\n",
    # the per-module fallback would install the latest six (1.17): only the Poetry group
    # gives 1.15, and only the included PEP 735 group gives text-unidecode
    "tests/test_calc.py": (
        "from importlib.metadata import version\n\nimport six\n\nfrom poetrycalc import add\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_six_is_the_poetry_dev_groups():\n"
        "    assert six.__version__.startswith('1.15.')\n\n\n"
        "def test_include_group_was_installed():\n"
        "    assert version('text-unidecode') == '1.2'\n"
    ),
}


@pytest.mark.docker
@pytest.mark.slow
def test_poetry_dev_group_reaches_a_real_image(make_git_repo, base_image, tmp_path):
    import secrets  # a commit of its own: the image is built (the install log is read below)

    from repogym.baseline import record_baseline
    from tests.conftest import build_tiny_env

    src = make_git_repo({**POETRY_PROJECT, "TOKEN": secrets.token_hex(6)}, name="poetrycalc")
    tiny = build_tiny_env("docker", src, tmp_path / "out")
    assert not tiny.env.reused
    with tiny.provider.open(tiny.env) as sandbox:
        base = record_baseline(sandbox, tiny.toolchain, repo=tiny.checkout.name,
                               commit=tiny.checkout.commit, image=tiny.env.ref, runs=1)
    assert sorted(base.passing) == [
        "tests/test_calc.py::test_add", "tests/test_calc.py::test_include_group_was_installed",
        "tests/test_calc.py::test_six_is_the_poetry_dev_groups"]
    logs = "".join(p.read_text() for p in (tmp_path / "out" / "logs").glob("install-*.log"))
    assert "repogym: could not install idna>=999 (skipped)" in logs


def test_static_requirements_read_pep621_without_the_build_backend(tmp_path):
    """What an environment must hold for the project, read from ``[project]`` (iniconfig
    builds with hatch-vcs, which an offline check cannot run)."""
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\n'
        '[project]\nname = "Shop_Cart"\ndynamic = ["version"]\n'
        'dependencies = ["attrs>=22", "tomli; python_version < \'3.11\'"]\n'
        '[project.optional-dependencies]\ntest = ["pytest-mock", "shop-cart[fast]"]\n'
        'fast = ["orjson"]\n')
    assert static_requirements(tmp_path, ["test"]) == (
        "attrs>=22", "tomli; python_version < '3.11'", "pytest-mock")  # not itself
    assert static_requirements(tmp_path, []) == ("attrs>=22", "tomli; python_version < '3.11'")
    plan = PythonToolchain().install_plan(tmp_path)  # the recipe's extras: test
    assert plan.static == static_requirements(tmp_path, ["test"])
    assert " -e " not in plan.check() and "pytest-mock" in plan.check()


@pytest.mark.parametrize("pyproject", [
    "",  # setup.py only
    '[project]\nname = "x"\ndynamic = ["dependencies"]\n',
    '[project]\nname = "x"\ndynamic = ["optional-dependencies"]\n',
    '[tool.poetry]\nname = "x"\n',
])
def test_requirements_a_build_backend_computes_are_not_static(tmp_path, pyproject):
    (tmp_path / "pyproject.toml").write_text(pyproject)
    assert static_requirements(tmp_path, ["test"]) is None
