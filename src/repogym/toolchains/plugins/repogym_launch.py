"""Starts pytest for repogym, with its configuration pinned to the committed tree.

    python <this file> <report plugin module> [pytest arguments...]

1. The report plugin is imported first, before pytest loads any plugin, conftest or
   project module: its snapshot of the runner must see the runner as installed.
2. The work tree goes on ``sys.path`` only then (``python -m pytest`` puts it first), so a
   module a patch adds at the repository's root cannot stand in for pytest or for what the
   plugin imports.
3. pytest runs with ``-c FILE --rootdir ROOT``: ROOT is the working directory (the work
   tree) and FILE the configuration file the *installed* pytest would read there, chosen
   among the files committed at ``HEAD`` -- the names and their order come from pytest
   itself (``CONFIG_LOADERS_BY_NAME``; older versions: their documented list). A
   configuration file that only the work tree has (a patch added ``pytest.toml``, say) is
   never read, since pytest looks for no other file once ``-c`` is given. Without any,
   FILE is ``os.devnull`` (no configuration) and ROOT still the work tree.

``pinned_args(root)`` is also what repogym's warm runner passes to each forked run.
This file runs inside the sandbox with the standard library and pytest only.
"""

import os
import subprocess
import sys

NAMES_BEFORE_9 = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
NAMES_9 = ("pytest.toml", ".pytest.toml")


def config_names():
    """The configuration files the installed pytest reads, in its order of precedence."""
    try:
        from _pytest.config.findpaths import CONFIG_LOADERS_BY_NAME
    except ImportError:
        import pytest

        major = int(pytest.__version__.split(".")[0])
        return (NAMES_9 if major >= 9 else ()) + NAMES_BEFORE_9
    return tuple(CONFIG_LOADERS_BY_NAME)


def committed(root, names):
    """Which of ``names`` are committed at HEAD.

    Raises:
        SystemExit: git cannot say (no work tree, no git): the run stops rather than read a
            configuration file nobody committed.
    """
    try:
        res = subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c",
                              "safe.directory=*", "ls-tree", "--name-only", "HEAD", "--",
                              *names], cwd=root, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SystemExit(f"repogym: cannot read the committed tree: {exc}") from None
    if res.returncode != 0:
        raise SystemExit("repogym: cannot read the committed tree: "
                         + res.stderr.decode("utf-8", "replace").strip()[-300:])
    return {line for line in res.stdout.decode("utf-8", "replace").splitlines() if line}


def holds_config(path):
    """Whether pytest reads configuration from this file (it skips e.g. a setup.cfg
    without ``[tool:pytest]``)."""
    from pathlib import Path

    try:
        from _pytest.config.findpaths import load_config_dict_from_file
    except ImportError:
        return True
    return load_config_dict_from_file(Path(path)) is not None


def pinned_config(root):
    """The configuration file pytest would read in ``root``, from committed files only."""
    names = config_names()
    present = committed(root, names)
    files = [name for name in names if name in present
             and os.path.isfile(os.path.join(root, name))]
    for name in files:
        if holds_config(os.path.join(root, name)):
            return os.path.join(root, name)
    if "pyproject.toml" in files:  # pytest roots at a pyproject.toml even without a table
        return os.path.join(root, "pyproject.toml")
    return os.devnull


def pinned_args(root):
    return ["-c", pinned_config(root), f"--rootdir={root}"]


def main(argv):
    plugin, args = argv[1], argv[2:]
    root = os.getcwd()
    __import__(plugin)
    import pytest

    sys.path.insert(0, root)
    raise SystemExit(pytest.main(pinned_args(root) + ["-p", plugin] + args))


if __name__ == "__main__":
    main(sys.argv)
