"""The Go grammar: registered by name and suffix, its own family, and what counts as a real
change (never in a test file, never one that stops the file from building)."""

from __future__ import annotations

import pytest

from repogym.generators.mutators.golang.grammar import GO, GoGrammar
from repogym.generators.mutators.grammars import GRAMMARS, Grammar, family_grammar, grammar_for
from tests.generators.golang.support import parse


def test_registered_as_go_in_its_own_family() -> None:
    assert GRAMMARS.get("go") is GoGrammar
    assert GoGrammar.family == "go" and GoGrammar.suffixes == (".go",)
    assert isinstance(family_grammar("go"), GoGrammar)


@pytest.mark.parametrize("path", ["uuid.go", "pkg/sub/a.go", "cmd/tool/main.go",
                                  "uuid_test.go"])
def test_grammar_for_picks_go_files(path: str) -> None:
    grammar = grammar_for(path)
    assert grammar is not None and grammar.name == "go"
    assert grammar_for("go.mod") is None and grammar_for("a.gox") is None


def test_parses_generics_and_flags_broken_code() -> None:
    parse("package p\n\nfunc Map[T, U any](xs []T, f func(T) U) []U {\n\treturn nil\n}\n")
    assert not GO.parses_cleanly(b"package p\n\nfunc f( {\n\treturn 1 +\n}\n")


ORIGINAL = "package p\n\nfunc f(a int) bool {\n\t// keep\n\treturn a < 1\n}\n"


@pytest.mark.parametrize(("mutated", "real"), [
    ("package p\n\nfunc f(a int) bool {\n\treturn a < 1\n}\n", False),       # comment dropped
    ("package p\n\nfunc f(a int) bool {\n\t/* x */ return a  <  1\n}\n", False),  # layout
    ("package p\n\nfunc f(a int) bool {\n\t// keep\n\treturn a >= 1\n}\n", True),
    ("package p\n\nfunc f(a int) bool {\n\t// keep\n\treturn a < 2\n}\n", True),
])
def test_real_change_ignores_comments_and_layout(mutated: str, real: bool) -> None:
    assert GO.real_change("p/a.go", ORIGINAL, mutated, 5) is real
    assert Grammar.real_change(GO, "p/a.go", ORIGINAL, mutated, 5) is real  # the default


def test_no_change_to_a_test_file_is_real() -> None:
    mutated = ORIGINAL.replace("a < 1", "a >= 1")
    assert not GO.real_change("p/a_test.go", ORIGINAL, mutated, 5)
    assert GO.real_change("p/a.go", ORIGINAL, mutated, 5)


def test_a_change_that_does_not_build_is_not_real() -> None:
    original = "package p\n\nfunc f() int {\n\tn := g()\n\th(n)\n\treturn 1\n}\n"
    unused = original.replace("\th(n)\n", "")
    missing_return = original.replace("\treturn 1\n", "")
    assert not GO.real_change("p/a.go", original, unused, 5)
    assert not GO.real_change("p/a.go", original, missing_return, 6)
    assert GO.real_change("p/a.go", original, original.replace("return 1", "return 0"), 6)
