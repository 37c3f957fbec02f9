"""Install recipe detection from a repository's files."""

from pathlib import Path

import pytest

from repogym.errors import NoTestsError
from repogym.schemas.records import Checkout, RepoSpec
from repogym.toolchains.python import PythonToolchain, declared_extras, needed_plugins


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def checkout(root: Path) -> Checkout:
    return Checkout(spec=RepoSpec(source=str(root)), name="x", path=root, commit="a" * 40)


def test_pyproject_extras_are_installed_editable(tmp_path):
    write(tmp_path, {"pyproject.toml": '[project]\nname="x"\n[project.optional-dependencies]\n'
                     'tests=["pytest"]\ndocs=["sphinx"]\n', "tests/test_a.py": "import hypothesis\n"})
    steps = PythonToolchain().install_steps(tmp_path)
    assert any("-e '.[tests]'" in s for s in steps)
    assert any("hypothesis=hypothesis" in s for s in steps)
    assert steps[-1].endswith(" || python -m pip install -q --no-deps -e . || true")
    assert "distribution('x')" in steps[-1]  # skipped while x is still installed editable
    assert not any(" -U pip" in s for s in steps)  # the prepared layer holds a current pip
    assert not any("docs" in s for s in steps)


def test_setup_cfg_and_setup_py_extras(tmp_path):
    write(tmp_path, {"setup.cfg": "[options.extras_require]\ntesting = pytest\n",
                     "setup.py": "setup(extras_require={'test': ['mock']})\n"})
    assert {"testing", "test"} <= declared_extras(tmp_path)


def test_requirements_only_repo(tmp_path):
    write(tmp_path, {"requirements.txt": "six\n", "requirements-dev.txt": "pytest\n",
                     "test_x.py": "def test(): pass\n"})
    steps = PythonToolchain().install_steps(tmp_path)
    assert "python -m pip install -q -r requirements.txt" in steps
    assert "python -m pip install -q -r requirements-dev.txt" in steps


def test_test_requirement_files_are_preferred_to_development_ones(tmp_path):
    # markupsafe before uv: requirements/dev.txt is tests.txt plus sphinx, mypy, tox and
    # pre-commit (and a PyPI pin of markupsafe itself)
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n",
                     "requirements/tests.txt": "pytest==7.4.4\n",
                     "requirements/dev.txt": "-r tests.txt\nsphinx==5.3.0\nx==2.1.4\n",
                     "requirements-dev.txt": "mypy\n", "tests/test_x.py": ""})
    steps = PythonToolchain().install_steps(tmp_path)
    assert "python -m pip install -q -r requirements/tests.txt" in steps
    assert not any("dev.txt" in s for s in steps)
    (tmp_path / "requirements/tests.txt").unlink()
    steps = PythonToolchain().install_steps(tmp_path)  # then the development ones
    assert {"python -m pip install -q -r requirements-dev.txt",
            "python -m pip install -q -r requirements/dev.txt"} <= set(steps)


def test_local_modules_are_not_pip_installed(tmp_path):
    write(tmp_path, {"setup.py": "", "mypkg/__init__.py": "", "tests/helpers.py": "",
                     "tests/test_a.py": "import mypkg\nimport helpers\nimport os\n"})
    assert "python -m pip install -q pytest pytest-cov" in PythonToolchain().install_steps(tmp_path)


def test_config_plugins_are_spotted():
    assert needed_plugins("[tool:pytest]\naddopts = --cov=x -n auto\ntimeout = 5\n") == [
        "pytest-cov", "pytest-xdist", "pytest-timeout"]


def test_repo_without_tests_is_bad_input(tmp_path):
    write(tmp_path, {"setup.py": "", "pkg/__init__.py": ""})
    with pytest.raises(NoTestsError, match="no test files"):
        PythonToolchain().env_spec(checkout(tmp_path), "base")


@pytest.mark.parametrize("path,is_test", [
    ("tests/test_a.py", True), ("pkg/test_a.py", True), ("pkg/a_test.py", True),
    ("conftest.py", True), ("testing/util.py", True), ("pkg/core.py", False),
    ("pkg/attest.py", False),
])
def test_is_test_file(path, is_test):
    assert PythonToolchain().is_test_file(path) is is_test


def test_env_spec_digest_changes_with_recipe(tmp_path):
    write(tmp_path, {"setup.py": "", "tests/test_a.py": ""})
    a = PythonToolchain().env_spec(checkout(tmp_path), "base")
    b = a.model_copy(update={"install_steps": a.install_steps + ("echo",)})
    assert a.digest() == PythonToolchain().env_spec(checkout(tmp_path), "base").digest()
    assert a.digest() != b.digest()


def test_sdist_version_is_pretended_for_setuptools_scm(tmp_path):
    write(tmp_path, {"pyproject.toml": '[project]\nname="x"\n', "PKG-INFO": "Name: x\nVersion: 2.3.1\n",
                     "tests/test_a.py": ""})
    steps = PythonToolchain().install_steps(tmp_path)
    assert all(s.startswith("export SETUPTOOLS_SCM_PRETEND_VERSION=2.3.1; ") for s in steps)


@pytest.mark.parametrize("name, editable", [("repogym", True), ("pytest", False),
                                            ("repogym-not-installed", False)])
def test_the_reinstall_runs_only_when_the_project_is_no_longer_editable(tmp_path, name,
                                                                        editable):
    """The recipe's last step reinstalls the working copy only when the test tools replaced
    it; the check is run here by this interpreter, in whose environment repogym is an
    editable install and pytest a regular one."""
    import subprocess
    import sys

    from repogym.toolchains.python import _still_editable

    write(tmp_path, {"pyproject.toml": f'[project]\nname = "{name}"\n'})
    check = _still_editable(tmp_path)
    assert check.endswith(" || ")
    code = check.removesuffix(" || ").replace("python -I", f"{sys.executable} -I", 1)
    ran = subprocess.run(["bash", "-c", code], cwd=tmp_path)
    assert (ran.returncode == 0) is editable


def test_no_check_without_a_static_name(tmp_path):
    from repogym.toolchains.python import _still_editable

    write(tmp_path, {"setup.py": "from setuptools import setup\nsetup(name='x' + 'y')\n"})
    assert _still_editable(tmp_path) == ""
    write(tmp_path, {"setup.cfg": "[metadata]\nname = Cfg_Name\n"})
    assert "distribution('cfg-name')" in _still_editable(tmp_path)
