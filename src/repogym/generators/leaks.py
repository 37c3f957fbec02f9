"""Does a problem statement give the fix away? Identifiers, approach and quoted lines.

A statement may say what goes wrong and name the public names involved; it must not show
how the fix is made. :func:`statement_leaks` finds three kinds of leak (:class:`LeakKind`):

* ``verbatim_line``: an added or removed line of the gold patch (stripped, at least
  :data:`MIN_LINE_CHARS` characters) that the text quotes, whitespace runs compared as one
  space (the rule of :func:`repogym.generators.statements.leaks`);
* ``new_identifier``: a name the gold patch *introduces* (on ``+`` lines, and on no ``-``
  or context line, hunk headers included) that the text names and the tests in
  ``test_patch`` do not use. Names the tests use are the API a solver must be told about,
  so naming them is allowed;
* ``approach``: a sentence with an approach phrase (:data:`APPROACH_PATTERNS`: "fix by",
  "this commit", "switch to", "instead of", "replace X with"...) that also names an
  identifier of the changed lines.

Identifiers. On a patch line, a name (``[A-Za-z_$][\\w$]*``, dotted or ``::`` paths split
into their parts) counts when it is code-shaped (``snake_case``, ``ALL_CAPS``, ``camelCase``,
``PascalCase`` with two capitals, ``_private``, ``__dunder__``; not an acronym such as
``HTTP``) or, in a source file (:data:`SOURCE_SUFFIXES`), stands where only code stands:
before ``(``, after ``.``/``::``/``->``/``@``, after a definition keyword (``def``, ``fn``,
``func``, ``class``...), before an assignment, or in a dotted name that is not a file name
(``docs.txt``). Plain words in comments and strings, URLs and e-mail addresses, and
``key = value`` in configuration files, do not count. In the text, every mention
(backticked or not; dotted paths split; the first letter in either case) is matched
against those names (:func:`named`), so a plain word counts when a patch uses it as code.
Names shorter than :data:`MIN_NAME_CHARS` and common English words, builtins and language
keywords (:data:`IGNORED_WORDS`) never count.

:mod:`repogym.generators.commit_message` uses the same rules to decide which sentences of
a commit message to keep, so that a cleaned message passes this check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import PurePosixPath

from repogym.patches import diff_text_lines

MIN_LINE_CHARS = 8
MIN_NAME_CHARS = 4
SOURCE_SUFFIXES = frozenset({
    ".py", ".pyi", ".pyx", ".pxd", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".go", ".rs",
    ".java", ".kt", ".kts", ".scala", ".groovy", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh",
    ".cs", ".rb", ".php", ".swift", ".m", ".mm", ".lua", ".pl", ".pm", ".sh", ".bash",
})
"""Files whose names in code positions count (elsewhere only code-shaped names do)."""
FILE_SUFFIXES = frozenset({
    "txt", "md", "rst", "adoc", "py", "pyi", "pyx", "js", "mjs", "cjs", "ts", "tsx", "jsx", "go",
    "rs", "java", "kt", "c", "h", "cc", "cpp", "hpp", "json", "yaml", "yml", "toml", "cfg", "ini",
    "lock", "in", "sh", "html", "css", "xml", "csv",
})
"""A dotted name ending so is a file name (``docs.txt``): not a code position."""

_KEYWORDS = [
    "abstract", "async", "await", "boolean", "break", "byte", "case", "catch", "chan", "char",
    "class", "const", "continue", "crate", "default", "defer", "delete", "elif", "else", "enum",
    "except", "export", "extends", "false", "final", "finally", "func", "function", "goto", "impl",
    "implements", "import", "instanceof", "interface", "lambda", "loop", "match", "module", "nil",
    "none", "null", "package", "pass", "private", "protected", "public", "raise", "return", "self",
    "static", "struct", "super", "switch", "this", "throw", "throws", "trait", "true", "type",
    "typeof", "undefined", "unsafe", "using", "void", "where", "while", "with", "yield"
]
"""Keywords of Python, JavaScript, Go, Rust and Java."""
_BUILTINS = [
    "abs", "append", "args", "array", "bool", "box", "bytearray", "bytes", "callable", "chr",
    "classmethod", "clone", "console", "copy", "delattr", "dict", "divmod", "enumerate", "err",
    "error", "errors", "expect", "filter", "float", "fmt", "frozenset", "getattr", "hasattr",
    "hash", "input", "int", "isinstance", "issubclass", "item", "items", "iter", "json", "keys",
    "kwargs", "len", "list", "make", "map", "math", "max", "memoryview", "min", "next", "object",
    "open", "option", "ord", "pow", "print", "println", "promise", "property", "repr", "result",
    "reversed", "round", "set", "setattr", "some", "sorted", "staticmethod", "str", "sum", "tuple",
    "unwrap", "value", "values", "vars", "vec", "zip"
]
"""Builtins and names every program uses."""
_COMMON = [
    "able", "about", "above", "across", "actually", "added", "adding", "adds", "after", "again",
    "against", "allow", "allows", "already", "also", "always", "among", "another", "any",
    "anything", "anyway", "applied", "apply", "around", "avoid", "avoids", "away", "back", "based",
    "because", "been", "before", "being", "below", "better", "between", "both", "bring", "broke",
    "broken", "bugs", "build", "built", "call", "called", "calls", "came", "cannot", "cases",
    "cause", "caused", "causes", "change", "changed", "changes", "check", "clean", "code", "come",
    "comes", "comment", "comments", "correct", "correctly", "could", "current", "data", "defined",
    "does", "doing", "done", "down", "during", "each", "either", "empty", "enough", "even", "ever",
    "every", "example", "exists", "expected", "extra", "fail", "fails", "field", "fields", "file",
    "files", "fine", "first", "fixed", "fixes", "fixing", "following", "format", "found", "from",
    "full", "further", "gets", "give", "given", "gives", "going", "good", "great", "handle",
    "handled", "handles", "have", "having", "help", "here", "hidden", "high", "however", "ignore",
    "ignored", "instead", "into", "invalid", "issue", "just", "keep", "kind", "know", "last",
    "later", "least", "less", "level", "like", "line", "lines", "little", "load", "loaded", "long",
    "look", "lookup", "made", "makes", "many", "may", "maybe", "mean", "message", "method",
    "methods", "might", "missing", "mode", "modules", "more", "most", "much", "must", "name",
    "names", "need", "needed", "needs", "never", "note", "nothing", "number", "objects", "often",
    "once", "only", "options", "order", "original", "other", "others", "output", "over", "param",
    "parse", "parsed", "parser", "parsing", "part", "path", "pattern", "place", "point",
    "possible", "previous", "problem", "proper", "properly", "quite", "raised", "raises", "range",
    "rather", "read", "really", "reason", "regex", "remove", "removed", "removes", "replace",
    "replaced", "results", "returned", "returning", "returns", "right", "rule", "rules", "run",
    "running", "runs", "same", "second", "section", "sections", "seems", "sets", "setting",
    "settings", "should", "show", "shown", "simple", "since", "single", "size", "small",
    "something", "sometimes", "start", "state", "status", "step", "still", "string", "strings",
    "such", "support", "supported", "supports", "sure", "tags", "take", "test", "tests", "text",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "thing", "things",
    "think", "those", "though", "three", "through", "time", "together", "took", "turn", "types",
    "under", "unit", "until", "update", "updated", "upon", "used", "user", "users", "uses",
    "valid", "version", "versions", "very", "view", "want", "wants", "was", "were", "what", "when",
    "whether", "which", "whole", "will", "within", "without", "word", "words", "work", "works",
    "would", "wrap", "write", "wrong", "year", "your"
]
"""Common English words, and words programmers write in prose."""

IGNORED_WORDS = frozenset(_KEYWORDS + _BUILTINS + _COMMON)
"""Never identifiers: language keywords and builtins, and common English words."""

_SIDE = {"+": 0, "-": 1}
_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@ ?(.*)$")
_NAME = r"[A-Za-z_$][\w$]*"
_PATH = re.compile(rf"(?<![\w$]){_NAME}(?:(?:\.|::){_NAME})*")
_BACKTICK = re.compile(r"`([^`\n]+)`")
_URL = re.compile(r"\b[a-z][\w+.-]*://\S+|\b[\w.+-]+@[\w-]+\.[\w.-]+")
_DEF_BEFORE = re.compile(r"(?:\b(?:def|class|fn|func|function|struct|enum|trait|type|"
                         r"interface|impl|let|const|var|static|mod)\s+|\.|::|->|@)$")
_CODE_AFTER = re.compile(r"^(?:!?\(|\s*=(?!=)|\s*:=|<[\w\s,<>]*>\s*\()")

MEANS_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\bfix(?:e[sd])? by\b", r"\bthis (?:commit|change|patch|fix|pr|pull request)\b",
    r"\bthe (?:change|patch|fix)\b", r"\bwe now\b", r"\bswitch(?:e[sd])? (?:over )?to\b",
    r"\brefactor", r"\brenam(?:e|es|ed|ing)\b",
    (r"\bby (?:adding|removing|using|making|calling|checking|changing|passing|setting|moving|"
     r"introducing|wrapping|returning|pointing|replacing|ignoring|skipping|converting)\b"),
    (r"\b(?:i|we)(?:'ve| have)? (?:also )?(?:added|changed|removed|made|replaced|moved|"
     r"modified|introduced|updated|wrapped|rewrote|refactored)\b"),
    r"\bthis (?:adds|introduces|implements|changes|removes|replaces|moves|makes|uses)\b",
    (r"\bwe (?:have to|need to|must|should|can) (?:add|remove|change|use|call|check|handle|"
     r"ignore|make|set|reset|clear|skip|return|pass)\b"),
))
"""Phrases that only say how a change is made ("fix by", "this commit", "by adding")."""
CONTRAST_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\binstead of\b", r"\bus(?:e|es|ed|ing)\b[^.;\n]{0,40}\binstead\b",
    r"\bnow (?:uses?|calls?|checks?|returns?|passes|raises?|handles?)\b",
    r"\bmov(?:e|es|ed|ing)\b[^.;\n]{0,40}\b(?:to|into)\b", r"\bis changed to\b",
    r"\breplac(?:e|es|ed|ing)\b[^.;\n]{0,60}\bwith\b",
))
"""Phrases that say how a change is made, or contrast a symptom with what is expected
("raises X instead of returning Y"): an approach only with a changed name, or no symptom."""
APPROACH_PATTERNS = MEANS_PATTERNS + CONTRAST_PATTERNS
"""Every approach phrase (:func:`approach_phrase`)."""


class LeakKind(str, Enum):
    """What a statement gives away (see the module docstring)."""

    verbatim_line = "verbatim_line"
    new_identifier = "new_identifier"
    approach = "approach"


@dataclass(frozen=True)
class Leak:
    """One leak: its kind and the offending fragment (a patch line, a name or a sentence)."""

    kind: LeakKind
    fragment: str


@dataclass(frozen=True)
class PatchSides:
    """One file's hunk lines by side (without their prefix); hunk-header sections are context.

    Attributes:
        path: the file's path (new side; the old one for a deletion; "" when unknown).
    """

    path: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    context: tuple[str, ...] = ()

    @property
    def is_source(self) -> bool:
        """A program's source (by suffix; an unknown path counts as source)."""
        return not self.path or PurePosixPath(self.path).suffix.lower() in SOURCE_SUFFIXES


@dataclass(frozen=True)
class PatchNames:
    """The identifiers of a gold patch (module docstring: what counts as one).

    Attributes:
        changed: code names on its added or removed lines.
        introduced: changed names on added lines only, absent from removed and context lines.
        existing: every name on its removed and context lines (the code before the fix).
        private: changed names their language makes private by their spelling beyond
            ``_private``: Go's unexported camelCase names (a lower-case first letter and a
            capital in a ``.go`` file: ``errorPrevLine``, ``atEOF``).
    """

    changed: frozenset[str]
    introduced: frozenset[str]
    existing: frozenset[str]
    private: frozenset[str] = frozenset()

    def public(self, used: frozenset[str]) -> frozenset[str]:
        """The changed names a statement may name in a symptom: those the code before the
        fix already had (not private) and those the tests use (``used``)."""
        old = {n for n in self.changed & self.existing
               if not _private(n) and n not in self.private}
        return frozenset(old | (self.changed & used))


def patch_sides(diff: str) -> list[PatchSides]:
    """Split a unified diff's hunk lines by file and side, following the hunk line counts."""
    files: list[PatchSides] = []
    sides: tuple[list[str], list[str], list[str]] = ([], [], [])
    path, old, new = "", 0, 0
    for line in diff.split("\n"):
        if old > 0 or new > 0:
            sign = line[:1]
            if sign != "\\":
                sides[_SIDE.get(sign, 2)].append(line[1:])
                old -= sign != "+"
                new -= sign != "-"
            continue
        if line.startswith(("diff --git ", "--- ")) and any(sides):
            files.append(PatchSides(path, *map(tuple, sides)))
            sides, path = ([], [], []), ""
        if m := _HUNK.match(line):
            old, new = _count(m.group(1)), _count(m.group(2))
            sides[2].append(m.group(3))
        elif line.startswith(("+++ ", "--- ")) and (name := _header_path(line[4:])):
            path = name if line[0] == "+" or not path else path
    if any(sides):
        files.append(PatchSides(path, *map(tuple, sides)))
    return files


def _count(group: str | None) -> int:
    return 1 if group is None else int(group)


def _header_path(raw: str) -> str:
    name = raw.split("\t")[0].strip()
    if name == "/dev/null":
        return ""
    return name[2:] if name[:2] in ("a/", "b/") else name


def patch_names(gold_patch: str) -> PatchNames:
    """The identifiers a gold patch changes, introduces, and had before (module docstring).

    In files that are not source (configuration, data) only code-shaped names count: a
    ``key = value`` there is not code."""
    added: set[str] = set()
    removed: set[str] = set()
    existing: set[str] = set()
    private: set[str] = set()
    for f in patch_sides(gold_patch):
        names = code_names(f.added, positional=f.is_source)
        gone = code_names(f.removed, positional=f.is_source)
        added |= names
        removed |= gone
        existing |= all_names(f.removed + f.context)
        if f.path.endswith(".go"):
            # camelCase only: a plain lower-case word (``host``) reads as English too
            private |= {n for n in names | gone
                        if n[:1].islower() and any(c.isupper() for c in n)}
    return PatchNames(changed=frozenset(added | removed),
                      introduced=frozenset(added - existing), existing=frozenset(existing),
                      private=frozenset(private))


def used_by_tests(test_patch: str) -> frozenset[str]:
    """Every name on the added and context lines of a test patch (the tests as fixed)."""
    return frozenset(name for f in patch_sides(test_patch)
                     for name in all_names(f.added + f.context))


def code_names(lines: Iterable[str], *, positional: bool = True) -> set[str]:
    """Names used as code on these lines (module docstring); with ``positional=False``
    only code-shaped names count, not those that only stand where code stands."""
    out: set[str] = set()
    for line in (_URL.sub(" ", ln) for ln in lines):
        for m in _PATH.finditer(line):
            parts = _parts(m.group())
            placed = positional and (
                (len(parts) > 1 and parts[-1].lower() not in FILE_SUFFIXES)
                or _in_code_position(line, m))
            out.update(p for p in parts if _countable(p) and (placed or _shaped(p)))
    return out


def all_names(lines: Iterable[str]) -> set[str]:
    """Every countable name on these lines, code or not."""
    return {p for line in lines for m in _PATH.finditer(line) for p in _parts(m.group())
            if _countable(p)}


def _parts(path: str) -> list[str]:
    return [p for p in re.split(r"\.|::", path) if p]


def _countable(name: str) -> bool:
    return len(name.strip("_$")) >= MIN_NAME_CHARS and name.lower() not in IGNORED_WORDS


def _shaped(name: str) -> bool:
    """snake_case, ALL_CAPS, camelCase, PascalCase with two capitals, _private: only code
    looks so (an all-capitals word without "_" is an acronym, not code)."""
    core = name.strip("_")
    if "_" in core or re.search(r"[a-z][A-Z]", core):
        return True
    if re.search(r"[A-Z]{2}[a-z]", core):
        return True
    return bool(re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+", core)) or name != core


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _in_code_position(line: str, m: re.Match[str]) -> bool:
    return bool(_DEF_BEFORE.search(line[:m.start()]) or _CODE_AFTER.match(line[m.end():]))


# ---------------------------------------------------------------- names in prose


def named(text: str, names: frozenset[str]) -> list[str]:
    """The members of ``names`` that ``text`` names, in order of first mention.

    Mentions are matched part by part (``a.b``, ``a::b``), as written or with the first
    letter's case flipped (a sentence's first word; ``matchErr`` for ``MatchErr``).
    """
    found: dict[str, None] = {}
    for mention in _mentions(text):
        for part in _parts(mention):
            for cand in (part, part[:1].lower() + part[1:], part[:1].upper() + part[1:]):
                if cand in names and _countable(cand):
                    found[cand] = None
    return list(found)


def _mentions(text: str) -> Iterator[str]:
    for m in _BACKTICK.finditer(text):
        yield from (p.group() for p in _PATH.finditer(m.group(1)))
    yield from (m.group() for m in _PATH.finditer(_BACKTICK.sub(" ", text)))


def approach_phrase(sentence: str, *,
                    patterns: tuple[re.Pattern[str], ...] = APPROACH_PATTERNS) -> str | None:
    """The first approach phrase in ``sentence`` (:data:`APPROACH_PATTERNS`, or only the
    given ``patterns``), or ``None``."""
    for pattern in patterns:
        if m := pattern.search(sentence):
            return m.group()
    return None


_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'`(\[*]?[A-Z0-9])")
_ABBREV = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf|resp|approx|incl|Mr|Dr|No)\.)$", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def sentences(text: str) -> list[str]:
    """Split prose into sentences: paragraphs and bullet items apart, wrapped lines joined,
    then at ``.``/``!``/``?`` followed by a capital or digit (not after ``e.g.``...)."""
    out: list[str] = []
    for chunk in _chunks(text):
        out.extend(split_sentences(chunk))
    return out


def split_sentences(prose: str) -> list[str]:
    """Split one run of prose (no paragraph breaks) into sentences."""
    pieces: list[str] = []
    for piece in _SPLIT.split(re.sub(r"\s+", " ", prose).strip()):
        if pieces and _ABBREV.search(pieces[-1]):
            pieces[-1] = f"{pieces[-1]} {piece}"
        elif piece:
            pieces.append(piece)
    return pieces


def _chunks(text: str) -> Iterator[str]:
    for para in re.split(r"\n\s*\n", text):
        current: list[str] = []
        for line in para.split("\n"):
            if _BULLET.match(line) and current:
                yield " ".join(current)
                current = []
            current.append(line.strip())
        if current:
            yield " ".join(current)


# ---------------------------------------------------------------- the check


def verbatim_lines(text: str, patch: str) -> list[str]:
    """The patch lines (added or removed, stripped, >= MIN_LINE_CHARS) the text quotes."""
    norm = re.sub(r"\s+", " ", text)
    out: list[str] = []
    for line in diff_text_lines(patch):
        probe = re.sub(r"\s+", " ", line).strip()
        if len(probe) >= MIN_LINE_CHARS and probe in norm and probe not in out:
            out.append(probe)
    return out


def statement_leaks(text: str, gold_patch: str, test_patch: str = "",
                    existing: Iterable[str] = ()) -> list[Leak]:
    """Everything in ``text`` that gives the gold patch away (module docstring).

    Args:
        text: the problem statement.
        gold_patch: the fix (a unified diff).
        test_patch: the tests that prove it; the names they use may be named freely.
        existing: names known to exist before the fix (the functions the failing tests
            call in the broken state): a ``+`` line that mentions one (click's comment
            naming ``CliRunner``) does not make it the fix's.

    Returns:
        The leaks: quoted lines first, then introduced names, then approach sentences;
        empty when the statement is safe.
    """
    names = patch_names(gold_patch)
    allowed = used_by_tests(test_patch) | frozenset(existing)
    leaks = [Leak(LeakKind.verbatim_line, line) for line in verbatim_lines(text, gold_patch)]
    leaks += [Leak(LeakKind.new_identifier, name)
              for name in named(text, names.introduced - allowed)]
    leaks += [Leak(LeakKind.approach, s) for s in sentences(text)
              if approach_phrase(s) and named(s, names.changed)]
    return leaks
