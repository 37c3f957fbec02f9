"""Each java mutator: exact sites on small Java snippets (every mutant parses cleanly and
is a real change: see ``support.mutants``), what it must leave alone so the code still
compiles, and one conformance suite every ``java_`` mutator passes (and, slow, javac on
every mutant of a corpus)."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent, indent

import pytest

from repogym.generators.mutators import MUTATORS
from repogym.generators.mutators.java.grammar import JAVA
from repogym.generators.mutators.java.runtime import in_runtime_code
from repogym.generators.mutators.java.scopes import enclosing_function
from tests.generators.java.support import (
    JAVA_KINDS,
    compile_each,
    descriptions,
    mutants,
    sites,
)

EXPECTED_KINDS = {
    "java_arithmetic_swap", "java_bitwise_swap", "java_break_call_chain",
    "java_comparison_flip", "java_constant_swap", "java_invert_if_else",
    "java_logical_swap", "java_negate_condition", "java_off_by_one",
    "java_remove_conditional", "java_remove_early_return", "java_remove_statement",
    "java_return_value", "java_swap_arguments", "java_ternary_swap", "java_update_flip"}


def test_all_kinds_registered_in_the_java_family() -> None:
    assert set(JAVA_KINDS) == EXPECTED_KINDS
    assert {MUTATORS.get(kind).family for kind in JAVA_KINDS} == {"java"}
    assert not any(MUTATORS.get(kind).edits_defaults for kind in JAVA_KINDS)


def body(code: str, signature: str = "int f(int a, int b)", members: str = "") -> str:
    """``code`` as the body of a method ``signature`` of class ``A`` (after ``members``)."""
    lines = indent(dedent(code), "        ")
    extra = indent(dedent(members), "    ") if members else ""
    return f"package p;\n\nclass A {{\n{extra}    {signature} {{\n{lines}\n    }}\n}}\n"


# --- operators -------------------------------------------------------------------------

@pytest.mark.parametrize(("op", "flipped"), [
    ("<", ">="), (">=", "<"), (">", "<="), ("<=", ">"), ("==", "!="), ("!=", "==")])
def test_comparison_flip(op: str, flipped: str) -> None:
    assert mutants("java_comparison_flip", body(f"return a {op} b ? 1 : 0;")) == [
        body(f"return a {flipped} b ? 1 : 0;")]


def test_comparison_flip_describes_and_leaves_constants_alone() -> None:
    assert descriptions("java_comparison_flip", body("return a < b ? 1 : 0;")) == [
        (5, "`<` replaced by `>=`")]
    assert mutants("java_comparison_flip", body("while (1 < 2) {\n    a++;\n}")) == []


@pytest.mark.parametrize(("before", "after"), [
    ("a + b", "a - b"), ("a - b", "a + b"), ("a * b", "a / b"), ("a / b", "a * b"),
    ("a % b", "a * b")])
def test_arithmetic_swap(before: str, after: str) -> None:
    assert mutants("java_arithmetic_swap", body(f"return {before};")) == [
        body(f"return {after};")]


def test_arithmetic_swap_compound_assignments() -> None:
    assert mutants("java_arithmetic_swap", body("a += b;\nb *= 2;\nreturn a;")) == [
        body("a -= b;\nb *= 2;\nreturn a;"), body("a += b;\nb /= 2;\nreturn a;")]


def test_arithmetic_swap_only_adds_what_surely_are_numbers() -> None:
    source = body("""\
        String out = "[" + s;
        out += s;
        Object o = name + a;
        int n = s.length() + a + items.length;
        long m = count() + a;
        return a * 0 + n;""", signature="int f(int a, String s, int[] items)",
                  members="String name;\n")
    assert [d for _, d in descriptions("java_arithmetic_swap", source)] == [
        "`+` replaced by `-`", "`+` replaced by `-`", "`+` replaced by `-`"]
    assert mutants("java_arithmetic_swap", source)[0] == source.replace(
        "s.length() + a + items", "s.length() + a - items")


def test_bitwise_swap() -> None:
    assert mutants("java_bitwise_swap", body("return a & 0x3f | b << 2 ^ a >>> 1;")) == [
        body("return a & 0x3f & b << 2 ^ a >>> 1;"),
        body("return a | 0x3f | b << 2 ^ a >>> 1;"),
        body("return a & 0x3f | b << 2 & a >>> 1;"),
        body("return a & 0x3f | b >> 2 ^ a >>> 1;"),
        body("return a & 0x3f | b << 2 ^ a << 1;")]
    assert mutants("java_bitwise_swap", body("return 1 << 7;")) == []


def test_logical_swap() -> None:
    assert mutants("java_logical_swap", body("return a > 0 && b > 0 || a < b;",
                                             signature="boolean f(int a, int b)")) == [
        body("return a > 0 && b > 0 && a < b;", signature="boolean f(int a, int b)"),
        body("return a > 0 || b > 0 || a < b;", signature="boolean f(int a, int b)")]


def test_logical_swap_leaves_patterns_and_conditional_assignments_alone() -> None:
    source = body("""\
        if (o instanceof String s && s.isEmpty()) {
            return 1;
        }
        int n;
        if (o != null && (n = o.hashCode()) > 0) {
            return n;
        }
        return 0;""", signature="int f(Object o)")
    assert mutants("java_logical_swap", source) == []


def test_update_flip_in_loops_only() -> None:
    source = body("for (int i = 0; i < a; i++) {\n    --b;\n}\na++;\nreturn b;")
    assert mutants("java_update_flip", source) == [
        body("for (int i = 0; i < a; i--) {\n    --b;\n}\na++;\nreturn b;"),
        body("for (int i = 0; i < a; i++) {\n    ++b;\n}\na++;\nreturn b;")]


# --- conditions ------------------------------------------------------------------------

def test_negate_condition_if_while_do_for() -> None:
    source = body("""\
        if (a > b) {
            return 1;
        }
        while (a < b && b > 0) {
            a++;
        }
        do {
            b--;
        } while (!done(b));
        for (int i = 0; i < a; i++) {
            b += i;
        }
        return b;""")
    found = mutants("java_negate_condition", source)
    assert found == [source.replace("if (a > b)", "if (!(a > b))"),
                     source.replace("while (a < b && b > 0)", "while (!(a < b && b > 0))"),
                     source.replace("while (!done(b))", "while (done(b))"),
                     source.replace("i < a;", "!(i < a);")]
    assert descriptions("java_negate_condition", source)[2] == (11, "do-while condition negated")


def test_negate_condition_leaves_constants_patterns_and_endless_loops_alone() -> None:
    source = body("""\
        while (true) {
            if (o instanceof String s) {
                return s.length();
            }
            for (;;) {
                break;
            }
        }""", signature="int f(Object o)")
    assert mutants("java_negate_condition", source) == []


def test_negate_condition_leaves_loops_on_constant_names_alone() -> None:
    source = body("while (RUNNING) {\n    a++;\n}\nif (DEBUG) {\n    a--;\n}\nreturn a;")
    assert mutants("java_negate_condition", source) == [
        source.replace("if (DEBUG)", "if (!DEBUG)")]


def test_negate_condition_keeps_plain_assignments() -> None:
    source = body("int n;\nwhile ((n = read()) >= 0) {\n    a += n;\n}\nreturn a;")
    assert mutants("java_negate_condition", source) == [
        source.replace("while ((n = read()) >= 0)", "while (!((n = read()) >= 0))")]


def test_invert_if_else() -> None:
    source = body("if (a > b) {\n    return a;\n} else {\n    return b;\n}")
    assert mutants("java_invert_if_else", source) == [
        body("if (a > b) {\n    return b;\n} else {\n    return a;\n}")]
    brace_less = body("if (a > b) a++;\nelse b++;\nreturn a;")
    assert mutants("java_invert_if_else", brace_less) == [
        body("if (a > b) b++;\nelse a++;\nreturn a;")]


def test_invert_if_else_leaves_else_if_equal_branches_and_patterns_alone() -> None:
    source = body("""\
        if (a > b) {
            a++;
        } else if (a < b) {
            b++;
        }
        if (a == b) {
            a++;
        } else {
            a++;
        }
        if (o instanceof String s) {
            return s.length();
        } else {
            return 0;
        }""", signature="int f(int a, int b, Object o)")
    assert mutants("java_invert_if_else", source) == []


def test_ternary_swap() -> None:
    source = body("return a > b ? a : b;")
    assert mutants("java_ternary_swap", source) == [body("return a > b ? b : a;")]
    assert descriptions("java_ternary_swap", source) == [(5, "`a` and `b` of `?:` swapped")]
    assert mutants("java_ternary_swap", body(
        "return o instanceof String s ? s.length() : 0;", signature="int f(Object o)")) == []


# --- literals --------------------------------------------------------------------------

def test_off_by_one_contexts() -> None:
    source = body("""\
        if (s.length() > 0 && s.charAt(i + 1) == 'x') {
            return s.substring(1, s.length() - 1);
        }
        for (int j = 0; j < 3; j++) {
            i += xs[j];
        }
        return s;""", signature="String f(String s, int i, int[] xs)")
    assert descriptions("java_off_by_one", source) == [
        (5, "comparison `0` changed to `1`"), (5, "comparison `0` changed to `-1`"),
        (5, "`charAt()` argument offset `1` changed to `2`"),
        (5, "`charAt()` argument offset `1` changed to `0`"),
        (6, "`substring()` argument `1` changed to `2`"),
        (6, "`substring()` argument `1` changed to `0`"),
        (6, "`s.length()` offset `1` changed to `2`"),
        (6, "`s.length()` offset `1` changed to `0`"),
        (8, "loop start `0` changed to `1`"), (8, "loop start `0` changed to `-1`"),
        (8, "comparison `3` changed to `4`"),
        (8, "comparison `3` changed to `2`")]
    assert mutants("java_off_by_one", source)[4] == source.replace(
        "substring(1,", "substring(2,")


def test_off_by_one_keeps_literals_valid() -> None:
    source = body("return a == 0x7fffffff || b > 0x1FL || xs[0] == -1 || a > 2147483647;",
                  signature="boolean f(int a, long b, int[] xs)")
    assert descriptions("java_off_by_one", source) == [
        (5, "comparison `0x7fffffff` changed to `0x7ffffffe`"),
        (5, "comparison `0x1FL` changed to `0x20L`"),
        (5, "comparison `0x1FL` changed to `0x1EL`"), (5, "index `0` changed to `1`"),
        (5, "comparison `-1` changed to `0`"), (5, "comparison `-1` changed to `-2`"),
        (5, "comparison `2147483647` changed to `2147483646`")]
    assert mutants("java_off_by_one", body("return a - -1 < b ? 1 : 0;"))[1] == body(
        "return a - -2 < b ? 1 : 0;")


def test_constant_swap() -> None:
    source = body("""\
        boolean ok = true;
        int n = 0;
        long m = 4L;
        if (ok) {
            return n + 2;
        }
        return 1;""")
    assert descriptions("java_constant_swap", source) == [
        (5, "`true` changed to `false`"), (6, "`0` changed to `1`"),
        (7, "`4L` changed to `5L`"), (9, "`2` changed to `3`"), (11, "`1` changed to `0`")]


def test_constant_swap_leaves_loops_cases_divisors_and_constants_alone() -> None:
    source = body("""\
        final int limit = 3;
        while (true) {
            switch (a) {
                case 1:
                    return a / 2;
                default:
                    a = a % 5 + (1 << 3);
            }
            int[] xs = new int[4];
            do {
                a--;
            } while (false);
        }""")
    assert mutants("java_constant_swap", source) == []


# --- statements ------------------------------------------------------------------------

def test_remove_statement() -> None:
    source = body("""\
        int total = 0;
        for (int x : xs) {
            total += x;
            count(x);
        }
        total = total * 2;
        total++;
        if (total > 10) reset();
        new Thread(this::run).start();
        return total;""", signature="int f(int[] xs)")
    assert descriptions("java_remove_statement", source) == [
        (7, "assignment `total += x;` removed"), (8, "call `count(x);` removed"),
        (10, "assignment `total = total * 2;` removed"), (11, "update `total++;` removed"),
        (12, "call `reset();` removed"), (13, "call `new Thread(this::run).start();` removed")]
    found = mutants("java_remove_statement", source)
    assert found[1] == source.replace("            count(x);\n", "")
    assert found[4] == source.replace("reset();", "{}")


def test_remove_statement_keeps_the_file_compiling() -> None:
    source = body("""\
        int n;
        if (a > 0) {
            n = 1;
        } else {
            n = 2;
        }
        this.size = n;
        try {
            out.write(n);
        } catch (IOException e) {
            failed(e);
        }
        while (a < b) {
            a++;
        }
        while (it.hasNext()) {
            it.next();
        }
        lock.unlock();
        LOG.debug("done");
        System.out.println(n);
        return n;""", signature="int f(int a, int b)",
                  members="private final int size;\n")
    assert [d for _, d in descriptions("java_remove_statement", source)] == [
        "call `failed(e);` removed"]


def test_remove_early_return() -> None:
    source = body("""\
        if (a > b) {
            return a;
        }
        for (int i = 0; i < a; i++) {
            if (i == b) return i;
        }
        return b;""")
    assert descriptions("java_remove_early_return", source) == [
        (6, "early `return a;` removed"), (9, "early `return i;` removed")]
    assert mutants("java_remove_early_return", source)[1] == source.replace(
        "return i;", "{}")


def test_remove_early_return_in_void_methods_only_with_code_after() -> None:
    source = body("""\
        if (a > b) {
            return;
        }
        run(a);
        if (a < 0) {
            run(b);
            return;
        }""", signature="void f(int a, int b)")
    assert descriptions("java_remove_early_return", source) == [
        (6, "early `return;` removed")]


def test_remove_early_return_in_a_switch_only_where_a_case_runs_on() -> None:
    source = body("""\
        switch (a) {
            case 1:
                run(a);
                return;
            case 2:
                return;
            default:
                run(b);
                return;
        }""", signature="void f(int a, int b)")
    assert descriptions("java_remove_early_return", source) == [
        (8, "early `return;` removed"), (10, "early `return;` removed")]


def test_remove_early_return_keeps_the_file_compiling() -> None:
    ends_in_if = body("if (a > b) {\n    return a;\n} else {\n    return b;\n}")
    blank = body("int n;\nif (a > b) {\n    return a;\n} else {\n    n = b;\n}\nreturn n;")
    endless = body("while (true) {\n    if (a > b) {\n        return;\n    }\n    a++;\n}",
                   signature="void f(int a, int b)")
    constructor = "package p;\n\nclass A {\n    final int n;\n\n    A(int a) {\n" \
                  "        if (a > 0) {\n            n = a;\n            return;\n        }\n" \
                  "        n = 0;\n    }\n}\n"
    for source in (ends_in_if, blank, endless, constructor):
        assert mutants("java_remove_early_return", source) == [], source


def test_return_value() -> None:
    source = body("""\
        if (s.isEmpty()) {
            return null;
        }
        return s.trim();""", signature="String f(String s)")
    assert descriptions("java_return_value", source) == [
        (8, "`return s.trim()` returns `null` instead")]
    assert mutants("java_return_value", body("return a + b;")) == [body("return 0;")]
    assert mutants("java_return_value", body("return a > b;",
                                             signature="boolean f(int a, int b)")) == [
        body("return false;", signature="boolean f(int a, int b)")]


def test_return_value_leaves_lambdas_defaults_and_needed_calls_alone() -> None:
    source = body("""\
        Supplier<Integer> s = () -> {
            return a;
        };
        try {
            return read(a);
        } catch (IOException e) {
            return 0;
        }""")
    assert mutants("java_return_value", source) == []


# --- blocks ----------------------------------------------------------------------------

def test_remove_conditional() -> None:
    source = body("""\
        if (a > b) {
            a = b;
        }
        if (a > 0) {
            a--;
        } else {
            b--;
        }
        return a;""")
    assert mutants("java_remove_conditional", source) == [
        source.replace("        if (a > b) {\n            a = b;\n        }\n", "")]
    assert descriptions("java_remove_conditional", source) == [
        (5, "`if (a > b)` block removed")]


def test_remove_conditional_keeps_the_file_compiling() -> None:
    source = body("""\
        while (true) {
            if (a > b) {
                break;
            }
            a++;
        }
        if (!(o instanceof String s)) {
            return 0;
        }
        int n;
        if ((n = s.length()) > 3) {
            a++;
        }
        try {
            if (a > 1) {
                throw new IOException("x");
            }
        } catch (IOException e) {
            return n;
        }
        if (a > 2) {
            LOG.warn("big");
        }
        if (a > 0) {
            a++;
        } else if (a < 0) {
            a--;
        }
        return a;""", signature="int f(int a, int b, Object o)")
    assert mutants("java_remove_conditional", source) == []


# --- calls -----------------------------------------------------------------------------

def test_swap_arguments_of_one_type() -> None:
    source = body("""\
        s = s.replace("a", "b");
        copy(src, dst, 0, n);
        if (Math.max(n, 2) > 1 && s.equals(prefix)) {
            return String.format("%s-%s", s, prefix);
        }
        return join(s, n);""", signature="String f(String s, String prefix, byte[] src, "
                                       "byte[] dst, int n)")
    assert descriptions("java_swap_arguments", source) == [
        (5, 'arguments `"a"` and `"b"` of `replace()` swapped'),
        (6, "arguments `src` and `dst` of `copy()` swapped"),
        (6, "arguments `0` and `n` of `copy()` swapped")]
    assert mutants("java_swap_arguments", source)[1] == source.replace(
        "copy(src, dst,", "copy(dst, src,")


def test_swap_arguments_needs_one_known_type() -> None:
    source = body("return pick(a, b, c, d, this.e, other.f, 1, 2L);",
                  signature="int f(int a, long b, Object c, Object d)", members="int e;\n")
    assert [d for _, d in descriptions("java_swap_arguments", source)] == [
        "arguments `c` and `d` of `pick()` swapped"]


def test_break_call_chain() -> None:
    source = body("""\
        String t = s.trim().toLowerCase();
        String u = t.toUpperCase(Locale.ROOT);
        name.trim();
        return other.strip() + u;""", signature="String f(String s, Object other)",
                  members="String name;\n")
    assert descriptions("java_break_call_chain", source) == [
        (6, "`.toLowerCase()` dropped from `s.trim().toLowerCase()`"),
        (6, "`.trim()` dropped from `s.trim()`"),
        (7, "`.toUpperCase()` dropped from `t.toUpperCase(Locale.ROOT)`")]
    assert mutants("java_break_call_chain", source)[0] == source.replace(
        "s.trim().toLowerCase()", "s.trim()")


# --- conformance: every java_ mutator --------------------------------------------------

CORPUS = '''\
package shapes;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/** A named polygon. */
public final class Shape {

    private static final int LIMIT = 20 + 1;

    private final String name;
    private final int sides;
    private final List<String> tags = new ArrayList<>();

    public Shape(String name, int sides) {
        if (sides < 0) {
            throw new IllegalArgumentException("negative: " + (sides - 1));
        }
        this.name = name.trim().toLowerCase(Locale.ROOT);
        this.sides = sides;
    }

    /** Reads "name:sides" pairs separated by commas. */
    public static List<Shape> parse(String s) {
        List<Shape> out = new ArrayList<>();
        if (s == null || s.trim().isEmpty()) {
            return out;
        }
        for (String part : s.split(",")) {
            int colon = part.indexOf(':');
            if (colon < 0 || colon == part.length() - 1) {
                continue;
            }
            int n = 0;
            for (int i = colon + 1; i < part.length(); i++) {
                char c = part.charAt(i);
                if (c < '0' || c > '9') {
                    return Collections.emptyList();
                }
                n = n * 10 + (c - '0');
            }
            out.add(new Shape(part.substring(0, colon), n));
        }
        out.sort((a, b) -> a.sides < b.sides ? -1 : a.sides == b.sides ? 0 : 1);
        return out;
    }

    public double perimeter(double length) {
        if (sides <= 0) {
            return 0;
        }
        return sides * length;
    }

    public String label(String sep) {
        StringBuilder label = new StringBuilder(name);
        for (int i = 0; i < tags.size(); i++) {
            if (i > 0 && tags.get(i).equals(tags.get(i - 1))) {
                continue;
            }
            label.append(sep).append(tags.get(i));
        }
        String text = label.toString();
        if (text.length() > LIMIT) {
            text = text.substring(0, LIMIT);
        } else {
            text = "  " + text;
        }
        return text.trim();
    }

    public void tag(String tag, boolean upper) {
        if (tag.isEmpty()) {
            return;
        }
        tags.add(upper ? tag.toUpperCase(Locale.ROOT) : tag);
        Collections.sort(tags);
    }

    public int mask(int bits, int shift) {
        int m = sides & ((1 << bits) - 1);
        m |= sides >> shift;
        return Math.max(m, bits) + compare(bits, shift);
    }

    private static int compare(int a, int b) {
        return a - b;
    }

    @Override
    public String toString() {
        return name + "/" + (sides + 1);
    }
}
'''


@pytest.mark.parametrize("kind", JAVA_KINDS)
def test_conformance(kind: str) -> None:
    """Every mutator finds sites in the corpus; each lies in runtime code inside a named
    method and changes something real."""
    found = sites(kind, CORPUS)
    assert found, kind
    data = CORPUS.encode()
    tree = JAVA.parse(data)
    for site in found:
        mutated = site.apply(data).decode()
        assert JAVA.parses_cleanly(mutated.encode()), site
        assert JAVA.real_change("src/main/java/shapes/Shape.java", CORPUS, mutated,
                                site.line), site
        node = site.node(tree, data)
        assert node is not None and in_runtime_code(node), site
        assert enclosing_function(node) is not None
        assert "toString" not in (enclosing_function(node) or "")
    assert len({(s.start, s.end, s.replacement) for s in found}) == len(found)


@pytest.mark.slow
def test_every_mutant_of_the_corpus_compiles(tmp_path: Path) -> None:
    data = CORPUS.encode()
    units: list[tuple[Path, Path]] = []
    described: dict[Path, str] = {}
    sourcepath = tmp_path / "empty"
    sourcepath.mkdir()
    for kind in JAVA_KINDS:
        for i, site in enumerate(sites(kind, CORPUS)):
            file = tmp_path / f"{kind}{i:03d}" / "Shape.java"
            file.parent.mkdir()
            file.write_bytes(site.apply(data))
            units.append((sourcepath, file))
            described[file] = f"{kind}: line {site.line}: {site.description}"
    assert len(units) > 80
    errors = compile_each(units)
    assert {described[file]: error for file, error in errors.items()} == {}
