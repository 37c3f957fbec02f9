"""Python projects with C extensions get the C build layer (gcc, python3-dev): the extension
compiles, the project installs in editable mode, and its tests run on the working tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.toolchains.python_build import LAYER_NAME, builds_c, c_build_layer

SETUP = """from setuptools import Extension, setup

setup(name="cext", version="1.0", packages=["cext"], package_dir={"": "src"},
      ext_modules=[Extension("cext._fast", ["src/cext/_fast.c"])])
"""
FAST_C = """#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *twice(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLong(2 * n);
}

static PyMethodDef methods[] = {{"twice", twice, METH_O, "2 * n"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
"""
C_PROJECT = {
    "setup.py": SETUP,
    "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\n'
                      'build-backend = "setuptools.build_meta"\n',
    "src/cext/__init__.py": "from cext._fast import twice\n\n\ndef quad(n):\n"
                            "    return twice(twice(n))\n",
    "src/cext/_fast.c": FAST_C,
    "tests/test_cext.py": "import cext\n\n\ndef test_quad():\n    assert cext.quad(3) == 12\n\n\n"
                          "def test_the_working_tree_is_imported():\n"
                          "    assert '/site-packages/' not in cext.__file__\n",
}


def test_builds_c_reads_the_setup_script_and_the_sources(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "helper.c").write_text("int x;\n")  # a test's C file: not the project
    assert not builds_c(tmp_path)
    (tmp_path / "setup.py").write_text(SETUP)
    assert builds_c(tmp_path)
    (tmp_path / "setup.py").unlink()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "speed.pyx").write_text("def f(): pass\n")
    assert builds_c(tmp_path)


def test_only_projects_that_build_c_get_the_layer(make_git_repo) -> None:
    from repogym.schemas.records import Checkout, RepoSpec
    from repogym.toolchains.python import PythonToolchain

    def checkout_local(path: Path) -> Checkout:
        return Checkout(spec=RepoSpec(source=str(path)), name=path.name, path=path,
                        commit="0" * 40)

    plain = make_git_repo({"pkg/__init__.py": "", "tests/test_x.py": "def test_x(): pass\n"},
                          name="plain")
    with_c = make_git_repo(C_PROJECT, name="cext")
    tc = PythonToolchain()
    assert tc.env_spec(checkout_local(plain), "base").layer is None
    layer = tc.env_spec(checkout_local(with_c), "base").layer
    assert layer is not None and layer.name == LAYER_NAME == c_build_layer().name
    assert "python3-dev" in layer.script and "gcc" in layer.script


@pytest.mark.docker
@pytest.mark.slow
def test_a_c_extension_compiles_and_the_tests_run_on_the_working_tree(make_git_repo, base_image,
                                                                      tmp_path):
    from repogym.baseline import record_baseline
    from tests.conftest import build_tiny_env

    src = make_git_repo(C_PROJECT, name="cext")
    tiny = build_tiny_env("docker", src, tmp_path / "out")
    with tiny.provider.open(tiny.env) as sandbox:
        base = record_baseline(sandbox, tiny.toolchain, repo=tiny.checkout.name,
                               commit=tiny.checkout.commit, image=tiny.env.ref, runs=1)
    assert sorted(base.passing) == ["tests/test_cext.py::test_quad",
                                    "tests/test_cext.py::test_the_working_tree_is_imported"]
