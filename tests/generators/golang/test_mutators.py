"""Each go mutator: exact sites on small Go snippets (every mutant parses cleanly and
passes the static build check: see ``support.mutants``), what it must leave alone so the
code still builds, and one conformance suite every ``go_`` mutator passes (``gofmt -e``,
and ``go vet`` on every mutant of a corpus)."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from repogym.generators.mutators import MUTATORS
from repogym.generators.mutators.golang.grammar import GO
from repogym.generators.mutators.golang.runtime import in_runtime_code
from repogym.generators.mutators.golang.scopes import enclosing_function
from tests.generators.golang.support import (
    GO_KINDS,
    descriptions,
    gofmt_errors,
    mutants,
    sites,
    vet_packages,
)

EXPECTED_KINDS = {
    "go_arithmetic_swap", "go_bitwise_swap", "go_break_call_chain", "go_comparison_flip",
    "go_constant_swap", "go_invert_if_else", "go_logical_swap", "go_negate_condition",
    "go_off_by_one", "go_remove_conditional", "go_remove_loop", "go_remove_return",
    "go_remove_statement", "go_return_value", "go_swap_arguments", "go_update_flip"}


def test_all_kinds_registered_in_the_go_family() -> None:
    assert set(GO_KINDS) == EXPECTED_KINDS
    assert {MUTATORS.get(kind).family for kind in GO_KINDS} == {"go"}
    assert not any(MUTATORS.get(kind).edits_defaults for kind in GO_KINDS)


def body(code: str, params: str = "a, b int", results: str = "") -> str:
    """``code`` (one statement per line) as the body of ``func f(params) results``."""
    lines = "\n".join(f"\t{line}" if line else "" for line in dedent(code).splitlines())
    result = f" {results}" if results else ""
    return f"package p\n\nfunc f({params}){result} {{\n{lines}\n}}\n"


# --- operators -------------------------------------------------------------------------

@pytest.mark.parametrize(("op", "flipped"), [
    ("<", ">="), (">=", "<"), (">", "<="), ("<=", ">"), ("==", "!="), ("!=", "==")])
def test_comparison_flip(op: str, flipped: str) -> None:
    assert mutants("go_comparison_flip", body(f"return a {op} b", results="bool")) == [
        body(f"return a {flipped} b", results="bool")]


def test_comparison_flip_describes_the_change() -> None:
    assert descriptions("go_comparison_flip", body("return a < b", results="bool")) == [
        (4, "`<` replaced by `>=`")]


def test_comparison_flip_never_makes_vet_fail() -> None:
    """``a != 1 || a != 2`` is always true, and vet (which ``go test`` runs) says so."""
    assert mutants("go_comparison_flip", body("return a == 1 || a != 2", results="bool")) \
        == [body("return a == 1 || a == 2", results="bool")]
    found = mutants("go_comparison_flip", body("return a == 1 || a == 2", results="bool"))
    assert found == [body("return a != 1 || a == 2", results="bool"),
                     body("return a == 1 || a != 2", results="bool")]
    assert mutants("go_comparison_flip", body("return a != 1 || a == 2", results="bool")) \
        == [body("return a == 1 || a == 2", results="bool")]


@pytest.mark.parametrize(("before", "after"), [
    ("a + b", "a - b"), ("a - b", "a + b"), ("a * b", "a / b"), ("a / b", "a * b"),
    ("a % b", "a * b")])
def test_arithmetic_swap(before: str, after: str) -> None:
    assert mutants("go_arithmetic_swap", body(f"return {before}", results="int")) == [
        body(f"return {after}", results="int")]


def test_arithmetic_swap_compound_assignments() -> None:
    assert mutants("go_arithmetic_swap", body("a += b\nb *= 2\nreturn a + 0", results="int")) \
        == [body("a -= b\nb *= 2\nreturn a + 0", results="int"),
            body("a += b\nb /= 2\nreturn a + 0", results="int"),
            body("a += b\nb *= 2\nreturn a - 0", results="int")]


def test_arithmetic_swap_leaves_string_building_and_zero_divisors_alone() -> None:
    assert mutants("go_arithmetic_swap", dedent("""\
        package p

        type T struct{ name string }

        func f(s string, t T, n int) string {
        \tout := "["
        \tout += s
        \tlabel := out + t.name
        \tif n*0 > 1 {
        \t\treturn label + strconv.Itoa(n)
        \t}
        \treturn s + t.String()
        }
        """)) == []


def test_bitwise_swap() -> None:
    assert mutants("go_bitwise_swap", body("return a&0x3f | b<<2", results="int")) == [
        body("return a&0x3f & b<<2", results="int"),
        body("return a|0x3f | b<<2", results="int"),
        body("return a&0x3f | b>>2", results="int")]
    assert mutants("go_bitwise_swap", body("return 1 << 7", results="int")) == []


def test_logical_swap() -> None:
    assert mutants("go_logical_swap", body("return a > 0 && b > 0 || a < b",
                                           results="bool")) == [
        body("return a > 0 && b > 0 && a < b", results="bool"),
        body("return a > 0 || b > 0 || a < b", results="bool")]


def test_logical_swap_never_makes_vet_fail() -> None:
    assert mutants("go_logical_swap", body("return a != ' ' && a != '\\t'",
                                           results="bool", params="a rune")) == []


def test_update_flip_in_loops_only() -> None:
    source = body("for i := 0; i < a; i++ {\n\tb--\n}\na++\nreturn b", results="int")
    assert mutants("go_update_flip", source) == [
        body("for i := 0; i < a; i-- {\n\tb--\n}\na++\nreturn b", results="int"),
        body("for i := 0; i < a; i++ {\n\tb++\n}\na++\nreturn b", results="int")]


# --- conditions ------------------------------------------------------------------------

def test_negate_condition_if_and_for() -> None:
    source = body("""\
        if ok := a > b; ok {
        \treturn 1
        }
        for a < b && b > 0 {
        \ta++
        }
        for i := 0; !(i >= a); i++ {
        \tb += i
        }
        return b""", results="int")
    assert [m.split("{\n", 1)[1] for m in mutants("go_negate_condition", source)] == [
        s.split("{\n", 1)[1] for s in (
            source.replace("; ok {", "; !ok {"),
            source.replace("for a < b && b > 0 {", "for !(a < b && b > 0) {"),
            source.replace("!(i >= a)", "(i >= a)"))]
    assert descriptions("go_negate_condition", source)[1] == (7, "for condition negated")


def test_negate_condition_leaves_bare_and_range_loops_alone() -> None:
    source = body("for range a {\n}\nfor {\n\tbreak\n}", params="a []int")
    assert mutants("go_negate_condition", source) == []


def test_invert_if_else() -> None:
    source = body("if a > b {\n\treturn a\n} else {\n\treturn b\n}", results="int")
    assert mutants("go_invert_if_else", source) == [
        body("if a > b {\n\treturn b\n} else {\n\treturn a\n}", results="int")]


def test_invert_if_else_leaves_else_if_and_equal_branches_alone() -> None:
    source = body("if a > b {\n\ta++\n} else if a < b {\n\tb++\n}\n"
                  "if a == b {\n\ta++\n} else {\n\ta++\n}")
    assert mutants("go_invert_if_else", source) == []


# --- literals --------------------------------------------------------------------------

def test_off_by_one_contexts() -> None:
    source = body("""\
        if len(s) > 0 && s[i+1] == 'x' {
        \treturn s[1:len(s)-1]
        }
        for j := 0; j < 3; j++ {
        \ti += j
        }
        return s[:i]""", params="s string, i int", results="string")
    assert descriptions("go_off_by_one", source) == [
        (4, "comparison `0` changed to `1`"), (4, "comparison `0` changed to `-1`"),
        (4, "index offset `1` changed to `2`"), (4, "index offset `1` changed to `0`"),
        (5, "slice start `1` changed to `2`"), (5, "slice start `1` changed to `0`"),
        (5, "`len(s)` offset `1` changed to `2`"), (5, "`len(s)` offset `1` changed to `0`"),
        (7, "loop start `0` changed to `1`"), (7, "loop start `0` changed to `-1`"),
        (7, "comparison `3` changed to `4`"), (7, "comparison `3` changed to `2`")]
    assert mutants("go_off_by_one", source)[4] == source.replace("s[1:len", "s[2:len")


def test_off_by_one_keeps_constants_in_bounds() -> None:
    source = dedent("""\
        package p

        type UUID [16]byte

        func f(u UUID, b byte, n uint) bool {
        \tu[15] = u[0] >> 4
        \thead := u[0:4]
        \treturn b <= 0xff && n > 0 && head[3] == 0x40
        }
        """)
    assert descriptions("go_off_by_one", source) == [
        (6, "index `15` changed to `14`"), (7, "slice start `0` changed to `1`"),
        (7, "slice end `4` changed to `3`"), (8, "comparison `0xff` changed to `0xfe`"),
        (8, "comparison `0` changed to `1`"), (8, "index `3` changed to `2`"),
        (8, "comparison `0x40` changed to `0x41`"), (8, "comparison `0x40` changed to `0x3f`")]


def test_off_by_one_keeps_a_minus_apart_and_leaves_floats_alone() -> None:
    assert mutants("go_off_by_one", body("return a-0 < b && a > 1.5", results="bool")) == [
        body("return a-1 < b && a > 1.5", results="bool"),
        body("return a- -1 < b && a > 1.5", results="bool")]
    found = descriptions("go_off_by_one", body("return a - -1 < b", results="bool"))
    assert found == [(4, "comparison offset `-1` changed to `0`"),
                     (4, "comparison offset `-1` changed to `-2`")]
    assert descriptions("go_off_by_one", body("return a > 1.5", results="bool")) == []


def test_constant_swap() -> None:
    source = body("""\
        ok := true
        n := 0
        s := "abc"
        if ok {
        \treturn s, n + 2
        }
        return "", 1""", results="(string, int)")
    assert descriptions("go_constant_swap", source) == [
        (4, "`true` changed to `false`"), (5, "`0` changed to `1`"),
        (6, '`"abc"` emptied'), (8, "`2` changed to `3`"), (10, "`1` changed to `0`")]
    assert mutants("go_constant_swap", source)[2] == source.replace('"abc"', '""')


def test_constant_swap_leaves_keys_formats_messages_divisors_and_duplicates_alone() -> None:
    assert mutants("go_constant_swap", dedent("""\
        package p

        var table = map[string]int{"a": -1}

        func f(n int) (string, error) {
        \tswitch n {
        \tcase 0, 1:
        \t\treturn fmt.Sprintf("%d", n), nil
        \t}
        \tbuf := make([]byte, 0, 2)
        \t_ = buf
        \tif n/2 > 3 {
        \t\tpanic("negative")
        \t}
        \treturn "", errors.New("bad")
        }
        """)) == []


# --- statements ------------------------------------------------------------------------

def test_remove_statement() -> None:
    source = body("""\
        total := 0
        for _, x := range xs {
        \ttotal += x
        \tcount(x)
        }
        total = total * 2
        total++
        return total""", params="xs []int", results="int")
    assert descriptions("go_remove_statement", source) == [
        (6, "assignment `total += x` removed"), (7, "call `count(x)` removed"),
        (9, "assignment `total = total * 2` removed"), (10, "increment `total++` removed")]
    assert mutants("go_remove_statement", source)[1] == source.replace("\t\tcount(x)\n", "")


def test_remove_statement_keeps_the_file_building() -> None:
    source = dedent("""\
        package p

        import "strings"

        func f(s string) string {
        \tn := len(s)
        \tuse(n)
        \tm := 1
        \tm = 2
        \tstrings.ToLower(s)
        \tpanic(m)
        }
        """)
    assert descriptions("go_remove_statement", source) == [(9, "assignment `m = 2` removed")]


def test_remove_statement_leaves_goroutine_synchronisation_alone() -> None:
    source = body("mu.Lock()\ndefer mu.Unlock()\nwg.Done()\nclose(ch)\ncount(ch)",
                  params="mu *sync.Mutex, wg *sync.WaitGroup, ch chan int")
    assert [d for _, d in descriptions("go_remove_statement", source)] == [
        "call `count(ch)` removed"]


def test_remove_statement_inline() -> None:
    source = body("a++; b++\nreturn a + b", results="int")
    assert mutants("go_remove_statement", source) == [
        body("b++\nreturn a + b", results="int"), body("a++; \nreturn a + b", results="int")]


def test_remove_return_only_early_returns_that_leave_the_function_building() -> None:
    source = body("""\
        if a > b {
        \treturn a
        }
        if err != nil {
        \treturn 0
        }
        switch a {
        case 1:
        \treturn 1
        }
        return b""", params="a, b int, err error", results="int")
    assert descriptions("go_remove_return", source) == [
        (5, "early `return a` removed"), (12, "early `return 1` removed")]
    ending = body("if a > b {\n\treturn a\n} else {\n\treturn b\n}", results="int")
    assert mutants("go_remove_return", ending) == []


def test_return_value() -> None:
    source = dedent("""\
        package p

        type Point struct{ X, Y int }

        func f(s string) (*Point, []string, Point, string, error) {
        \tif s == "" {
        \t\treturn nil, nil, Point{}, "", ErrEmpty
        \t}
        \treturn &Point{}, []string{s}, Point{1, 2}, s, nil
        }
        """)
    assert descriptions("go_return_value", source) == [
        (7, "`ErrEmpty` in `return nil, nil, Point{}, \"\", ErrEmpty` returns `nil` instead"),
        (9, "`&Point{}` in `return &Point{}, []string{s}, Point{1, 2}, s, nil` returns "
            "`nil` instead"),
        (9, "`[]string{s}` in `return &Point{}, []string{s}, Point{1, 2}, s, nil` returns "
            "`nil` instead"),
        (9, "`Point{1, 2}` in `return &Point{}, []string{s}, Point{1, 2}, s, nil` returns "
            "`Point{}` instead"),
        (9, "`s` in `return &Point{}, []string{s}, Point{1, 2}, s, nil` returns `\"\"` "
            "instead")]


def test_return_value_needs_the_type_and_leaves_no_variable_unused() -> None:
    source = dedent("""\
        package p

        func f(r io.Reader) (Config, int, error) {
        \tn := count(r)
        \treturn load(r), n, nil
        }

        func g() (int, error) {
        \treturn split()
        }
        """)
    assert descriptions("go_return_value", source) == []


# --- blocks ----------------------------------------------------------------------------

def test_remove_conditional() -> None:
    source = body("""\
        if a > b {
        \ta, b = b, a
        }
        if err := check(a); err != nil {
        \treturn err
        }
        if a > 0 {
        \ta--
        } else {
        \tb--
        }
        return nil""", results="error")
    assert mutants("go_remove_conditional", source) == [
        source.replace("\tif a > b {\n\t\ta, b = b, a\n\t}\n", "")]


def test_remove_loop_every_form_with_its_label() -> None:
    source = body("""\
        for i := 0; i < a; i++ {
        \tb++
        }
        for b > 0 {
        \tb--
        }
        outer:
        for range a {
        \tcontinue outer
        }
        return b""", results="int")
    assert [d for _, d in descriptions("go_remove_loop", source)] == [
        "`for i := 0; i < a; i++` loop removed", "`for b > 0` loop removed",
        "`for range a` loop removed"]
    assert mutants("go_remove_loop", source)[2] == source.replace(
        "\touter:\n\tfor range a {\n\t\tcontinue outer\n\t}\n", "")


def test_remove_loop_keeps_a_function_ending_in_an_endless_loop() -> None:
    source = body("for {\n\tif a > b {\n\t\treturn a\n\t}\n\ta++\n}", results="int")
    assert mutants("go_remove_loop", source) == []


# --- calls -----------------------------------------------------------------------------

def test_swap_arguments_of_one_type() -> None:
    source = body("""\
        s = strings.Replace(s, "a", "b", -1)
        copy(dst, src)
        if strings.HasPrefix(s, prefix) {
        \treturn fmt.Sprintf("%s-%s", s, prefix)
        }
        return join(s, n)""", params="s, prefix string, dst, src []byte, n int",
                          results="string")
    assert descriptions("go_swap_arguments", source) == [
        (4, 'arguments `s` and `"a"` of `strings.Replace()` swapped'),
        (4, 'arguments `"a"` and `"b"` of `strings.Replace()` swapped'),
        (5, "arguments `dst` and `src` of `copy()` swapped"),
        (6, "arguments `s` and `prefix` of `strings.HasPrefix()` swapped"),
        (7, "arguments `s` and `prefix` of `fmt.Sprintf()` swapped")]
    assert mutants("go_swap_arguments", source)[2] == source.replace(
        "copy(dst, src)", "copy(src, dst)")


def test_swap_arguments_leaves_builtins_symmetric_and_variadic_calls_alone() -> None:
    source = body("xs = append(xs, ys...)\nreturn max(a, b) + bytes.Compare(p, q)",
                  params="a, b int, xs, ys []int, p, q []byte", results="int")
    assert [d for _, d in descriptions("go_swap_arguments", source)] == [
        "arguments `p` and `q` of `bytes.Compare()` swapped"]


def test_break_call_chain() -> None:
    source = dedent("""\
        package p

        import (
        \t"strings"
        \t"time"
        )

        func f(s string) (string, time.Time) {
        \tt := time.Now().UTC()
        \treturn strings.TrimSpace(strings.ToLower(s)), t
        }
        """)
    assert descriptions("go_break_call_chain", source) == [
        (9, "`.UTC()` dropped from `time.Now().UTC()`"),
        (10, "`strings.TrimSpace()` dropped from `strings.TrimSpace(strings.ToLower(s))`"),
        (10, "`strings.ToLower()` dropped from `strings.ToLower(s)`")]
    assert mutants("go_break_call_chain", source)[0] == source.replace(".UTC()", "")


def test_break_call_chain_keeps_the_last_use_of_an_import() -> None:
    source = "package p\n\nimport \"strings\"\n\nfunc f(s string) string {\n" \
             "\treturn strings.ToLower(s)\n}\n"
    assert mutants("go_break_call_chain", source) == []


# --- conformance: every go_ mutator ----------------------------------------------------

CORPUS = '''\
package shapes

import (
\t"errors"
\t"fmt"
\t"sort"
\t"strings"
)

// ErrEmpty is returned for an empty input.
var ErrEmpty = errors.New("empty")

var names = map[string]int{"circle": 1, "square": 4}

// Shape is a named polygon.
type Shape struct {
\tName  string
\tSides int
\tTags  []string
}

// Parse reads "name:sides" pairs separated by commas.
func Parse(s string) ([]Shape, error) {
\tif strings.TrimSpace(s) == "" {
\t\treturn nil, ErrEmpty
\t}
\tvar out []Shape
\tfor i, part := range strings.Split(s, ",") {
\t\tname, rest, ok := strings.Cut(part, ":")
\t\tif !ok || name == "" {
\t\t\treturn nil, fmt.Errorf("part %d: no sides", i)
\t\t}
\t\tn := 0
\t\tfor _, c := range rest {
\t\t\tif c < '0' || c > '9' {
\t\t\t\treturn nil, fmt.Errorf("part %d: bad digit %q", i, c)
\t\t\t}
\t\t\tn = n*10 + int(c-'0')
\t\t}
\t\tif known, found := names[name]; found && known != n {
\t\t\tn = known
\t\t}
\t\tout = append(out, Shape{Name: strings.ToLower(name), Sides: n})
\t}
\tsort.Slice(out, func(a, b int) bool { return out[a].Sides < out[b].Sides })
\treturn out, nil
}

// Perimeter is the sum of sides of the given length.
func (s *Shape) Perimeter(length float64) float64 {
\tif s.Sides <= 0 {
\t\treturn 0
\t}
\treturn float64(s.Sides) * length
}

// Label names the shape with its tags.
func (s Shape) Label(sep string) string {
\tlabel := s.Name
\tfor i := 0; i < len(s.Tags); i++ {
\t\tif i > 0 && s.Tags[i] == s.Tags[i-1] {
\t\t\tcontinue
\t\t}
\t\tlabel += sep + s.Tags[i]
\t}
\tif len(label) > 20 {
\t\tlabel = label[:20]
\t} else {
\t\tlabel = strings.Repeat(" ", 2) + label
\t}
\treturn strings.TrimSpace(label)
}

// Mask keeps the low bits of a side count.
func Mask(n int, bits uint) int {
\tm := n & (1<<bits - 1)
\tm |= n >> 8
\treturn m
}
'''


@pytest.mark.parametrize("kind", GO_KINDS)
def test_conformance(kind: str) -> None:
    """Every mutator finds sites in the corpus; each lies in runtime code inside a named
    function, changes something real, passes ``gofmt -e`` and the static build check."""
    found = sites(kind, CORPUS)
    assert found, kind
    data = CORPUS.encode()
    tree = GO.parse(data)
    for site in found:
        mutated = site.apply(data).decode()
        assert mutated != CORPUS and GO.real_change("shapes/shapes.go", CORPUS, mutated,
                                                    site.line), site
        assert gofmt_errors(mutated) == "", (site, gofmt_errors(mutated))
        node = site.node(tree, data)
        assert node is not None and in_runtime_code(node)
        assert enclosing_function(node) is not None
    assert len({(s.start, s.end, s.replacement) for s in found}) == len(found)


@pytest.mark.slow
def test_every_mutant_of_the_corpus_builds_and_passes_vet(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module shapes\n\ngo 1.21\n")
    described: dict[str, str] = {}
    data = CORPUS.encode()
    for kind in GO_KINDS:
        for i, site in enumerate(sites(kind, CORPUS)):
            folder = tmp_path / "mutants" / f"{kind}{i:03d}"
            folder.mkdir(parents=True)
            (folder / "shapes.go").write_bytes(site.apply(data))
            described[folder.name] = f"{kind}: line {site.line}: {site.description}"
    assert len(described) > 80
    errors = vet_packages(tmp_path, "mutants")
    assert {described[name]: lines for name, lines in errors.items()} == {}
