"""Whether every distribution installed has what it requires installed (markers evaluated,
extras followed), except requirements on the project itself: exit 0 when so, else 1 with
the first one unmet on stdout.

Run in the work tree of an environment (``python -I -c``). The recipe installs the test
tools after the project and then puts the project back (``pip install --no-deps -e .``):
when a tool requires the project (pytest requires iniconfig), the environment ends up with
the project as its tree has it, whatever version the tool asks for. So where pip cannot
resolve the tools against what is installed (iniconfig 0.2 at an old commit, pytest's
``iniconfig>=2``), what the check asks instead is this: everything installed is complete
but for the project. The project is every distribution installed in editable mode from
this directory.
"""

import json
import os
import sys
from importlib import metadata

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # not installed: pip's own copy
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[assignment]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[assignment]


def project_names(tree):
    """The distributions installed in editable mode from ``tree``."""
    url = "file://" + os.path.realpath(tree)
    names = set()
    for dist in metadata.distributions():
        try:
            info = json.loads(dist.read_text("direct_url.json") or "{}")
        except ValueError:
            continue
        if info.get("dir_info", {}).get("editable") and info.get("url", "").rstrip("/") == url:
            names.add(canonicalize_name(dist.metadata["Name"] or ""))
    return names


def unmet(skip):
    """The first requirement of an installed distribution not met by what is installed."""
    todo = [Requirement(dist.metadata["Name"]) for dist in metadata.distributions()
            if dist.metadata["Name"]]
    seen = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in skip:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            return f"{req} is not installed"
        if req.specifier and not req.specifier.contains(dist.version, prereleases=True):
            return f"{req} is not met by {req.name} {dist.version}"
        key = (name, frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        for raw in dist.requires or ():
            try:
                sub = Requirement(raw)
                wanted = sub.marker is None or any(sub.marker.evaluate({"extra": extra})
                                                   for extra in ("", *req.extras))
            except Exception as exc:  # metadata packaging cannot read: not known to be met
                return f"{req.name} requires {raw!r}, which cannot be read ({exc})"
            if wanted:
                todo.append(sub)
    return None


def main():
    why = unmet(project_names(os.getcwd()))
    if why:
        print(why)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
