"""Commit messages as problem statements: the problem kept, the solution and the noise dropped.

A mined task's statement is, by default, the fix commit's message. As written, a message
carries metadata (trailers, issue numbers, CI directives) and often says how the fix was
made ("Fix by pointing the original's _local.statistics at ..."): the solution, handed to
the solver. :func:`clean_commit_message` keeps what describes the problem, and records
every part it drops with its :class:`DropReason`:

1. *Metadata anywhere* (outside code fences): ``Signed-off-by:`` and the other ``*-by:``
   identity lines, ``Change-Id:`` [trailer]; ``(cherry picked from commit ...)``,
   ``git-svn-id:`` [vcs_metadata]; ``---`` separator lines and ``<!-- -->`` comments
   (pull-request templates) [template].
2. *Trailer blocks*: from the end, every paragraph whose lines all have git's trailer
   shape (``Token-With-Dashes: value``, indented continuation lines), and a final run of
   such lines when it holds a known key (:data:`KNOWN_TRAILERS`: ``Fixes`` only before a
   sha) [trailer].
3. *The subject* (first line): ``Merge pull request #N from ...`` gives way to the next
   line; ``[skip ci]`` [ci_directive], ``:bug:`` [emoji], ``(#123)`` and ``[CLI-12]``
   [issue_reference] go; a conventional-commit type (``fix:``, ``fix(parser):``,
   ``bugfix -``, ``[bugfix]``) is removed and its scope kept as plain words [commit_type].
4. *Body lines*: ``Fixes #12``/``closes GH-3`` lines and sentences, ``(#12)`` and
   ``see issue #12`` [issue_reference]; links to pull requests, issues, commits and CI runs
   (a markdown link keeps its text; a line left with only "see"-like words goes whole)
   [url]; thanks and greetings on a line of their own ("thx", "Thanks to @x!") [courtesy];
   checklists and headings [template], and what a "Changes"/"Implementation"/"How"
   heading introduces, up to the next heading [approach]; ``This reverts commit <sha>.``
   [vcs_metadata].
5. *Sentences* (bullet items and fenced code blocks are judged whole; the subject is
   judged like a sentence). One is dropped when it quotes a changed line of the gold patch
   [quotes_patch]; uses an approach phrase (:data:`~repogym.generators.leaks.MEANS_PATTERNS`:
   "fix by", "this commit", "by adding"; or a contrast, ``CONTRAST_PATTERNS``: "instead of",
   "replace X with", unless in a symptom that names no changed identifier) [approach];
   says tests were added (body only) [test_note]; or names identifiers of the
   changed lines (:mod:`repogym.generators.leaks` says what counts) [implementation] --
   unless every such name is one the tests use (the API the solver must be told about), or
   the sentence describes a symptom ("raises", "returns", "fails", "wrong", "when",
   "should"...) and names only what the code before the fix already had (not ``_private``).
   When unsure, drop: a kept sentence must pass
   :func:`~repogym.generators.leaks.statement_leaks`.
6. *Untitled*: code blocks left with no title to go under (the summary is empty) [untitled].
7. *Squash merges*: a subject ending in a pull request number (``Title (#149)``) over a body
   that is only ``* `` items is how a forge folds a pull request's commits: the items are
   those commits' subjects, the steps of the change ("add the flag to the CLI", "update
   README.md"), not the problem; they all go [commit_list].

The summary (:class:`SummarySource`) is the cleaned subject. When the subject was dropped,
it is the subject *neutralized*: cut before its "by <doing>" clause (approach), or without
the implementation names where the sentence can do without them ("Add an optional logger
param" -> "Add an optional param"; not "Remove X in favor of Y"), if at least
:data:`MIN_TITLE_WORDS` words remain and the result passes rule 5; else the first kept
body sentence (shortened to :data:`MAX_TITLE_CHARS`, and then also kept in the body); else
empty: :attr:`CleanedMessage.needs_statement` says the caller must write the statement
from observed behaviour instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum

from repogym.generators.leaks import (
    CONTRAST_PATTERNS,
    MEANS_PATTERNS,
    PatchNames,
    approach_phrase,
    named,
    patch_names,
    split_sentences,
    used_by_tests,
    verbatim_lines,
)

MAX_TITLE_CHARS = 80
MIN_TITLE_WORDS = 3
KNOWN_TRAILERS = frozenset(k.lower() for k in (
    "Change-Id", "Signed-off-by", "Co-authored-by", "Co-developed-by", "Reviewed-by",
    "Reviewed-on", "Acked-by", "Tested-by", "Reported-by", "Suggested-by", "Helped-by",
    "Requested-by", "Submitted-by", "Submitted by", "Cc", "Closes", "Resolves", "Refs",
    "Ref", "Bug", "Issue", "Issues", "PR", "BR", "PR-URL", "Link", "See-also",
    "Cherry-picked-from", "Part-of", "Differential Revision", "Pull-request"))
"""Trailer keys that make a final run of ``Key: value`` lines a trailer block (2.)."""


class DropReason(str, Enum):
    """Why a part of a commit message is not in the statement (module docstring)."""

    trailer = "trailer"
    vcs_metadata = "vcs_metadata"
    ci_directive = "ci_directive"
    issue_reference = "issue_reference"
    url = "url"
    emoji = "emoji"
    commit_type = "commit_type"
    template = "template"
    quotes_patch = "quotes_patch"
    approach = "approach"
    implementation = "implementation"
    test_note = "test_note"
    untitled = "untitled"
    commit_list = "commit_list"
    courtesy = "courtesy"


class SummarySource(str, Enum):
    """Where :attr:`CleanedMessage.summary` comes from (module docstring)."""

    subject = "subject"
    neutralized = "neutralized"
    body = "body"
    none = "none"


@dataclass(frozen=True)
class DroppedPart:
    """A part of the message left out of the statement, and why."""

    reason: DropReason
    text: str


@dataclass(frozen=True)
class CleanedMessage:
    """A commit message reduced to the problem it fixes.

    Attributes:
        summary: the problem as a short title; empty only when nothing usable remained.
        body: the paragraphs kept, in order (prose re-wrapped, bullets one a line).
        dropped: every part left out, in the order met.
        summary_source: where the summary comes from.
    """

    summary: str
    body: tuple[str, ...] = ()
    dropped: tuple[DroppedPart, ...] = ()
    summary_source: SummarySource = SummarySource.subject

    @property
    def needs_statement(self) -> bool:
        """True when nothing usable remained: write the statement from observed behaviour."""
        return not self.summary

    @property
    def reasons(self) -> tuple[DropReason, ...]:
        """The distinct reasons of :attr:`dropped`, in first-met order."""
        return tuple(dict.fromkeys(d.reason for d in self.dropped))


def statement_from_message(cleaned: CleanedMessage) -> str:
    """An issue-style statement: the summary, a blank line, the kept paragraphs.

    Returns the empty string when :attr:`CleanedMessage.needs_statement` is true.
    """
    if cleaned.needs_statement:
        return ""
    return "\n\n".join((cleaned.summary, *cleaned.body))


# ---------------------------------------------------------------- judging sentences

_SYMPTOM = re.compile(
    r"\b(?:rais(?:e|es|ed|ing)|return(?:s|ed|ing)?|crash(?:es|ed|ing)?|wrong(?:ly)?|"
    r"incorrect(?:ly)?|fail(?:s|ed|ing|ure)?|when(?:ever)?|should|errors?|exceptions?|bugs?|"
    r"broken|segfaults?|not|never|no longer|missing|invalid|unexpected(?:ly)?|hangs?|"
    r"panic(?:s|ked)?|regression|deprecat\w*|warn(?:s|ing|ings)?|infinite|leaks?|"
    r"ignored?|bec(?:a|o)me|gives?|produc(?:e|es|ed)|overflow(?:s|ed)?|truncat\w*|lost|loses|"
    r"cannot|unable|off-by-one)\b|n't\b", re.IGNORECASE)
_TEST_NOTE = re.compile(
    r"\b(?:add(?:s|ed|ing)?|new|more|extra|updated?|includ(?:e|es|ed)|wr(?:i|o)te|written)\b"
    r"[^.;\n]{0,40}\btests?\b|\btest[ -]?cases?\b|\bregression tests?\b", re.IGNORECASE)


@dataclass
class _Judge:
    """Decides, sentence by sentence, what may stay (module docstring, rule 5)."""

    gold_patch: str
    names: PatchNames
    api: frozenset[str]  # changed names the tests use
    public: frozenset[str]  # changed names a symptom may name

    @classmethod
    def of(cls, gold_patch: str, test_patch: str) -> _Judge:
        names, used = patch_names(gold_patch), used_by_tests(test_patch)
        return cls(gold_patch, names, names.changed & used, names.public(used))

    def verdict(self, text: str, *, body: bool = True, code: bool = False) -> DropReason | None:
        """Why ``text`` must go, or ``None`` when it may stay."""
        if verbatim_lines(text, self.gold_patch):
            return DropReason.quotes_patch
        if not code and self.says_how(text):
            return DropReason.approach
        if body and not code and _TEST_NOTE.search(text):
            return DropReason.test_note
        hidden = self.hidden(text)
        if not hidden:
            return None
        if hidden <= self.public and _SYMPTOM.search(text):
            return None
        return DropReason.implementation

    def says_how(self, text: str) -> bool:
        """An approach phrase, unless it is a contrast ("raises X instead of returning Y")
        in a symptom that names no changed identifier."""
        if approach_phrase(text, patterns=MEANS_PATTERNS):
            return True
        return bool(approach_phrase(text, patterns=CONTRAST_PATTERNS)) and (
            bool(named(text, self.names.changed)) or not _SYMPTOM.search(text))

    def hidden(self, text: str) -> set[str]:
        """The changed names ``text`` names that the tests do not use."""
        return set(named(text, self.names.changed)) - self.api


# ---------------------------------------------------------------- the message's parts


class _Kind(Enum):
    prose = "prose"  # one sentence
    bullet = "bullet"  # one list item, all its sentences
    code = "code"  # a fenced, indented, quoted or table block


@dataclass
class _Unit:
    """One judged piece of a paragraph: a sentence, a bullet item or a code block."""

    text: str
    kind: _Kind


@dataclass
class _Message:
    """What cleaning has so far: the subject, the body's paragraphs, the dropped parts."""

    subject: str
    paragraphs: list[list[str]]  # lines; a fenced code block is one paragraph
    dropped: list[DroppedPart] = field(default_factory=list)

    def drop(self, reason: DropReason, text: str) -> None:
        if text.strip():
            self.dropped.append(DroppedPart(reason, text.strip()))


_IDENTITY_LINE = re.compile(
    r"^\s*(?:[\w-]+-by|Change-Id|Cherry-picked-from)\s*:.*$", re.IGNORECASE)
_VCS_LINE = re.compile(r"^\s*(?:git-svn-id:.*|\(cherry picked from commit [0-9a-f]+\)\s*)$",
                       re.IGNORECASE)
_SEPARATOR = re.compile(r"^\s*(?:-{3,}|={3,})\s*$")
_TRAILER = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*|[A-Z][a-z]+ by|Differential Revision)"
                      r"\s*:\s*(\S.*)$")
_SHA = re.compile(r"^[0-9a-f]{7,40}\b")
_FENCE = re.compile(r"^\s*(```|~~~)")
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def _split_message(message: str) -> _Message:
    """Rule 1 applied and the message cut into subject and paragraphs (fences kept whole)."""
    msg = _Message(subject="", paragraphs=[])
    text = message.replace("\r\n", "\n")
    for m in _HTML_COMMENT.finditer(text):
        msg.drop(DropReason.template, m.group())
    text = _HTML_COMMENT.sub("", text)
    lines: list[str] = []
    fenced = False
    for line in text.split("\n"):
        fenced ^= bool(_FENCE.match(line))
        if fenced or _FENCE.match(line) or _is_content(line, msg):
            lines.append(line)
    paragraphs = list(_paragraphs(lines))
    if paragraphs:
        msg.subject, *rest = paragraphs[0]
        msg.paragraphs = ([rest] if rest else []) + paragraphs[1:]
    return msg


def _is_content(line: str, msg: _Message) -> bool:
    """False (and the line recorded as dropped) for rule 1's metadata lines."""
    if _IDENTITY_LINE.match(line):
        msg.drop(DropReason.trailer, line)
    elif _VCS_LINE.match(line):
        msg.drop(DropReason.vcs_metadata, line)
    elif _SEPARATOR.match(line):
        msg.drop(DropReason.template, line)
    else:
        return True
    return False


def _paragraphs(lines: list[str]) -> Iterator[list[str]]:
    current: list[str] = []
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            if not fenced and current:
                yield current
                current = []
            current.append(line)
            if fenced:
                yield current
                current = []
            fenced = not fenced
        elif fenced or line.strip():
            current.append(line)
        elif current:
            yield current
            current = []
    if current:
        yield current


def _strip_trailers(msg: _Message) -> None:
    """Rule 2: trailer paragraphs, then a final run of trailer lines with a known key."""
    while msg.paragraphs and _all_trailers(msg.paragraphs[-1]):
        msg.drop(DropReason.trailer, "\n".join(msg.paragraphs.pop()))
    if not msg.paragraphs:
        return
    last = msg.paragraphs[-1]
    cut = len(last)
    while cut > 0 and _TRAILER.match(last[cut - 1]):
        cut -= 1
    if cut < len(last) and any(_known(ln) for ln in last[cut:]):
        msg.drop(DropReason.trailer, "\n".join(last[cut:]))
        del last[cut:]
        if not last:
            msg.paragraphs.pop()


def _all_trailers(lines: list[str]) -> bool:
    if _FENCE.match(lines[0]) or not _TRAILER.match(lines[0]):
        return False
    return all(_TRAILER.match(ln) or ln[:1] in (" ", "\t") for ln in lines)


def _known(line: str) -> bool:
    m = _TRAILER.match(line)
    if m is None:
        return False
    key = m.group(1).lower()
    return key in KNOWN_TRAILERS or (key == "fixes" and bool(_SHA.match(m.group(2))))


# ---------------------------------------------------------------- the subject

_BULLET_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_MERGE = re.compile(r"^Merge (?:pull request #\d+ from \S+|(?:remote-tracking )?branch\b.*)$")
_CI = re.compile(r"\s*\[(?:skip ci|ci skip|no ci|skip actions|actions skip)\]\s*", re.IGNORECASE)
_EMOJI = re.compile(r"(?<![\w:]):(?=[a-z0-9_+-]*[a-z])[a-z0-9_+-]+:(?![\w:])\s*")
_REF = r"(?:[\w.-]+/[\w.-]+)?(?:#|GH-|gh-)\d+"
_PAREN_REF = re.compile(
    rf"\s*\((?:(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?|see|refs?|pr|issue)\s+)?{_REF}\)"
    rf"|\s*[-,;]?\s*\bsee (?:also )?(?:issue |pr |pull request |bug )?{_REF}", re.IGNORECASE)
_TAIL_REF = re.compile(rf"\s+{_REF}\s*$")
_TAGS = re.compile(r"^\s*((?:\[[^\]\n]{1,30}\]\s*)+)")
_ISSUE_KEY = re.compile(r"^[A-Z][A-Z0-9]+-\d+$|^#\d+$")
_COMMIT_TYPE = re.compile(
    r"^(?:fix|bugfix|hotfix|bug|feat|feature|perf|refactor|docs?|chore|tests?|build|ci|style|"
    r"revert|deps|security)(?:\((?P<scope>[^)\n]*)\))?!?(?:\s*:|\s+-)\s+", re.IGNORECASE)


def _subject(msg: _Message) -> str:
    """Rule 3: the subject without merge lines, CI directives, emoji, references, types."""
    subject = _BULLET_MARK.sub("", msg.subject).strip()
    while _MERGE.match(subject) and msg.paragraphs:
        msg.drop(DropReason.issue_reference, subject)
        first = msg.paragraphs[0]
        subject = first.pop(0).strip()
        if not first:
            msg.paragraphs.pop(0)
    subject = _inline_noise(subject, msg)
    subject = _strip_tags(subject, msg)
    subject = _strip_type(subject, msg)
    return re.sub(r"\s+", " ", subject).strip()


_SQUASH_SUBJECT = re.compile(r"\(#\d+\)\s*$")
_COMMIT_ITEM = re.compile(r"^\* \S")


def _strip_commit_list(msg: _Message) -> None:
    """Rule 7: a squash merge's list of folded commit subjects, dropped whole."""
    if not (_SQUASH_SUBJECT.search(msg.subject) and msg.paragraphs):
        return
    if any(_FENCE.match(para[0]) or not _COMMIT_ITEM.match(para[0].strip())
           or not all(_COMMIT_ITEM.match(ln.strip()) or ln[:1].isspace() for ln in para)
           for para in msg.paragraphs):
        return
    for para in msg.paragraphs:
        for line in para:
            msg.drop(DropReason.commit_list, line.strip())
    msg.paragraphs = []


def _inline_noise(text: str, msg: _Message) -> str:
    """CI directives, emoji shortcodes and ``(#12)``/``see issue #12`` references, removed
    (the text is returned as it is when it has none)."""
    found = False
    indent = text[:len(text) - len(text.lstrip())]
    for pattern, reason in ((_CI, DropReason.ci_directive), (_EMOJI, DropReason.emoji),
                            (_PAREN_REF, DropReason.issue_reference)):
        for m in pattern.finditer(text):
            msg.drop(reason, m.group())
            found = True
        text = pattern.sub(" ", text)
    if not found:
        return text
    tidy = re.sub(r"\s+([.,;:!?](?:\s|$))", r"\1", re.sub(r"\s+", " ", text.strip()))
    return indent + tidy


def _strip_tags(subject: str, msg: _Message) -> str:
    if m := _TAIL_REF.search(subject):
        msg.drop(DropReason.issue_reference, m.group())
        subject = subject[:m.start()]
    if m := _TAGS.match(subject):
        for tag in re.findall(r"\[([^\]]*)\]", m.group(1)):
            reason = (DropReason.issue_reference if _ISSUE_KEY.match(tag.strip())
                      else DropReason.commit_type)
            msg.drop(reason, f"[{tag}]")
        subject = subject[m.end():]
    return subject


def _strip_type(subject: str, msg: _Message) -> str:
    m = _COMMIT_TYPE.match(subject)
    if m is None:
        return subject
    msg.drop(DropReason.commit_type, m.group().strip())
    rest = subject[m.end():].strip()
    scope = (m.group("scope") or "").strip()
    if scope:
        return f"{scope}: {rest}"
    return rest[:1].upper() + rest[1:]


# ---------------------------------------------------------------- body lines

_REF_LINE = re.compile(
    rf"^\s*(?:this\s+)?(?:(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?|refs?|references?|see|for|"
    rf"addresses|related(?:\s+to)?|part\s+of|re|issue|bug|pr)\b:?\s*)*{_REF}"
    rf"(?:\s*(?:,|and|&)?\s*{_REF})*\s*[.!]?\s*$", re.IGNORECASE)
_URL = (r"https?://(?:[\w.-]+\.)?(?:github\.com|gitlab\.com|bitbucket\.org|codeberg\.org)/"
        r"[^\s)>\]]*?/(?:pulls?|issues?|commits?|compare|actions|merge_requests|runs|"
        r"discussions)\b[^\s)>\]]*"
        r"|https?://(?:[\w.-]+\.)?(?:travis-ci\.(?:org|com)|circleci\.com|appveyor\.com|"
        r"dev\.azure\.com|buildkite\.com|readthedocs\.org/api|atlassian\.net/browse|"
        r"issues\.apache\.org|bugs\.[\w.-]+)[^\s)>\]]*")
_MD_LINK = re.compile(rf"\[([^\]\n]+)\]\(({_URL})\)", re.IGNORECASE)
_BARE_URL = re.compile(_URL, re.IGNORECASE)
_CHECKBOX = re.compile(r"^\s*[-*]\s+\[[ xX]\]")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+(?P<h1>.*)|\*\*(?P<h2>[^*]+)\*\*:?\s*)$")
_CHANGES_HEADING = re.compile(r"\b(?:changes|implementation|solution|approach|how)\b",
                              re.IGNORECASE)
_REVERT = re.compile(r"^This reverts commit [0-9a-f]{7,40}\b.*$", re.IGNORECASE)
_FILLER = frozenset(["see", "for", "more", "info", "information", "details", "detail", "link",
    "links", "pr", "prs", "issue", "issues", "ref", "refs", "at", "in", "here", "also", "the",
    "via", "addresses", "address", "discussion", "related", "to", "a", "an", "this", "fixes",
    "fix", "fixed", "closes", "close", "closed", "resolves", "resolve", "resolved", "upstream",
    "original", "report", "reported", "bug", "pull", "request", "requests", "ci", "build", "log",
    "logs", "of", "on", "and", "url"])


_COURTESY = re.compile(r"^\s*(?:thx|thanks|thank you|ty|cheers|tia|kind regards|regards)\b"
                       r"(?:[\s,]+[@\w-]+){0,4}[\s.!:)]*$", re.IGNORECASE)


def _body_line(line: str, msg: _Message) -> str | None:
    """Rule 4 on one body line: the line cleaned, or ``None`` when it goes whole."""
    if _REF_LINE.match(line):
        msg.drop(DropReason.issue_reference, line)
        return None
    if _CHECKBOX.match(line):
        msg.drop(DropReason.template, line)
        return None
    if _COURTESY.match(line):
        msg.drop(DropReason.courtesy, line.strip())
        return None
    for m in _MD_LINK.finditer(line):
        msg.drop(DropReason.url, m.group(2))
    line = _MD_LINK.sub(r"\1", line)
    for m in _BARE_URL.finditer(line):
        msg.drop(DropReason.url, m.group())
    stripped = _BARE_URL.sub("", line)
    if stripped != line and _only_filler(stripped):
        return None
    return _inline_noise(stripped, msg) if stripped.strip() else None


def _only_filler(text: str) -> bool:
    return all(w.lower() in _FILLER for w in re.findall(r"[A-Za-z]+", text))


def _units(lines: list[str]) -> Iterator[_Unit]:
    """A paragraph's judged pieces: sentences of prose, bullet items, or one code block."""
    if _FENCE.match(lines[0]) or all(ln.startswith(("    ", "\t", ">", "|")) for ln in lines):
        yield _Unit("\n".join(lines), _Kind.code)
        return
    prose: list[str] = []
    bullet: list[str] = []
    for line in lines:
        starts = bool(_BULLET_MARK.match(line))
        if starts and bullet:
            yield _Unit(" ".join(bullet), _Kind.bullet)
            bullet = []
        if starts and prose:
            yield from _sentences(prose)
            prose = []
        (bullet if starts or bullet else prose).append(line.strip())
    if bullet:
        yield _Unit(" ".join(bullet), _Kind.bullet)
    yield from _sentences(prose)


def _sentences(lines: list[str]) -> Iterator[_Unit]:
    return (_Unit(s, _Kind.prose) for s in split_sentences(" ".join(lines)))


def _render(units: list[_Unit]) -> str:
    out: list[str] = []
    prose: list[str] = []
    for unit in units:
        if unit.kind is _Kind.prose:
            prose.append(unit.text)
            continue
        if prose:
            out.append(" ".join(prose))
            prose = []
        out.append(unit.text)
    if prose:
        out.append(" ".join(prose))
    return "\n".join(out)


def _kept_body(msg: _Message, judge: _Judge) -> list[list[_Unit]]:
    """Rules 4 and 5 over the body: each paragraph's kept units (empty paragraphs gone).

    Headings go [template]; what a "Changes"/"Implementation"/"How" heading introduces
    goes too, up to the next heading [approach]."""
    kept: list[list[_Unit]] = []
    in_changes = False
    for para in msg.paragraphs:
        lines: list[str] = []
        for line in ([] if _FENCE.match(para[0]) else para):
            if heading := _HEADING.match(line):
                in_changes = bool(_CHANGES_HEADING.search(heading.group("h1")
                                                          or heading.group("h2")))
                msg.drop(DropReason.template, line)
            elif in_changes:
                msg.drop(DropReason.approach, line)
            elif (cleaned := _body_line(line, msg)) is not None:
                lines.append(cleaned)
        if _FENCE.match(para[0]):
            lines = para
        units = [u for u in (_units(lines) if lines else ()) if _keep(u, msg, judge)]
        if units:
            kept.append(units)
    return kept


def _keep(unit: _Unit, msg: _Message, judge: _Judge) -> bool:
    reason = _unit_verdict(unit, judge)
    if reason is not None:
        msg.drop(reason, unit.text)
    return reason is None


def _unit_verdict(unit: _Unit, judge: _Judge) -> DropReason | None:
    if _REVERT.match(unit.text):
        return DropReason.vcs_metadata
    if unit.kind is _Kind.prose and _REF_LINE.match(unit.text):  # "Closes #458. Adds..."
        return DropReason.issue_reference
    return judge.verdict(unit.text, code=unit.kind is _Kind.code)


# ---------------------------------------------------------------- the summary

_PREPOSITIONS = frozenset(["to", "of", "in", "on", "for", "with", "from", "by", "at", "after",
    "before", "into", "against", "over", "via", "within", "without", "using", "like", "across",
    "than", "about", "under", "between", "through", "during", "onto", "upon", "per"])
_FUNCTION_WORDS = _PREPOSITIONS | frozenset(["a", "an", "the", "and", "or", "&", "+", "/", "as",
    "its", "their", "this", "that", "when", "if", "is", "are", "be", "was", "were", "so", "but",
    "because", "instead", "rather", "while", "where", "which", "who"])
_ARTICLES = frozenset({"a", "an", "the"})
_MEANS = re.compile(r"[\s,;:-]*\b(?:fix(?:e[sd])?\s+by|by\s+\w+ing)\b.*$", re.IGNORECASE)
_GAP = "\0"


def _neutralize(subject: str, reason: DropReason | None, judge: _Judge) -> str | None:
    """A title made of a dropped subject (module docstring), or ``None``: the subject cut
    before its "by <doing>" clause (approach), or without its implementation names."""
    if reason is DropReason.approach:
        text = _MEANS.sub("", subject)
        words = text.split() if text != subject else []
    elif reason is DropReason.implementation:
        words = _without_names(subject, judge)
    else:
        return None
    while words and words[-1].lower().strip(",.;:") in _FUNCTION_WORDS:
        words.pop()
    title = " ".join(words).strip(" ,.;:-")
    if len(title.split()) < MIN_TITLE_WORDS or judge.verdict(title, body=False) is not None:
        return None
    return title


def _without_names(subject: str, judge: _Judge) -> list[str]:
    """The subject's words with its hidden names taken out, or ``[]`` when the sentence
    cannot do without one (:func:`_gap_fits`); a name that ends a clause ends the title."""
    hidden = judge.hidden(subject)
    text = re.sub(r"`[^`]*`", lambda m: _GAP if judge.hidden(m.group()) else m.group(),
                  subject)
    for name in sorted(hidden, key=len, reverse=True):
        text = re.sub(rf"(?:[\w$]+(?:\.|::))*(?<![\w$]){re.escape(name)}(?![\w$])"
                      rf"(?:(?:\.|::)[\w$]+)*(?:\(\))?", _GAP, text)
    words = [w for w in text.split() if re.search(rf"\w|{_GAP}", w)]
    out: list[str] = []
    for i, word in enumerate(words):
        if _GAP not in word:
            out.append(word)
            continue
        ends = word.rstrip(".,;:!?") != word or i + 1 == len(words)
        after = None if ends else words[i + 1].lower()
        if not _gap_fits(out[-1].lower() if out else None, word, after):
            return []
        if ends or out[-1].lower() in _ARTICLES:
            out.pop()  # the preposition or article goes with the name
        if ends:
            return out
    return out


def _gap_fits(before: str | None, word: str, after: str | None) -> bool:
    """Whether a name can leave the sentence: it qualifies the next word ("Add an optional
    logger param") or ends the clause after a preposition ("... for VisitValue"); not when
    it starts the subject, is glued to other text, follows "and"/"is"/"when"..., or comes
    before a function word or a symbol ("Remove X in favor of Y", "Fix X for Y", "X -> Y")."""
    if before is None or word.strip(_GAP + ".,;:!?"):
        return False
    if before in _FUNCTION_WORDS - _PREPOSITIONS - _ARTICLES:
        return False
    if after is None:
        return before in _PREPOSITIONS
    return after not in _FUNCTION_WORDS and after[:1].isalnum() and _GAP not in after


def _title_from(unit: _Unit) -> tuple[str, bool]:
    """A title made of a kept sentence, and whether it is the whole sentence."""
    text = _BULLET_MARK.sub("", unit.text).strip().rstrip(".")
    if len(text) <= MAX_TITLE_CHARS:
        return text[:1].upper() + text[1:], True
    cut = text[:MAX_TITLE_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut[:1].upper() + cut[1:] + "…", False


def _summary(subject: str, reason: DropReason | None, body: list[list[_Unit]],
             judge: _Judge) -> tuple[str, SummarySource]:
    """The title (module docstring), given the subject's verdict; a body sentence used
    whole as the title leaves the body."""
    if subject and reason is None:
        return subject, SummarySource.subject
    if title := _neutralize(subject, reason, judge):
        return title, SummarySource.neutralized
    first = next((u for para in body for u in para if u.kind is not _Kind.code), None)
    if first is None:
        return "", SummarySource.none
    title, whole = _title_from(first)
    if whole:
        for para in body:
            if first in para:
                para.remove(first)
    return title, SummarySource.body


def clean_commit_message(message: str, gold_patch: str, *,
                         test_patch: str = "") -> CleanedMessage:
    """Reduce a fix commit's message to the problem it fixes (rules: module docstring).

    Args:
        message: the commit message, as git stores it.
        gold_patch: the fix's non-test diff; its changed lines decide what is implementation.
        test_patch: the fix's test diff; the names the tests use may stay in the statement.

    Returns:
        The summary, the kept paragraphs and every dropped part with its reason. The
        summary is empty only when nothing usable remained (``needs_statement``).
    """
    msg = _split_message(message)
    _strip_trailers(msg)
    _strip_commit_list(msg)
    subject = _subject(msg)
    judge = _Judge.of(gold_patch, test_patch)
    reason = judge.verdict(subject, body=False) if subject else None
    if reason is not None:
        msg.drop(reason, subject)
    body = _kept_body(msg, judge)
    summary, source = _summary(subject, reason, body, judge)
    paragraphs = tuple(text for para in body if para and (text := _render(para)))
    if not summary:
        for text in paragraphs:  # only code blocks were left: nothing to title them
            msg.drop(DropReason.untitled, text)
        paragraphs = ()
    return CleanedMessage(summary=summary, body=paragraphs, dropped=tuple(msg.dropped),
                          summary_source=source)
