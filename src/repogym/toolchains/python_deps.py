"""Test dependencies that the common Python tools declare outside the project's metadata.

Pure functions over a repository's files (or their parsed TOML). Nothing here installs
anything: :func:`best_effort_install` only formats the pip command the recipe runs.

What is read, for the group or environment names :data:`TEST_GROUPS` (``test``, ``tests``,
``testing``, ``dev``; Hatch also ``default`` and ``hatch-test``), names compared after
PEP 503 normalization (case, ``-``, ``_`` and ``.``):

* ``pyproject.toml`` ``[dependency-groups]`` (PEP 735): each group's requirement strings,
  with ``{include-group = "..."}`` entries expanded recursively. A missing or cyclic
  include is skipped; the rest of the group is kept.
* ``pyproject.toml`` ``[tool.poetry.group.<name>.dependencies]``, and the legacy
  ``[tool.poetry.dev-dependencies]`` (read as group ``dev``). Poetry's constraints become
  PEP 508 strings (see :func:`poetry_requirement`). Skipped: the ``python``
  pseudo-dependency, ``path``, ``git`` and ``url`` sources and ``develop`` entries, and
  whatever PEP 508 cannot express, such as ``||`` in a version.
* ``pyproject.toml`` ``[tool.pdm.dev-dependencies]``: PEP 508 strings, kept as they are.
  Skipped: ``-e`` editable entries and ``${...}`` paths.
* ``[tool.hatch.envs.<env>]`` in ``pyproject.toml``, and ``[envs.<env>]`` in ``hatch.toml``:
  the ``dependencies`` and ``extra-dependencies`` lists. Only plain requirement strings are
  kept; ones with ``{...}`` context formatting are skipped.

Every source also skips a requirement on the project itself (``project.name`` or
``tool.poetry.name``), because pip would replace the working copy with a PyPI release.
A string that is not valid PEP 508 is skipped too. Skipped entries are kept with their
reason in :attr:`DeclaredDeps.skipped`, and a file that is not valid TOML is named in
:attr:`DeclaredDeps.problems`: reading never fails the build.
"""

from __future__ import annotations

import configparser
import re
import shlex
import tomllib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

TEST_GROUPS = ("test", "tests", "testing", "dev")
HATCH_ENVS = (*TEST_GROUPS, "default", "hatch-test")
HATCH_DEP_KEYS = ("dependencies", "extra-dependencies")
POETRY_NON_INDEX_KEYS = ("path", "git", "url", "develop")


class Source(StrEnum):
    """The table a test dependency was declared in."""

    PEP735 = "dependency-groups"
    POETRY = "poetry"
    PDM = "pdm"
    HATCH = "hatch"


TOOL_SOURCES = (Source.POETRY, Source.PDM, Source.HATCH)  # tables pip cannot install itself


@dataclass(frozen=True)
class Declared:
    """A usable test dependency: a PEP 508 requirement string and where it was declared."""

    requirement: str
    source: Source
    group: str  # the group or environment name, as written


@dataclass(frozen=True)
class Skipped:
    """A declared entry that is not installed from an index, with the reason."""

    entry: str  # the entry as written (a table as its TOML-ish repr)
    source: Source
    group: str
    reason: str


Item = Declared | Skipped


@dataclass(frozen=True)
class DeclaredDeps:
    """Everything :func:`declared_test_deps` found, in declaration order."""

    found: tuple[Declared, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    problems: tuple[str, ...] = ()  # files that could not be read

    def requirements(self, *sources: Source, group: str | None = None) -> list[str]:
        """Requirement strings from ``sources`` (every source if none), optionally of one
        ``group`` (normalized name), in order and without duplicates."""
        picked = (d for d in self.found if not sources or d.source in sources)
        if group is not None:
            picked = (d for d in picked if normalize(d.group) == normalize(group))
        return list(dict.fromkeys(d.requirement for d in picked))


class Unconvertible(ValueError):
    """An entry with no PEP 508 equivalent (or one not installed from an index).

    Raised by the conversion functions; :func:`declared_test_deps` turns it into a
    :class:`Skipped` entry, so it never escapes reading a repository.
    """


def normalize(name: str) -> str:
    """PEP 503 normalization, used for package, group and environment names alike."""
    return re.sub(r"[-_.]+", "-", name).lower()


# -- reading a repository ------------------------------------------------------------------


def declared_test_deps(repo: Path) -> DeclaredDeps:
    """The test dependencies declared in ``repo``'s ``pyproject.toml`` and ``hatch.toml``."""
    problems: list[str] = []
    pyproject = _load_toml(repo / "pyproject.toml", problems)
    hatch_toml = _load_toml(repo / "hatch.toml", problems)
    deps = from_pyproject(pyproject, hatch_toml)
    return DeclaredDeps(deps.found, deps.skipped, tuple(problems))


def from_pyproject(pyproject: dict[str, Any], hatch_toml: dict[str, Any] | None = None
                   ) -> DeclaredDeps:
    """The test dependencies in parsed ``pyproject.toml`` (and ``hatch.toml``) data."""
    tool = _table(pyproject.get("tool"))
    project = _project_name(pyproject)
    items: list[Item] = [
        *read_dependency_groups(_table(pyproject.get("dependency-groups"))),
        *read_poetry(_table(tool.get("poetry"))),
        *read_pdm(_table(tool.get("pdm"))),
        *read_hatch(_table(_table(tool.get("hatch")).get("envs"))),
        *read_hatch(_table(_table(hatch_toml).get("envs"))),
    ]
    return _collect(_without_self(items, project))


def _load_toml(path: Path, problems: list[str]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problems.append(f"{path.name}: not readable as TOML ({exc}); no test dependencies read")
        return {}


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def project_name(repo: Path) -> str | None:
    """The project's distribution name as declared (``pyproject.toml``'s ``[project]`` or
    Poetry table, else ``setup.cfg``'s ``[metadata]``), normalized; None when not declared
    statically (a ``setup.py`` computes it)."""
    name = _project_name(_load_toml(repo / "pyproject.toml", []))
    if name or not (repo / "setup.cfg").is_file():
        return name
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(repo / "setup.cfg", encoding="utf-8")
        declared = cfg.get("metadata", "name", fallback=None)
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    return normalize(declared) if declared and "%" not in declared and "{" not in declared \
        else None


def static_requirements(repo: Path, extras: Sequence[str]) -> tuple[str, ...] | None:
    """What installing the project with ``extras`` requires, read from ``pyproject.toml``'s
    ``[project]`` table (PEP 621) without running its build backend; None when that table
    does not declare it statically (no table, or ``dependencies`` or
    ``optional-dependencies`` listed as ``dynamic``). The project's own name (an extra that
    pulls in another) is left out."""
    project = _table(_load_toml(repo / "pyproject.toml", []).get("project"))
    dynamic = project.get("dynamic") or []
    if not project.get("name") or not isinstance(dynamic, list) or \
            {"dependencies", "optional-dependencies"} & set(dynamic):
        return None
    optional = _table(project.get("optional-dependencies"))
    found = [*(project.get("dependencies") or []),
             *(r for extra in extras for r in (optional.get(extra) or []))]
    name = normalize(str(project["name"]))
    try:
        return tuple(r for r in found if isinstance(r, str) and _req_name(r) != name)
    except InvalidRequirement:
        return None


def _project_name(pyproject: dict[str, Any]) -> str | None:
    name = _table(pyproject.get("project")).get("name") or \
        _table(_table(pyproject.get("tool")).get("poetry")).get("name")
    return normalize(name) if isinstance(name, str) else None


def _collect(items: Iterable[Item]) -> DeclaredDeps:
    items = list(items)
    return DeclaredDeps(found=tuple(i for i in items if isinstance(i, Declared)),
                        skipped=tuple(i for i in items if isinstance(i, Skipped)))


def _without_self(items: Iterable[Item], project: str | None) -> Iterator[Item]:
    for item in items:
        if isinstance(item, Declared) and project and _req_name(item.requirement) == project:
            yield Skipped(item.requirement, item.source, item.group,
                          "requires the project itself (pip would install a PyPI release)")
        else:
            yield item


def _req_name(requirement: str) -> str:
    return normalize(Requirement(requirement).name)


def _groups_named(table: dict[str, Any], names: Sequence[str]) -> Iterator[tuple[str, Any]]:
    """``(name as written, value)`` of the entries of ``table`` whose normalized name is
    one of ``names``."""
    wanted = {normalize(n) for n in names}
    for name, value in table.items():
        if normalize(name) in wanted:
            yield name, value


def _pep508(entry: object, source: Source, group: str) -> Item:
    """``entry`` kept if it is a valid PEP 508 string."""
    if not isinstance(entry, str):
        return Skipped(repr(entry), source, group, "not a requirement string")
    try:
        Requirement(entry)
    except InvalidRequirement as exc:
        return Skipped(entry, source, group, f"not a PEP 508 requirement: {exc}")
    return Declared(entry.strip(), source, group)


# -- PEP 735 dependency groups ---------------------------------------------------------------


def read_dependency_groups(groups: dict[str, Any]) -> Iterator[Item]:
    """The test groups of a ``[dependency-groups]`` table, includes expanded."""
    by_name = {normalize(k): (k, v) for k, v in groups.items()}
    for name, _ in _groups_named(groups, TEST_GROUPS):
        yield from _expand_group(by_name, name, (normalize(name),), top=name)


def _expand_group(by_name: dict[str, tuple[str, Any]], name: str, chain: tuple[str, ...],
                  top: str) -> Iterator[Item]:
    entries = by_name[normalize(name)][1]
    if not isinstance(entries, list):
        yield Skipped(repr(entries), Source.PEP735, top, f"group {name!r} is not a list")
        return
    for entry in entries:
        if not isinstance(entry, dict):
            yield _pep508(entry, Source.PEP735, top)
            continue
        included = entry.get("include-group")
        if set(entry) != {"include-group"} or not isinstance(included, str):
            yield Skipped(repr(entry), Source.PEP735, top, "unknown table entry")
        elif normalize(included) not in by_name:
            yield Skipped(repr(entry), Source.PEP735, top, f"no group named {included!r}")
        elif normalize(included) in chain:
            yield Skipped(repr(entry), Source.PEP735, top,
                          f"include cycle: {' -> '.join((*chain, normalize(included)))}")
        else:
            yield from _expand_group(by_name, included, (*chain, normalize(included)), top)


# -- Poetry ----------------------------------------------------------------------------------


def read_poetry(poetry: dict[str, Any]) -> Iterator[Item]:
    """The test groups of ``[tool.poetry]``: ``group.<name>.dependencies`` and the legacy
    ``dev-dependencies``."""
    for group, table in _groups_named(_table(poetry.get("group")), TEST_GROUPS):
        yield from _poetry_table(_table(_table(table).get("dependencies")), group)
    yield from _poetry_table(_table(poetry.get("dev-dependencies")), "dev")


def _poetry_table(deps: dict[str, Any], group: str) -> Iterator[Item]:
    for name, value in deps.items():
        if normalize(name) == "python":
            continue  # the interpreter constraint, not a package
        for one in value if isinstance(value, list) else [value]:  # multiple constraints
            try:
                yield Declared(poetry_requirement(name, one), Source.POETRY, group)
            except Unconvertible as exc:
                yield Skipped(f"{name} = {one!r}", Source.POETRY, group, str(exc))


def poetry_requirement(name: str, value: object) -> str:
    """A Poetry dependency (``name = "^1.2"`` or ``name = {version = ..., ...}``) as PEP 508.

    Table keys used: ``version``, ``extras``, ``python`` and ``platform`` (as markers), and
    ``markers``; other keys (``optional``, ``source``, ``allow-prereleases``) are ignored.

    Raises:
        Unconvertible: a ``path``/``git``/``url``/``develop`` source, or a constraint, name
            or marker PEP 508 cannot express.
    """
    table = {"version": value} if isinstance(value, str) else value
    if not isinstance(table, dict):
        raise Unconvertible(f"unsupported value {value!r}")
    source = next((k for k in POETRY_NON_INDEX_KEYS if k in table), None)
    if source:
        raise Unconvertible(f"not from an index ({source} dependency)")
    extras = _poetry_extras(table.get("extras"))
    spec = poetry_constraint(_str_or_none(table.get("version"), "version") or "*")
    markers = [m for m in (_python_marker(table.get("python")),
                           _platform_marker(table.get("platform")),
                           _str_or_none(table.get("markers"), "markers")) if m]
    marker = markers[0] if len(markers) == 1 else " and ".join(f"({m})" for m in markers)
    text = name + extras + spec + (f"; {marker}" if marker else "")
    try:
        Requirement(text)
    except InvalidRequirement as exc:
        raise Unconvertible(f"not a PEP 508 requirement: {exc}") from None
    return text


def _str_or_none(value: object, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise Unconvertible(f"{key} is not a string: {value!r}")
    return value.strip() or None


def _poetry_extras(extras: object) -> str:
    if extras is None:
        return ""
    if not isinstance(extras, list) or not all(isinstance(e, str) for e in extras):
        raise Unconvertible(f"extras is not a list of names: {extras!r}")
    return f"[{','.join(extras)}]" if extras else ""


def _python_marker(constraint: object) -> str | None:
    """A Poetry ``python`` constraint as a PEP 508 marker (None for any interpreter)."""
    text = _str_or_none(constraint, "python")
    if text is None:
        return None
    alternatives = []
    for part in text.split("||"):
        clauses = _poetry_clauses(part)
        if not clauses:
            return None  # "*": any interpreter
        alternatives.append(" and ".join(_python_clause(op, v) for op, v in clauses))
    if len(alternatives) == 1:
        return alternatives[0]
    return " or ".join(f"({a})" for a in alternatives)


def _python_clause(op: str, version: str) -> str:
    release = version.split(".")
    var = "python_full_version" if len(release) > 2 and release[2] != "*" else "python_version"
    return f'{var} {op} "{version}"'


def _platform_marker(platform: object) -> str | None:
    text = _str_or_none(platform, "platform")
    if text is None:
        return None
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", text):
        raise Unconvertible(f"platform {text!r} is not a plain platform name")
    return f'sys_platform == "{text}"'


_OPERATORS = ("~=", "==", "!=", ">=", "<=", ">", "<", "^", "~", "=")
_WILDCARD = re.compile(r"\d+(\.\d+)*\.\*")


def poetry_constraint(constraint: str) -> str:
    """A Poetry version constraint as a PEP 440 specifier set (``""`` for any version).

    ``^1.2`` -> ``>=1.2,<2.0``, ``^0.2.3`` -> ``>=0.2.3,<0.3.0``, ``~1.2`` -> ``>=1.2,<1.3``,
    ``~1`` -> ``>=1,<2``, ``*`` -> ``""``, ``1.2.3`` -> ``==1.2.3``, ``1.2.*`` -> ``==1.2.*``;
    ``>=``, ``<``, ``!=``, ``~=`` ... pass through; clauses separated by commas or spaces
    are all required.

    Raises:
        Unconvertible: ``||`` (PEP 440 has no "or"), or a clause that is not a version.
    """
    return ",".join(op + version for op, version in _poetry_clauses(constraint))


def _poetry_clauses(constraint: str) -> list[tuple[str, str]]:
    """``(operator, version)`` pairs, in order, each a valid PEP 440 specifier."""
    if "||" in constraint:
        raise Unconvertible(f"{constraint!r}: PEP 440 cannot express '||'")
    text = re.sub(r"(~=|==|!=|>=|<=|>|<|\^|~|=)\s+", r"\1", constraint.strip())
    clauses = [c for part in re.split(r"[,\s]+", text) if part and part != "*"
               for c in _poetry_clause(part)]
    try:
        SpecifierSet(",".join(op + version for op, version in clauses))
    except InvalidSpecifier:
        raise Unconvertible(f"{constraint!r} is not a version constraint") from None
    return clauses


def _poetry_clause(part: str) -> list[tuple[str, str]]:
    op = next((o for o in _OPERATORS if part.startswith(o)), "")
    version = part[len(op):]
    if op in ("", "=", "==") and _WILDCARD.fullmatch(version):
        return [("==", version)]
    if op == "^":
        release = _release(version)
        return [(">=", version), ("<", _bump(release, _caret_index(release)))]
    if op == "~":
        release = _release(version)
        return [(">=", version), ("<", _bump(release, min(1, len(release) - 1)))]
    return [("==" if op in ("", "=") else op, version)]


def _release(version: str) -> tuple[int, ...]:
    try:
        return Version(version).release
    except InvalidVersion:
        raise Unconvertible(f"{version!r} is not a version") from None


def _caret_index(release: tuple[int, ...]) -> int:
    """The part a caret may not change: the first non-zero one (the last if all are 0)."""
    return next((i for i, n in enumerate(release) if n), len(release) - 1)


def _bump(release: tuple[int, ...], index: int) -> str:
    parts = [*release[:index], release[index] + 1, *[0] * (len(release) - index - 1)]
    return ".".join(map(str, parts))


# -- PDM and Hatch ---------------------------------------------------------------------------


def read_pdm(pdm: dict[str, Any]) -> Iterator[Item]:
    """The test groups of ``[tool.pdm.dev-dependencies]``."""
    for group, entries in _groups_named(_table(pdm.get("dev-dependencies")), TEST_GROUPS):
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, str) and entry.lstrip().startswith("-e"):
                yield Skipped(entry, Source.PDM, group, "editable (-e) entry")
            elif isinstance(entry, str) and "${" in entry:
                yield Skipped(entry, Source.PDM, group, "a local path (${...})")
            else:
                yield _pep508(entry, Source.PDM, group)


def read_hatch(envs: dict[str, Any]) -> Iterator[Item]:
    """``dependencies`` and ``extra-dependencies`` of the test environments of a Hatch
    ``envs`` table."""
    for env, table in _groups_named(envs, HATCH_ENVS):
        for key in HATCH_DEP_KEYS:
            entries = _table(table).get(key) or []
            for entry in entries if isinstance(entries, list) else [entries]:
                if isinstance(entry, str) and "{" in entry:
                    yield Skipped(entry, Source.HATCH, env, "uses {...} context formatting")
                else:
                    yield _pep508(entry, Source.HATCH, env)


# -- the install command ---------------------------------------------------------------------


def best_effort_install(requirements: Sequence[str]) -> str:
    """One shell command installing ``requirements``: all at once, or else one at a time,
    each one that fails reported and skipped, so the command itself always succeeds."""
    return f"{pip_install(requirements)} || {one_at_a_time(requirements)}"


def pip_install(requirements: Sequence[str]) -> str:
    """``python -m pip install -q`` with ``requirements`` shell-quoted."""
    return "python -m pip install -q " + " ".join(shlex.quote(r) for r in requirements)


def one_at_a_time(requirements: Sequence[str]) -> str:
    """A shell group installing each requirement alone; a failure is echoed, not fatal."""
    if not requirements:
        raise ValueError("one_at_a_time needs at least one requirement")
    quoted = " ".join(shlex.quote(r) for r in requirements)
    return ("{ echo 'repogym: installing test dependencies one at a time'; "
            f"for r in {quoted}; do python -m pip install -q \"$r\" "
            "|| echo \"repogym: could not install $r (skipped)\"; done; }")
