"""Values as a statement may show them: no object address, no name only the tests know.

Messages and traced calls show values as reprs. Before a statement quotes one,
:func:`scrub` takes out object addresses and the names of the tests' own objects,
:func:`display` also shortens it to :data:`MAX_VALUE` characters, and :func:`same_value`
tells whether two reprs are the same value (as literals when they parse, else as text).
"""

from __future__ import annotations

import json
import re

from repogym import pyast

MAX_VALUE = 120  # characters of a value shown

OBJECT = re.compile(r"<([\w.]+) object at 0x[0-9a-fA-F]+>")
"""A default object repr, ``<pkg.X object at 0x..>`` (group 1: the class's dotted name)."""
_FUNCTION = re.compile(r"<(?:function|bound method|built-in method) ([\w.<>]+)(?: of <[^<>]*>)?"
                       r"(?: at 0x[0-9a-fA-F]+)?>")
# ``at 0x..`` (default reprs), ``id='..'`` (mocks), a bare 64-bit heap pointer; a hex *value*
# such as ``'0xff'`` stays
_ADDRESS = re.compile(r"\s*\bat 0x[0-9a-fA-F]+| id='\d+'|\b0x(?:7f|55|56)[0-9a-fA-F]{10}\b")


def scrub(text: str) -> str:
    """``text`` without object addresses, and without the names of the tests' own objects:
    ``<pkg.X object at 0x..>`` -> ``<X object>``, a lambda or a test's local function ->
    ``<function>``, a test module's object -> ``<object>``."""
    text = OBJECT.sub(_object_text, text)
    text = _FUNCTION.sub(_function_text, text)
    return _ADDRESS.sub("", text)


def _object_text(match: re.Match[str]) -> str:
    module, _, name = match.group(1).rpartition(".")
    return "<object>" if is_test_module(module) else f"<{name} object>"


def _function_text(match: re.Match[str]) -> str:
    """A closure a project function returns reads as ``outer(...)``; any other function
    as ``<function>`` (a message cannot tell the project's from the tests' own)."""
    name = match.group(1).strip()
    outer, local, _ = name.partition(".<locals>.")
    if local and "<" not in outer and not outer.split(".")[-1].startswith("test"):
        return f"{outer}(...)"
    return "<function>"


def is_test_module(module: str) -> bool:
    """A dotted module name of the tests (``tests.x``, ``test_x``, ``x_test``, ``conftest``)."""
    parts = module.split(".")
    return any(p.startswith("test_") or p.endswith("_test") or p in ("tests", "test", "conftest")
               for p in parts if p)


# what unittest leaves of a long value's middle (``[188 chars]``): shown as ``…``
_UNITTEST_CUT = re.compile(r"\[\d+ chars\]")


def display(value: str) -> str:
    """``value`` scrubbed and cut to :data:`MAX_VALUE` characters (ending in ``…``); a
    part unittest cut out reads ``…`` too."""
    value = _UNITTEST_CUT.sub("…", scrub(value))
    return value if len(value) <= MAX_VALUE else value[:MAX_VALUE - 1] + "…"


def display_pair(got: str, want: str) -> tuple[str, str]:
    """Two values of one comparison, each as :func:`display` shows it, but so that they
    still look different when they are: values that differ only in spaces, or of which one
    is empty, are quoted (a trailing space shows; an empty value is ``""``, not nothing), and long values that would be cut to the same text are cut
    around their first difference (``…`` on the side cut away)."""
    got, want = (_UNITTEST_CUT.sub("…", scrub(v)) for v in (got, want))
    if got != want and (got.strip() == want.strip() or not got.strip() or not want.strip()):
        got, want = (json.dumps(v, ensure_ascii=False) for v in (got, want))
    a, b = display(got), display(want)
    if got == want or a != b:
        return a, b
    first = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y),
                 min(len(got), len(want)))
    start = max(0, first - MAX_VALUE // 3)
    return _window(got, start), _window(want, start)


def _window(value: str, start: int) -> str:
    text = ("…" if start else "") + value[start:]
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + "…"


def same_value(a: str, b: str) -> bool:
    """Two reprs of the same value: equal as literals, or (when not literals) as text."""
    a, b = scrub(a), scrub(b)
    try:
        return bool(pyast.literal_eval(a) == pyast.literal_eval(b))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return a.strip() == b.strip()
