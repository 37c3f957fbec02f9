"""A task's ``language`` names the toolchain that grades it."""

from __future__ import annotations

import pytest

from repogym.datasets.verify import verify
from repogym.errors import UnknownPluginError
from repogym.grading import GradingSpec
from repogym.toolchains import PythonToolchain, toolchain_for


def test_the_language_column_finds_its_toolchain() -> None:
    assert isinstance(toolchain_for("python"), PythonToolchain)
    assert PythonToolchain.language == "python"


def test_a_task_in_a_language_without_a_toolchain_is_bad_input_before_any_sandbox() -> None:
    spec = GradingSpec(instance_id="x", image="no-such-image", language="cobol",
                       base_commit="0" * 40, bug_patch="", test_patch="",
                       FAIL_TO_PASS=("t",), PASS_TO_PASS=())
    with pytest.raises(UnknownPluginError, match="unknown toolchain language 'cobol'.*python"):
        verify(spec, "", provider="no-such-provider")
