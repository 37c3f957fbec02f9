"""Per-test-file coverage of JavaScript and TypeScript runs (to be written)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import CoverageMap
from repogym.toolchains.javascript.project import Project

if TYPE_CHECKING:
    from repogym.toolchains.javascript import JavaScriptToolchain


def coverage_tools_steps(project: Project) -> list[str]:
    """Install steps for what the coverage runs need beyond the project's own tools."""
    return []


def coverage_map(toolchain: "JavaScriptToolchain", sandbox: Sandbox, project: Project, *,
                 timeout: float, select: Sequence[str] | None = None) -> CoverageMap | None:
    """Which test files execute which lines (None: not measurable here)."""
    return None
