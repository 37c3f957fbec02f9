"""The Java grammar: registered by name and suffix, its own family, and what counts as a
real change (never in a test file)."""

from __future__ import annotations

import pytest

from repogym.generators.mutators.grammars import GRAMMARS, Grammar, family_grammar, grammar_for
from repogym.generators.mutators.java.grammar import JAVA, JavaGrammar
from tests.generators.java.support import parse


def test_registered_as_java_in_its_own_family() -> None:
    assert GRAMMARS.get("java") is JavaGrammar
    assert JavaGrammar.family == "java" and JavaGrammar.suffixes == (".java",)
    assert isinstance(family_grammar("java"), JavaGrammar)


@pytest.mark.parametrize("path", ["A.java", "src/main/java/org/x/Parser.java",
                                  "src/test/java/org/x/ParserTest.java"])
def test_grammar_for_picks_java_files(path: str) -> None:
    grammar = grammar_for(path)
    assert grammar is not None and grammar.name == "java"
    assert grammar_for("pom.xml") is None and grammar_for("A.class") is None


def test_parses_modern_java_and_flags_broken_code() -> None:
    parse("package p;\n\nrecord R(int a) {\n    int f(Object o) {\n"
          "        return switch (o) {\n            case String s -> s.length();\n"
          "            default -> 0;\n        };\n    }\n}\n")
    assert not JAVA.parses_cleanly(b"class A { int f( { return 1 + } }\n")


ORIGINAL = "package p;\n\nclass A {\n    boolean f(int a) {\n        // keep\n" \
           "        return a < 1;\n    }\n}\n"


@pytest.mark.parametrize(("mutated", "real"), [
    (ORIGINAL.replace("        // keep\n", ""), False),                  # comment dropped
    (ORIGINAL.replace("return a < 1;", "return a  <  1 ;"), False),      # layout
    (ORIGINAL.replace("a < 1", "a >= 1"), True),
    (ORIGINAL.replace("a < 1", "a < 2"), True),
])
def test_real_change_ignores_comments_and_layout(mutated: str, real: bool) -> None:
    assert JAVA.real_change("src/main/java/p/A.java", ORIGINAL, mutated, 6) is real
    assert Grammar.real_change(JAVA, "src/main/java/p/A.java", ORIGINAL, mutated, 6) is real


@pytest.mark.parametrize("path", ["src/test/java/p/A.java", "core/src/test/java/p/A.java",
                                  "src/it/p/A.java", "p/ATest.java", "p/ATests.java",
                                  "p/AIT.java", "p/ATestCase.java"])
def test_no_change_to_a_test_file_is_real(path: str) -> None:
    mutated = ORIGINAL.replace("a < 1", "a >= 1")
    assert not JAVA.real_change(path, ORIGINAL, mutated, 6)
