"""The C build layer for Python projects with extension modules: ``gcc``, the C library
headers and Python's own headers (``python3-dev``) from the base image's Debian release.

The base image has no compiler. A project whose package includes a C extension (MarkupSafe's
``_speedups``, a Cython module) then installs without it -- or not at all: MarkupSafe's
setup falls back to a plain build that fails as an editable install, pip installs a copy
into site-packages, the tests import that copy and not the working tree, and no bug in the
tree can show. The layer is added only to environments of projects that build C code
(:func:`builds_c`), so others keep their images.
"""

from __future__ import annotations

import re
from pathlib import Path

from repogym.schemas.records import ImageLayer

LAYER_NAME = "python-cbuild"
C_SUFFIXES = frozenset({".c", ".cc", ".cpp", ".cxx", ".pyx"})
SKIP = frozenset({".git", ".tox", ".nox", ".venv", "venv", "node_modules", "build", "dist",
                  "docs", "doc", "examples", "benchmarks", "tests", "test"})
_EXTENSION = re.compile(r"\b(?:Extension|cythonize|ext_modules)\s*[(=]")

_SCRIPT = r"""set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
ca=/etc/ssl/certs/ca-certificates.crt
cp -p "$ca" /tmp/repogym-ca.crt  # the host's bundle: apt's triggers would rebuild Debian's
apt-get update -qq
apt-get install -y -qq --no-install-recommends gcc g++ libc6-dev python3-dev >/dev/null
rm -rf /var/lib/apt/lists/*
cp -p /tmp/repogym-ca.crt "$ca" && rm -f /tmp/repogym-ca.crt
gcc --version | head -1
"""


def builds_c(repo: Path) -> bool:
    """Whether the project compiles C: its setup script declares extension modules, or its
    code (not tests, docs or vendored trees) holds C/C++/Cython sources."""
    setup = repo / "setup.py"
    try:
        if setup.is_file() and _EXTENSION.search(setup.read_text(errors="replace")):
            return True
    except OSError:
        pass
    for path in repo.rglob("*"):
        if path.suffix in C_SUFFIXES and path.is_file():
            parts = path.relative_to(repo).parts
            if not SKIP.intersection(p.lower() for p in parts[:-1]):
                return True
    return False


def c_build_layer() -> ImageLayer:
    """The layer with ``gcc`` and ``python3-dev`` over the base image."""
    return ImageLayer(name=LAYER_NAME, script=_SCRIPT,
                      host_check="command -v gcc >/dev/null && python3 -c \"import sysconfig, "
                                 "os, sys; sys.exit(not os.path.exists(os.path.join("
                                 "sysconfig.get_paths()['include'], 'Python.h')))\"")


__all__ = ["LAYER_NAME", "builds_c", "c_build_layer"]
