"""Prints, as JSON, everything about the test runner that grading depends on, as this
environment has it: the interpreter, the runner and its plugins as installed, start-up
hooks, and the runner's configuration and conftests as the work tree (cwd) has them.

Run in a sandbox (``python repogym_setup.py``): the standard library only. Two states that
print the same describe the same test setup, so a probe of the verifier against one says
the same of the other (:mod:`repogym.judges.probe_sets`). Only what can change how tests
are collected and graded is included: a version bump in ``pyproject.toml`` is not, its
``[tool.pytest*]`` tables are.
"""

import configparser
import json
import os
import subprocess
import sys
import sysconfig

try:
    import tomllib
except ImportError:  # Python < 3.11: the whole file stands for its tables
    tomllib = None  # type: ignore[assignment]

WHOLE = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini")
SECTIONS = {"tox.ini": ("pytest", "tool:pytest"), "setup.cfg": ("tool:pytest", "pytest")}
EDITABLE = "__editable__"  # the project's own editable install: the recipe's, not the setup's


def _runner_dists():
    from importlib import metadata

    out = []
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        plugin = any(ep.group == "pytest11" for ep in dist.entry_points)
        if name in ("pytest", "pluggy") or name.startswith("pytest-") or plugin:
            out.append("%s==%s%s" % (name, dist.version, " (pytest11)" if plugin else ""))
    return sorted(set(out))


def _hooks():
    out = []
    for folder in sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.startswith(EDITABLE) or not (
                    name.endswith(".pth") or name in ("sitecustomize.py", "usercustomize.py")):
                continue
            out.append([name, _read(os.path.join(folder, name))])
    return out


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return None


def _tracked(patterns):
    done = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                           "--", *patterns], capture_output=True)
    return sorted(p for p in done.stdout.decode("utf-8", "replace").split("\0") if p)


def _config(path):
    """What pytest reads of a configuration file; None when it reads nothing there (a
    ``tox.ini`` without a ``[pytest]`` section is no pytest configuration at all, while
    any ``pytest.ini`` is, even an empty one)."""
    text = _read(path)
    base = os.path.basename(path)
    if text is None or base in WHOLE or os.path.dirname(path):
        return text
    if base == "pyproject.toml" and tomllib is not None:
        try:
            tables = tomllib.loads(text).get("tool", {}).get("pytest")
        except (tomllib.TOMLDecodeError, AttributeError):
            return text
        return None if tables is None else json.dumps(tables, sort_keys=True)
    if base in SECTIONS:
        parser = configparser.RawConfigParser()
        try:
            parser.read_string(text)
        except configparser.Error:
            return text
        found = {s: dict(parser.items(s)) for s in SECTIONS[base] if parser.has_section(s)}
        return json.dumps(found, sort_keys=True) if found else None
    return text


def main():
    names = list(WHOLE) + ["pyproject.toml"] + list(SECTIONS)
    configs = {p: text for p in _tracked(names) if "/" not in p
               and (text := _config(p)) is not None}
    conftests = {p: _read(p) for p in _tracked(["conftest.py", "*/conftest.py"])}
    json.dump({"python": sys.version, "runner": _runner_dists(), "hooks": _hooks(),
               "config": configs, "conftests": conftests}, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main()
