"""Wording: the observed behaviours as an issue a user would file.

A statement is a title, an opening, a sentence per behaviour (grouped by function, a
heading each when there are several; a failing check's scrubbed output for a test nothing
could be read from), an "expected" heading and a closing (:func:`write_statement`). Each
part has several forms; :func:`_pick` chooses one from the candidate's instance id and
the slot, so the same candidate always reads the same and no one template dominates
(without a candidate, the first and plainest). A line that quotes the patch
(:func:`leaks`) or names a test is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from repogym.generators.statements.messages import raw_lines
from repogym.generators.statements.observed import Observed
from repogym.patches import diff_text_lines
from repogym.schemas.calls import StatementEvidence
from repogym.schemas.records import Candidate, short_hash

MAX_FUNCTIONS = 6  # broken functions described
MAX_EXAMPLES = 2  # calls shown per function
MIN_LEAK_CHARS = 8


def leaks(text: str, patch: str) -> list[str]:
    """The patch lines (added or removed, stripped) that the text quotes."""
    norm = re.sub(r"\s+", " ", text)
    out = []
    for line in diff_text_lines(patch):
        probe = re.sub(r"\s+", " ", line).strip()
        if len(probe) >= MIN_LEAK_CHARS and probe in norm:
            out.append(probe)
    return out


def _pick(cand: Candidate | None, slot: str, options: Sequence[str]) -> str:
    """One of ``options``, always the same for this candidate and slot (no candidate: the
    first, plainest one)."""
    if cand is None:
        return options[0]
    return options[int(short_hash(cand.instance_id, slot), 16) % len(options)]


RETURNS = ("{c} returns `{got}`; it should return `{exp}`.",
           "{c} returns `{got}`, but it should return `{exp}`.",
           "Calling {c} gives `{got}`; it should give `{exp}`.",
           "{c} now returns `{got}` instead of `{exp}`.",
           "I expected {c} to return `{exp}`, but it returns `{got}`.")
RAISES_NOT_RETURNS = ("{c} raises `{exc}`; it should return `{exp}`.",
                      "Calling {c} fails with `{exc}`; it should return `{exp}`.",
                      "I expected {c} to return `{exp}`, but it raises `{exc}`.")
RETURNS_NOT_RAISES = ("{c} returns `{got}`; it should raise `{should}`.",
                      "{c} returns `{got}`, but it should raise `{should}`.",
                      "I expected {c} to raise `{should}`, but it returns `{got}`.")
RAISES_OTHER = ("{c} raises `{exc}`; it should raise `{should}`.",
                "I expected {c} to raise `{should}`, but it raises `{exc}`.")
# when no call is known ("it" would stand for nothing): what the check saw, not a call
RETURNS_NO_CALL = ("I get `{got}` where `{exp}` is expected.",
                   "The result is `{got}`; it should be `{exp}`.",
                   "I get `{got}`, but the right result is `{exp}`.")
RAISES_NO_CALL = ("An error is raised, `{exc}`, where `{exp}` is expected.",
                  "Instead of `{exp}`, I get the error `{exc}`.")
IS = ("{c} is `{got}`; it should be `{exp}`.", "{c} is `{got}`, but it should be `{exp}`.",
      "I expected {c} to be `{exp}`, but it is `{got}`.")
HANGS = ("{c} never returns (it hangs){then}.", "{c} hangs: it never returns{then}.")
NOT_RAISED = ("{c} does not raise; it should raise `{should}`.",
              "I expected {c} to raise `{should}`, but it does not.")
TITLES = ("`{f}` returns wrong results", "Wrong results from `{f}`",
          "`{f}` no longer gives the right answer", "Unexpected results from `{f}`",
          "Bug in `{f}`")
TITLES_HANG = ("`{f}` hangs", "`{f}` never returns", "`{f}` gets stuck")
TITLES_MANY = ("Wrong results from {fs}", "{fs} misbehave",
               "Several functions give wrong results: {fs}", "Bugs in {fs}")
OPENINGS = ("With the current code, I get wrong results from {s}.",
            "I ran into a problem with {s}.", "Something is off with {s}.",
            "Using {s}, I get results I did not expect.",
            "Here is what I see when I use {s}.")
HEADINGS = ("## Expected behaviour", "## What I expected", "## Expected",
            "### Expected result")
CLOSINGS = ("I expect the behaviour described above; what works today should keep working.",
            "Please make {s} give the results described above again.",
            "I would expect the results given above, with no other change in behaviour.",
            ("For these inputs {s} should give the values I expected; other inputs should "
             "not change."))


def write_statement(cand: Candidate, evidence: StatementEvidence, observed: list[Observed],
                    unread: Sequence[str]) -> str:
    """The statement of the ``observed`` behaviours, with the failing checks' output of the
    first test in ``unread`` (up to two when nothing was observed); every line is clean
    (:func:`_clean`)."""
    groups = _group(observed)
    subject, parts = _head(cand, observed, [f for f in groups if f])
    said = _body(groups, cand, evidence.fail_to_pass)
    said += _raw_blocks(unread[:1] if observed else unread, evidence, cand)
    parts += said or ["It returns a different value, or raises, where it used to succeed.", ""]
    closing = _pick(cand, "closing", CLOSINGS).format(s=subject)
    parts += [_pick(cand, "heading", HEADINGS), "", closing]
    return "\n".join(line for line in parts if not line
                     or _clean(line, cand, evidence.fail_to_pass)).strip() + "\n"


def _head(cand: Candidate, observed: list[Observed], named: list[str]) -> tuple[str, list[str]]:
    """The subject (the functions named, else the changed one), and the title and opening."""
    subject = _names(named) if named else f"`{_subject(cand)}`"
    module = _subject(cand).rpartition(".")[0] if cand.provenance.get("function") else ""
    about = f"{subject} (in `{module}`)" if named and module and not any(
        "." in f for f in named) else subject
    if len(named) > 1:
        title = _pick(cand, "title", TITLES_MANY).format(fs=subject)
    else:
        hangs = bool(observed) and all(o.hangs for o in observed)
        title = _pick(cand, "title", TITLES_HANG if hangs else TITLES).format(
            f=subject.strip("`"))
    opening = _pick(cand, "opening", OPENINGS).format(s=about)
    return subject, [f"# {title}", "", opening, ""]


def _body(groups: dict[str, list[Observed]], cand: Candidate, f2p: Sequence[str]) -> list[str]:
    """The behaviours, grouped by function (a heading each when there are several); what
    no call names comes last."""
    lines: list[str] = []
    many = len([k for k in groups if k]) > 1
    above = [o for f, obs in groups.items() if f for o in obs[:MAX_EXAMPLES]]
    for function in sorted(groups, key=lambda f: f == ""):
        cap = MAX_EXAMPLES if function else MAX_EXAMPLES + 2
        shown = groups[function] if function else [
            o for o in groups[function] if o.call is not None or not _said_above(o, above)]
        sentences = [s for o in shown[:cap] if (s := sentence(o, cand))]
        sentences = [s for s in sentences if _clean(s, cand, f2p)]
        if not sentences:
            continue
        if many:
            lines += [f"### `{function}`" if function else "### Also", ""]
        lines += [f"- {s}" for s in sentences] + [""]
    return lines


def _said_above(o: Observed, above: Sequence[Observed]) -> bool:
    """Whether a behaviour no call names repeats one a call ``above`` shows: the error it
    raised, the error kind it should have raised, or the value it returned where it should
    have returned the same other one, or a comparison of those two values (kleur:
    ``kleur.red()`` returns ``undefined [string]``, then again, with no call, "the result is
    ``undefined [string]``")."""
    if o.raises and o.raises in {x.raises for x in above}:
        return True
    if o.should_raise and not o.raises and _kind(o.should_raise) in {
            _kind(x.should_raise) for x in above if x.should_raise}:
        return True
    pairs = {(x.returns, x.should_return) for x in above if x.returns is not None}
    if o.compared and (o.compared in pairs or o.compared[::-1] in pairs):
        return True  # the same two values, the sides unknown
    return o.returns is not None and (o.returns, o.should_return) in pairs


def _raw_blocks(tests: Sequence[str], ev: StatementEvidence, cand: Candidate) -> list[str]:
    """What the failing checks of up to two ``tests`` report, scrubbed; each block once."""
    out: list[str] = []
    seen: list[list[str]] = []
    for test in tests[:2]:
        lines = raw_lines(ev.messages.get(test, ""))
        block = [line for line in lines if _clean(line, cand, ev.fail_to_pass)]
        if block and block not in seen:
            seen.append(block)
            out += ["A failing check reports:", "", "```", *block, "```", ""]
    return out


def _kind(error: str | None) -> str:
    """An error's type: ``TypeError`` of ``TypeError: not all arguments converted``."""
    return (error or "").split(":", 1)[0].strip()


def sentence(o: Observed, cand: Candidate | None) -> str | None:
    """One behaviour in words (a template chosen per candidate), None if it says nothing."""
    text = _template(o, cand)
    return text[:1].upper() + text[1:] if text else None


def _template(o: Observed, cand: Candidate | None) -> str | None:
    c = f"`{o.call}`" if o.call else "it"
    fill = {"c": c, "got": o.returns, "exp": o.should_return, "exc": o.raises,
            "should": o.should_raise}
    if o.hangs:
        then = f", where it should return `{o.should_return}`" if o.should_return else \
            (f", where it should raise `{o.should_raise}`" if o.should_raise else "")
        return _pick(cand, "hangs", HANGS).format(then=then, **fill)
    if o.raises and o.should_return:
        raising: Sequence[str] = RAISES_NOT_RETURNS if o.call else RAISES_NO_CALL
        return _pick(cand, "raises", raising).format(**fill)
    if o.raises and o.should_raise:
        return _pick(cand, "raises_other", RAISES_OTHER).format(**fill)
    if o.returns is not None and o.should_raise:
        return _pick(cand, "not_raise", RETURNS_NOT_RAISES).format(**fill)
    if o.should_raise:
        return _pick(cand, "not_raised", NOT_RAISED).format(**fill)
    if o.returns is not None and o.should_return is not None:
        forms: Sequence[str] = (RETURNS_NO_CALL if not o.call
                                else IS if _attribute(o.call) else RETURNS)
        return _pick(cand, "returns", forms).format(**fill)
    return _other_sentence(o, c)


def _attribute(call: str) -> bool:
    """``Rect(2, 3).area``, ``<Point object>.x``: a value read, not a call made."""
    return bool(re.search(r"[\w)>\]]\.\w+$", call.split("` on `")[0]))


def _other_sentence(o: Observed, c: str) -> str | None:
    if o.returns is not None and o.truthy is not None:
        kind = "true" if o.truthy else "false"
        return f"{c} returns `{o.returns}`; it should return a {kind} value."
    if o.returns is not None and o.member is not None:
        return f"{c} returns `{o.returns}`, which does not contain `{o.member}`."
    if o.raises:
        return f"{c} raises `{o.raises}`."
    if o.compared:
        a, b = o.compared
        lead = f"with {c}, a" if o.call else "a"
        if o.op == "in":
            return f"{lead} check looks for `{a}` in `{b}` and does not find it."
        if o.op in ("==", "is"):
            return f"{lead} check compares `{a}` with `{b}`, and they differ."
        return f"{lead} check `{a} {o.op} {b}` fails."
    if o.note:
        return f"after {c}, {o.note}." if o.call else f"{o.note}."
    if o.returns is not None:
        return f"{c} returns `{o.returns}`, which is not what it should return."
    return None


def _subject(cand: Candidate) -> str:
    """The changed function as its language names it (``geo.shapes.area`` in Python), else
    its module."""
    from repogym.toolchains import toolchain_for

    path = cand.files[0] if cand.files else ""
    if not path:
        return "the library"
    return toolchain_for(cand.language).qualified_name(path, cand.provenance.get("function"))


def _group(observed: Iterable[Observed]) -> dict[str, list[Observed]]:
    """The behaviours by function, each once, for the first :data:`MAX_FUNCTIONS`."""
    observed = list(observed)
    qualified = {o.function for o in observed if o.function and "." in o.function}
    groups: dict[str, list[Observed]] = {}
    for o in observed:
        key = _qualified(o.function or "", qualified)
        if not _said(o, groups.get(key, [])):
            groups.setdefault(key, []).append(o)
    return dict(list(groups.items())[:MAX_FUNCTIONS])


def _said(o: Observed, group: list[Observed]) -> bool:
    """Whether ``group`` already says ``o``: the same behaviour of the same call, or of a
    call ``o`` only names less precisely (none, or with ``…`` for a test's local)."""
    if o.key in {x.key for x in group}:
        return True
    vague = o.call is None or "…" in o.call
    return vague and any(x.key[1:] == o.key[1:] for x in group)


def _qualified(name: str, qualified: set[str]) -> str:
    """A bare name an assertion gave (``ordinalize``) as the one traced function it names
    (``inflection.ordinalize``): one heading per function, not two."""
    if not name or "." in name:
        return name
    matches = [q for q in qualified if q.rpartition(".")[2] == name]
    return matches[0] if len(matches) == 1 else name


def _clean(line: str, cand: Candidate, f2p: Sequence[str]) -> bool:
    """A line a statement may carry: it quotes no patch line and names no test."""
    if leaks(line, cand.bug_patch) or leaks(line, cand.gold_patch):
        return False
    return not any(name and re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", line)
                   for name in _test_names(f2p))


def _test_names(f2p: Sequence[str]) -> set[str]:
    names = set()
    for nodeid in f2p:
        parts = re.split(r"::| > ", nodeid)  # pytest, cargo; JavaScript runners' titles
        last = parts[-1].split("[")[0]
        if " > " not in nodeid or " " in last:  # a one-word title is an ordinary word
            names.add(last)
        if len(parts) > 1:
            names.update({parts[0], parts[0].rsplit("/", 1)[-1]})
    return names


def _names(functions: Sequence[str]) -> str:
    quoted = [f"`{f}`" for f in functions]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
