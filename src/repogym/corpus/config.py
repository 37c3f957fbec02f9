"""The corpus file: the repositories a corpus run turns into tasks, one ``[[repo]]`` each.

Format (TOML; default ``corpus.toml`` in the working directory, or ``$REPOGYM_CORPUS``)::

    [defaults]                      # optional; applied to every repo below
    generators = ["procedural", "mined"]
    max_candidates = 20
    labels = ["python"]

    [[repo]]
    name = "tinycalc"               # optional; default derived from the source (unique)
    source = "../tinycalc"          # a git URL or a local path (relative to this file)
    branch = "main"                 # optional; used when no commit is pinned
    commit = "3f2a9c1"              # optional pin (a sha or tag); default: the branch's head
    mine_last = 50                  # mining range: last N commits ...
    since = "2024-01-01"            # ... and/or committed since a date ...
    range = "v1.0..HEAD"            # ... and/or in a revision range (all that are set hold)
    generators = ["mined"]          # a subset of repogym.generators.GENERATOR_NAMES
    max_candidates = 10             # budgets: synthetic candidates per generator,
    max_mined = 10                  #   mined candidates,
    max_combined = 2                #   combinations of accepted bugs
    labels = ["small"]

    [[repo]]
    sample = "iniconfig==2.0.0"     # instead of source: a PyPI sdist made into a git repo

Every ``[defaults]`` key may appear in a repo; the repo's value replaces the default, except
``labels``, which are the defaults' labels followed by the repo's own. Unknown keys, duplicate
names, unknown generators, local paths that do not exist (or are not git repositories) and bad
TOML are :class:`~repogym.errors.ConfigError`\\ s naming the file, the repo and the key.

repogym writes this file (``repogym corpus add|remove``) in one canonical layout, atomically,
under a lock on its folder; comments are not kept. The models here are the *raw* file; the
corpus flow works on :meth:`CorpusConfig.entries`, which has the defaults applied and every
name and local path resolved.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tomllib
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional

import git
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from repogym.config import Settings
from repogym.errors import ConfigError
from repogym.files import atomic_write
from repogym.repos import is_url, repo_name
from repogym.schemas.records import Record, RepoSpec

DEFAULT_CORPUS_FILE = Path("corpus.toml")
CORPUS_ENV = "REPOGYM_CORPUS"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")
SAMPLE_RE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:==(?P<version>[A-Za-z0-9.+!_-]+))?$")
KEY_ORDER = ("name", "source", "sample", "branch", "commit", "mine_last", "since", "range",
             "generators", "max_candidates", "max_mined", "max_combined", "labels")
_HEADER = ("# repogym corpus: the repositories a corpus run turns into tasks.\n"
           "# Edited by `repogym corpus add|remove`; comments are not kept.\n")


def default_corpus_path() -> Path:
    """``$REPOGYM_CORPUS`` if set, else ``corpus.toml`` in the working directory."""
    return Path(os.environ.get(CORPUS_ENV) or DEFAULT_CORPUS_FILE)


def known_generators() -> tuple[str, ...]:
    """The generator names a corpus may use (:data:`repogym.generators.GENERATOR_NAMES`)."""
    from repogym.generators import GENERATOR_NAMES

    return GENERATOR_NAMES


def _dedup(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _context_dir(info: ValidationInfo) -> Path:
    ctx = info.context or {}
    return Path(ctx.get("base_dir") or Path.cwd())


class RepoDefaults(BaseModel):
    """The keys of a ``[defaults]`` table; every repo entry has them too (all optional)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    branch: Optional[StrictStr] = None
    mine_last: Optional[StrictInt] = Field(None, gt=0)
    since: Optional[StrictStr] = None
    rev_range: Optional[StrictStr] = Field(None, alias="range")
    generators: Optional[list[StrictStr]] = None
    max_candidates: Optional[StrictInt] = Field(None, ge=0)
    max_mined: Optional[StrictInt] = Field(None, ge=0)
    max_combined: Optional[StrictInt] = Field(None, ge=0)
    labels: list[StrictStr] = Field(default_factory=list)

    @field_validator("since", mode="before")
    @classmethod
    def _since_text(cls, value: object) -> object:
        """TOML reads ``since = 2024-01-01`` as a date; keep it as ISO text for git."""
        return value.isoformat() if isinstance(value, (date, datetime)) else value

    @field_validator("branch", "since", "rev_range")
    @classmethod
    def _one_word(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and (not value.strip() or value != value.strip()):
            raise ValueError("must be non-empty, without leading or trailing spaces")
        return value

    @field_validator("generators")
    @classmethod
    def _known_generators(cls, value: Optional[list[str]]) -> Optional[list[str]]:
        if value is None:
            return None
        valid = known_generators()
        unknown = [g for g in value if g not in valid]
        if unknown:
            raise ValueError(f"unknown generator(s) {', '.join(repr(u) for u in unknown)}; "
                             f"valid: {', '.join(valid)}")
        if not value:
            raise ValueError(f"give at least one generator; valid: {', '.join(valid)}")
        return _dedup(value)

    @field_validator("labels")
    @classmethod
    def _clean_labels(cls, value: list[str]) -> list[str]:
        if any(not v.strip() or v != v.strip() for v in value):
            raise ValueError("labels must be non-empty, without leading or trailing spaces")
        return _dedup(value)

    def to_data(self) -> dict[str, Any]:
        """The set keys as the TOML file spells them, in canonical order (no empty lists)."""
        raw = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {k: raw[k] for k in KEY_ORDER if k in raw and raw[k] != []}


class RepoEntry(RepoDefaults):
    """One ``[[repo]]``: exactly one of ``source`` and ``sample``, plus any default's keys."""

    name: Optional[StrictStr] = None
    source: Optional[StrictStr] = None
    sample: Optional[StrictStr] = None
    commit: Optional[StrictStr] = None

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not NAME_RE.match(value):
            raise ValueError(f"{value!r} is not a valid name: use lowercase letters, digits, "
                             "'_', '.', '-' (starting with a letter or digit, at most 100)")
        return value

    @field_validator("commit")
    @classmethod
    def _commit_word(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and (not value or any(c.isspace() for c in value)):
            raise ValueError("must be a non-empty revision without spaces")
        return value

    @field_validator("sample")
    @classmethod
    def _sample_spec(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not SAMPLE_RE.match(value):
            raise ValueError(f"{value!r} is not a PyPI name (NAME or NAME==VERSION)")
        return value

    @model_validator(mode="after")
    def _one_source(self, info: ValidationInfo) -> "RepoEntry":
        if (self.source is None) == (self.sample is None):
            raise ValueError("give exactly one of 'source' (git URL or path) and 'sample' "
                             "(PyPI name)")
        if self.source is not None and (info.context or {}).get("check_paths", True):
            _check_local(self.source, _context_dir(info))
        return self

    @property
    def is_local(self) -> bool:
        """Whether ``source`` is a local path (not a URL, not a sample)."""
        return self.source is not None and not is_url(self.source)

    def derived_name(self, base_dir: Path | None = None) -> str:
        """``name``, or the name the source implies (``owner__repo``, folder, PyPI name)."""
        if self.name is not None:
            return self.name
        if self.sample is not None:
            return repo_name(SAMPLE_RE.match(self.sample)["name"])  # type: ignore[index]
        assert self.source is not None
        if is_url(self.source):
            return repo_name(self.source)
        return repo_name(str(_resolve(self.source, base_dir or Path.cwd())))

    def source_spec(self) -> "RepoSpec | SampleSpec":
        """Where the repository is, without fetching anything: a :class:`RepoSpec`, or for a
        sample the :class:`SampleSpec` to fetch when the repository's run starts.

        ``commit`` is ``commit`` if pinned, else ``origin/<branch>`` (the branch's head at
        clone time; :func:`repogym.repos.clone` fetches every branch as ``origin/*``), else
        None (the source's HEAD). Call it on :meth:`CorpusConfig.entries` (local paths
        absolute, names set); on a raw entry a relative path is taken from the working
        directory.
        """
        commit = self.commit or (f"origin/{self.branch}" if self.branch else None)
        if self.sample is not None:
            return SampleSpec(requirement=self.sample, commit=commit, name=self.derived_name())
        assert self.source is not None
        source = str(_resolve(self.source, Path.cwd())) if self.is_local else self.source
        return RepoSpec(source=source, commit=commit, name=self.derived_name())

    def repo_spec(self, samples_dir: Path | None = None) -> RepoSpec:
        """What the pipeline clones: :meth:`source_spec`, a sample fetched first.

        Args:
            samples_dir: where sample sdists are unpacked (default ``Settings().cache_dir /
                "samples"``, as ``repogym run --sample`` does).

        Raises:
            SourceError: a sample's sdist cannot be downloaded or unpacked.
        """
        spec = self.source_spec()
        if isinstance(spec, SampleSpec):
            return spec.fetch(samples_dir or Settings().cache_dir / "samples")
        return spec

    def settings(self, base: Settings) -> Settings:
        """``base`` with this repo's generators, budgets and mining range (those set) applied."""
        update: dict[str, Any] = {
            "generators": tuple(self.generators) if self.generators is not None else None,
            "max_candidates": self.max_candidates, "max_mined": self.max_mined,
            "max_combined": self.max_combined, "mine_last": self.mine_last,
            "mine_since": self.since, "mine_range": self.rev_range}
        return base.model_copy(update={k: v for k, v in update.items() if v is not None})


class SampleSpec(Record):
    """A repository made from a PyPI sdist (:func:`repogym.samples.sample_repo`) when its
    run starts, so that a failed download fails that repository only.

    Attributes:
        requirement: ``NAME`` or ``NAME==VERSION``.
        name: the repository's name in the corpus.
        commit: a pin (as :attr:`RepoSpec.commit`); None for the sdist's one commit.
    """

    requirement: str
    name: str
    commit: str | None = None

    @field_validator("requirement")
    @classmethod
    def _pypi_name(cls, value: str) -> str:
        if not SAMPLE_RE.match(value):
            raise ValueError(f"{value!r} is not a PyPI name (NAME or NAME==VERSION)")
        return value

    @property
    def package(self) -> str:
        return SAMPLE_RE.match(self.requirement)["name"]  # type: ignore[index]

    @property
    def version(self) -> str | None:
        return SAMPLE_RE.match(self.requirement)["version"]  # type: ignore[index]

    def fetch(self, samples_dir: Path) -> RepoSpec:
        """The sdist as a git repository under ``samples_dir`` (reused when already there).

        Raises:
            SourceError: the sdist cannot be downloaded or unpacked.
        """
        from repogym.samples import sample_repo

        path = sample_repo(self.package, samples_dir, self.version)
        return RepoSpec(source=str(path), commit=self.commit, name=self.name)


def _resolve(source: str, base_dir: Path) -> Path:
    path = Path(source).expanduser()
    return (path if path.is_absolute() else base_dir / path).resolve()


def _check_local(source: str, base_dir: Path) -> None:
    if is_url(source):
        return
    path = _resolve(source, base_dir)
    if not path.exists():
        raise ValueError(f"source: no such path: {path}")
    try:
        git.Repo(path, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ValueError(f"source: not a git repository: {path}") from None


class CorpusConfig(BaseModel):
    """A whole corpus file: ``[defaults]`` and the ``[[repo]]`` entries, in file order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    defaults: RepoDefaults = Field(default_factory=RepoDefaults)
    repos: list[RepoEntry] = Field(default_factory=list, alias="repo")
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _origin: str = PrivateAttr(default="corpus")

    @model_validator(mode="after")
    def _unique_names(self, info: ValidationInfo) -> "CorpusConfig":
        self._base_dir = _context_dir(info)
        seen: dict[str, int] = {}
        for i, entry in enumerate(self.repos):
            name = entry.derived_name(self._base_dir)
            if name in seen:
                raise ValueError(f"duplicate repo name {name!r} (entries #{seen[name] + 1} and "
                                 f"#{i + 1}); set a distinct 'name' on one of them")
            seen[name] = i
        return self

    # -- reading ---------------------------------------------------------------------------
    @classmethod
    def load(cls, path: Path, *, check_paths: bool = True) -> "CorpusConfig":
        """Read and validate a corpus file.

        Args:
            path: the TOML file; relative local sources in it are relative to its folder.
            check_paths: also require every local source to exist and be a git repository.

        Raises:
            ConfigError: missing or unreadable file, bad TOML (with its line), or an invalid
                entry (naming the file, the repo and the key).
        """
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such corpus file (create it with "
                              "`repogym corpus add SOURCE`)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the corpus file: {exc}") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from None
        return cls.from_data(data, origin=str(path), base_dir=Path(path).parent.resolve(),
                             check_paths=check_paths)

    @classmethod
    def from_data(cls, data: Mapping[str, Any], *, origin: str = "corpus",
                  base_dir: Path | None = None, check_paths: bool = True) -> "CorpusConfig":
        """Validate parsed TOML (``{"defaults": {...}, "repo": [{...}, ...]}``).

        Raises:
            ConfigError: one line, ``<origin>: <where>: <what>`` for every problem found.
        """
        ctx = {"base_dir": base_dir or Path.cwd(), "check_paths": check_paths}
        try:
            config = cls.model_validate(dict(data), context=ctx)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, data, origin)) from None
        config._origin = origin
        return config

    @classmethod
    def load_or_empty(cls, path: Path, *, check_paths: bool = True) -> "CorpusConfig":
        """:meth:`load`, or an empty corpus (based in the file's folder) if there is no file."""
        if Path(path).exists():
            return cls.load(path, check_paths=check_paths)
        return cls.from_data({}, origin=str(path), base_dir=Path(path).parent.resolve())

    def names(self) -> list[str]:
        """Every repo's (derived) name, in file order."""
        return [e.derived_name(self._base_dir) for e in self.repos]

    def entries(self) -> list[RepoEntry]:
        """The repos as the corpus flow sees them: defaults applied, ``name`` set, local
        ``source`` absolute. ``labels`` = the defaults' then the repo's own (no repeats)."""
        return [self._resolved(e) for e in self.repos]

    def get(self, name: str) -> RepoEntry:
        """The resolved entry called ``name``.

        Raises:
            ConfigError: no such repo (the message lists the names).
        """
        for entry, key in zip(self.repos, self.names()):
            if key == name:
                return self._resolved(entry)
        raise ConfigError(f"{self._origin}: no repo named {name!r}; repos: "
                          f"{', '.join(self.names()) or '(none)'}")

    def _resolved(self, entry: RepoEntry) -> RepoEntry:
        merged = {**self.defaults.to_data(), **entry.to_data()}
        merged["labels"] = _dedup([*self.defaults.labels, *entry.labels])
        merged["name"] = entry.derived_name(self._base_dir)
        if entry.is_local:
            merged["source"] = str(_resolve(entry.source or "", self._base_dir))
        return RepoEntry.model_validate(merged, context={"check_paths": False})

    # -- editing ---------------------------------------------------------------------------
    def add(self, entry: RepoEntry | Mapping[str, Any], *, check_paths: bool = True) -> "CorpusConfig":
        """A new config with ``entry`` appended (a mapping is validated like a ``[[repo]]``).

        ``check_paths`` checks the new entry's local path only (not the existing entries').

        Raises:
            ConfigError: the entry is invalid or its name is taken.
        """
        raw = entry.to_data() if isinstance(entry, RepoEntry) else dict(entry)
        data = self.to_data()
        data["repo"] = [*data.get("repo", []), raw]
        config = self.from_data(data, origin=self._origin, base_dir=self._base_dir,
                                check_paths=False)
        added = config.repos[-1]
        if check_paths and added.source is not None:
            try:
                _check_local(added.source, self._base_dir)
            except ValueError as exc:
                label = _entry_label(data, len(data["repo"]) - 1)
                raise ConfigError(f"{self._origin}: {label}: {exc}") from None
        return config

    def remove(self, name: str) -> "CorpusConfig":
        """A new config without the repo called ``name``.

        Raises:
            ConfigError: no such repo (the message lists the names).
        """
        self.get(name)
        kept = [e for e, key in zip(self.repos, self.names()) if key != name]
        return self._copy_with(kept)

    def _copy_with(self, repos: list[RepoEntry]) -> "CorpusConfig":
        config = self.model_copy(update={"repos": repos})
        config._base_dir, config._origin = self._base_dir, self._origin
        return config

    # -- writing ---------------------------------------------------------------------------
    def to_data(self) -> dict[str, Any]:
        """The file's content as plain data (what :meth:`from_data` reads)."""
        data: dict[str, Any] = {}
        if defaults := self.defaults.to_data():
            data["defaults"] = defaults
        if self.repos:
            data["repo"] = [e.to_data() for e in self.repos]
        return data

    def to_toml(self) -> str:
        """The canonical text of the file: header, ``[defaults]``, then one ``[[repo]]`` each."""
        data, parts = self.to_data(), [_HEADER]
        if "defaults" in data:
            parts.append(_table("[defaults]", data["defaults"]))
        parts += [_table("[[repo]]", r) for r in data.get("repo", [])]
        return "\n".join(parts)

    def save(self, path: Path) -> None:
        """Write :meth:`to_toml` to ``path`` atomically (temp file, fsync, rename)."""
        atomic_write(Path(path), self.to_toml())

    @classmethod
    def edit(cls, path: Path, change: Callable[["CorpusConfig"], "CorpusConfig"], *,
             check_paths: bool = False) -> "CorpusConfig":
        """Load (or start empty), apply ``change``, save: under a lock on the file's folder,
        so concurrent edits do not lose each other's changes. Returns the saved config.

        ``check_paths`` applies to the entries already in the file (off by default, so a
        repo whose folder vanished can still be removed); ``change`` validates its own.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with _folder_lock(path.parent):
            new = change(cls.load_or_empty(path, check_paths=check_paths))
            new.save(path)
        return new


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# -- TOML writing: the small subset this file uses (tomllib only reads) ----------------------
def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):  # JSON's escapes are valid TOML basic-string escapes
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to the corpus file")


def _table(header: str, data: Mapping[str, Any]) -> str:
    return header + "\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in data.items())


# -- errors ---------------------------------------------------------------------------------
def _describe(exc: ValidationError, data: Mapping[str, Any], origin: str) -> str:
    """One line naming the file, the entry and the key of every validation error."""
    problems = [f"{_where(err['loc'], data)}{_what(err)}" for err in exc.errors()]
    return f"{origin}: " + "; ".join(problems)


def _where(loc: tuple[Any, ...], data: Mapping[str, Any]) -> str:
    if not loc:
        return ""
    if loc[0] == "repo" and len(loc) > 1 and isinstance(loc[1], int):
        return f"{_entry_label(data, loc[1])}: " + "".join(f"{k}: " for k in loc[2:3])
    if loc[0] == "defaults" and len(loc) > 1:
        return f"[defaults]: {loc[1]}: "
    return f"{loc[0]}: "


def _entry_label(data: Mapping[str, Any], index: int) -> str:
    try:
        raw = data["repo"][index]
        ident = next((raw[k] for k in ("name", "source", "sample")
                      if isinstance(raw.get(k), str)), None)
    except (KeyError, IndexError, TypeError, AttributeError):
        ident = None
    return f"repo #{index + 1}" + (f" ({ident!r})" if ident else "")


def _what(err: Mapping[str, Any]) -> str:
    loc = err["loc"]
    if err["type"] == "extra_forbidden":
        table = RepoEntry if loc[0] == "repo" else RepoDefaults if loc[0] == "defaults" else None
        valid = _keys(table) if table else "defaults, repo"
        return f"unknown key; valid keys: {valid}"
    if err["type"] == "list_type" and loc == ("repo",):
        return "must be an array of tables: write each repo as [[repo]]"
    return str(err["msg"]).removeprefix("Value error, ")


def _keys(model: type[BaseModel]) -> str:
    names = {f.alias or n for n, f in model.model_fields.items()}
    return ", ".join(k for k in KEY_ORDER if k in names)
