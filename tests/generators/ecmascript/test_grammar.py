"""The JavaScript, TypeScript and TSX grammars: registered by name and suffix, one family,
and what counts as a real change."""

from __future__ import annotations

import pytest

from repogym.generators.mutators.grammars import GRAMMARS, Grammar, family_grammar, grammar_for
from tests.generators.ecmascript.support import GRAMMARS as BY_LANG
from tests.generators.ecmascript.support import parse


def test_three_grammars_of_one_family() -> None:
    assert {"javascript", "typescript", "tsx"} <= set(GRAMMARS.names())
    for name in ("javascript", "typescript", "tsx"):
        assert GRAMMARS.get(name).family == "ecmascript"
    assert family_grammar("ecmascript").family == "ecmascript"


@pytest.mark.parametrize(("path", "name"), [
    ("index.js", "javascript"), ("lib/a.mjs", "javascript"), ("a.cjs", "javascript"),
    ("ui/App.jsx", "javascript"), ("src/index.ts", "typescript"), ("a.mts", "typescript"),
    ("a.cts", "typescript"), ("types/index.d.ts", "typescript"), ("ui/App.tsx", "tsx"),
    ("pkg/mod.py", "python")])
def test_grammar_for_picks_by_suffix(path: str, name: str) -> None:
    grammar = grammar_for(path)
    assert grammar is not None and grammar.name == name
    assert grammar_for("README.md") is None


def test_each_language_parses_its_own_syntax() -> None:
    parse("const el = <div className={a}>{b}</div>;\n", "js")
    parse("const n = <number>value;\n", "ts")
    parse("const el = <Box<T> size={1} />;\n", "tsx")
    assert BY_LANG["js"].parse(b"const n: number = 1;\n").root_node.has_error


ORIGINAL = "function f(a) {\n  // keep\n  return a < 1;\n}\n"


@pytest.mark.parametrize(("mutated", "real"), [
    ("function f(a) {\n  return a < 1;\n}\n", False),                   # comment dropped
    ("function f(a) {\n  /* other */ return a  <  1;\n}\n", False),      # layout only
    ("function f(a) {\n  // keep\n  return a >= 1;\n}\n", True),
    ("function f(a) {\n  // keep\n  return 'a' < 1;\n}\n", True),
])
@pytest.mark.parametrize("lang", ["js", "ts", "tsx"])
def test_real_change_ignores_comments_and_layout(mutated: str, real: bool, lang: str) -> None:
    grammar = BY_LANG[lang]
    assert grammar.real_change("src/a.ts", ORIGINAL, mutated, 3) is real
    assert Grammar.real_change(grammar, "src/a.ts", ORIGINAL, mutated, 3) is real  # the default


def test_no_change_to_a_declaration_file_is_real() -> None:
    before = "export declare function f(a?: boolean): void;\n"
    after = "export declare function f(a?: number): void;\n"
    assert not BY_LANG["ts"].real_change("types/index.d.ts", before, after, 1)
    assert BY_LANG["ts"].real_change("types/index.ts", before, after, 1)
