"""Per-language knowledge. Importing this package registers the built-in toolchains."""

from repogym.toolchains.base import TOOLCHAINS, Toolchain, detect_toolchain, toolchain_for
from repogym.toolchains.go import GoToolchain
from repogym.toolchains.java import JavaToolchain as JavaToolchain
from repogym.toolchains.javascript import JavaScriptToolchain
from repogym.toolchains.python import PythonToolchain
from repogym.toolchains.rust import RustToolchain

__all__ = ["TOOLCHAINS", "Toolchain", "GoToolchain", "JavaScriptToolchain", "PythonToolchain", "RustToolchain", "detect_toolchain", "toolchain_for"]
