"""Sample repositories from PyPI source distributions, turned into git repos.

``pip download --no-deps --no-binary :all: NAME`` fetches the sdist; it is unpacked with
``--no-same-owner`` (as root, tar would keep the archive's foreign owners and git would
then refuse the repository as of "dubious ownership") and committed as one commit.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from repogym.errors import SourceError

SAMPLES = ("inflection", "iniconfig", "isodate", "python-slugify", "text-unidecode", "markupsafe")
_GIT_ID = ["-c", "user.name=repogym", "-c", "user.email=repogym@localhost"]


def sample_repo(name: str, root: Path, version: str | None = None) -> Path:
    """A git repository of the sdist of PyPI package ``name`` under ``root`` (reused if there).

    Raises:
        SourceError: the sdist cannot be downloaded or unpacked.
    """
    dest = root / (f"{name}-{version}" if version else name)
    if (dest / ".git").is_dir():
        return dest
    with tempfile.TemporaryDirectory() as tmp:
        sdist = _download(name, version, Path(tmp))
        unpacked = _unpack(sdist, Path(tmp) / "src")
        staging = dest.with_name(dest.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(unpacked, staging)
    _git(staging, "init", "-q", "-b", "main")
    _git(staging, "add", "-A", "-f")
    _git(staging, *_GIT_ID, "commit", "-q", "-m", f"{name} sdist")
    staging.rename(dest)
    return dest


def _download(name: str, version: str | None, into: Path) -> Path:
    req = f"{name}=={version}" if version else name
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "-d", str(into), req], capture_output=True, text=True)
    files = sorted(into.glob("*.tar.gz"))
    if proc.returncode != 0 or not files:
        last = (proc.stderr.strip().splitlines() or ["no sdist found"])[-1]
        raise SourceError(f"sample {req}: cannot download its sdist: {last}")
    return files[0]


def _unpack(sdist: Path, into: Path) -> Path:
    into.mkdir()
    subprocess.run(["tar", "-xzf", str(sdist), "--no-same-owner", "-C", str(into)], check=True)
    tops = [p for p in into.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise SourceError(f"{sdist.name}: unexpected layout ({len(tops)} top-level folders)")
    return tops[0]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

