"""Reading libtest failures (:mod:`repogym.toolchains.rust.failures`) on real messages, and
the statements written from them: the call checked, what it gives and what it should,
the right way round, never the fix."""

from __future__ import annotations

import pytest

from repogym.generators.statements import observations, offline_statement
from repogym.generators.statements.wording import RETURNS, RETURNS_NO_CALL
from repogym.patches import reverse_diff, unified_diff
from repogym.schemas.calls import FailureReading, StatementEvidence
from repogym.schemas.records import Candidate, CandidateKind
from repogym.toolchains import toolchain_for
from repogym.toolchains.rust.failures import (
    call_before,
    check_at,
    computed_side,
    first_panic,
    public_expression,
    read_failure,
)
from tests.toolchains.rust import failure_messages as m


def lib_rs(first_line: int, excerpt: str) -> str:
    """``src/lib.rs`` with ``excerpt`` of its ``#[cfg(test)] mod test`` at its real line."""
    return "#[cfg(test)]\nmod test {\n" + "\n" * (first_line - 3) + excerpt + "\n}\n"


def placed(*parts: tuple[int, str]) -> str:
    """A file whose excerpts start at their real lines."""
    lines: list[str] = []
    for first, excerpt in parts:
        lines += [""] * (first - 1 - len(lines)) + excerpt.splitlines()
    return "\n".join(lines) + "\n"


GLOB_STD = placed((20, m.GLOB_STD_HEAD_SRC), (320, m.GLOB_STD_CHECK_SRC))


def read(message: str, test_id: str, source: str | None = None) -> FailureReading | None:
    file = test_id.partition("::")[0]
    return read_failure(message, test_id, {file: source} if source is not None else {})


# -- assert_eq! / assert_ne! ----------------------------------------------------------------

def test_assert_eq_reads_the_call_and_its_value_from_the_source() -> None:
    r = read(m.ESCAPE_MSG, "src/lib.rs::test::test_pattern_escape",
             lib_rs(1347, m.GLOB_ESCAPE_SRC))
    assert r == FailureReading(call='Pattern::escape("_[_]_?_*_!_")',  # local `s` inlined
                               actual='"_[[]_]_[?]_[*]_!_"', expected='"_[[]_[]]_[?]_[*]_!_"')


def test_expected_written_first_is_still_the_expected_side() -> None:
    r = read(m.FORMS_EXPECTED_FIRST, "tests/forms.rs::expected_first", m.FORMS_SRC)
    assert r == FailureReading(call='Pattern::escape("?")', actual='"[?]"', expected='"[*]"')


def test_a_custom_message_keeps_the_values() -> None:
    r = read(m.FORMS_CUSTOM_EQ, "tests/forms.rs::custom_eq", m.FORMS_SRC)
    assert r == FailureReading(call='Pattern::new("a?").unwrap().as_str()', actual='"a?"',
                               expected='"a*"')


def test_a_constant_checked_against_a_literal() -> None:
    r = read(m.MAX_STR_LEN_MSG, "tests/test.rs::test_max_str_len", m.ITOA_TEST_SRC)
    assert r == FailureReading(call="i8::MAX_STR_LEN", actual="5", expected="4")


def test_a_macro_made_test_is_read_by_the_value_its_table_spells_out() -> None:
    r = read(m.I16_MIN_MSG, "tests/test.rs::test_i16_min", m.ITOA_TEST_SRC)
    assert r == FailureReading(actual='"+32768"', expected='"-32768"')  # `s` is a local


def test_a_helper_the_tests_define_is_not_named() -> None:
    r = read(m.STD_MAIN_MSG, "tests/glob-std.rs::main", GLOB_STD)
    assert r == FailureReading(actual="[]", expected='["aaa/tomato/tomato.txt", '
                                                     '"aaa/tomato/tomoto.txt"]')


def test_without_the_source_no_side_is_taken() -> None:
    r = read(m.ESCAPE_MSG, "src/lib.rs::test::test_pattern_escape")
    assert r is not None and r.actual is None and r.expected is None
    assert r.note == ('a check compares `"_[[]_]_[?]_[*]_!_"` with `"_[[]_[]]_[?]_[*]_!_"`, '
                      'and they differ')


def test_assert_ne() -> None:
    r = read(m.FORMS_NE_CHECK, "tests/forms.rs::ne_check", m.FORMS_SRC)
    assert r == FailureReading(note='`Pattern::escape("abc")` returns `"abc"`, which it '
                                    'should not')


@pytest.mark.parametrize(("message", "left", "right"), [
    (m.OLD_NONZERO_MSG, "Some(PosOverflow)", "Some(NegOverflow)"),
    (m.OLD_RUSTDOC_MSG, '"type <code>Type&lt;&#39;static&gt;</code> …"',
     "\"type <code>Type<'static></code> …\""),
    (m.OLD_CACHER_MSG, "1", "2"),
])
def test_the_format_before_rust_1_73(message: str, left: str, right: str) -> None:
    panic = first_panic(message)
    assert panic is not None and panic.message.startswith("assertion failed: `(left == right)`")
    r = read(message, f"{panic.file}::x")
    assert r is not None and r.note == f"a check compares `{left}` with `{right}`, and they differ"


def test_old_format_with_its_source() -> None:
    r = read(m.OLD_BOOK_MSG, "src/lib.rs::tests::it_fails", m.OLD_BOOK_SRC)
    # `3 + 3` and `9` are both stated: no side is the call's
    assert r is not None and r.note == "a check compares `6` with `9`, and they differ"
    check = check_at(m.OLD_BOOK_SRC, 10, 9)
    assert check is not None and check.kind == "assert_eq" and check.args == ("3 + 3", "9")


# -- assert! ----------------------------------------------------------------------------------

def test_assert_of_a_negated_call_with_locals_resolved() -> None:
    r = read(m.RANGE_MSG, "src/lib.rs::test::test_pattern_matches_case_insensitive_range",
             lib_rs(1369, m.GLOB_RANGE_SRC))
    # `pat_except` was bound to a public expression; the options struct is the test's own
    assert r == FailureReading(call='Pattern::new("[!a]").unwrap().matches_with("a", …)',
                               actual="true", expected="false")


def test_a_local_means_its_latest_binding_before_the_check() -> None:
    r = read(m.RANGE_FORMAT_MSG, "src/lib.rs::test::test_range_pattern",
             lib_rs(1279, m.GLOB_RANGE_FN_SRC))
    assert r == FailureReading(call='Pattern::new("a[!0-9]b").unwrap().matches(…)',
                               actual="true", expected="false")


def test_a_local_bound_to_another_local_is_dropped() -> None:
    r = read(m.ITERATION_MSG, "src/lib.rs::test::test_iteration_errors",
             lib_rs(1153, m.GLOB_ITERATION_SRC))
    assert r == FailureReading(call="is_err()", actual="false", expected="true")


def test_assert_of_an_equality_says_what_it_should_be() -> None:
    r = read(m.WILDCARD_MSG, "src/lib.rs::test::test_wildcard_errors",
             lib_rs(1122, m.GLOB_WILDCARD_SRC))
    assert r == FailureReading(note='`Pattern::new("a/*****").unwrap_err().pos` should be '
                                    '`4`, but it is not')
    r = read(m.FORMS_EQ_IN_ASSERT, "tests/forms.rs::eq_in_assert", m.FORMS_SRC)
    assert r is not None and r.note == '`Pattern::escape("a?")` should be `"a?"`, but it is not'


def test_assert_of_an_ordering_is_quoted() -> None:
    r = read(m.FORMS_LT_CHECK, "tests/forms.rs::lt_check", m.FORMS_SRC)
    assert r == FailureReading(note='the check `Pattern::escape("abc").len() < 2` fails')


def test_assert_of_matches() -> None:
    r = read(m.FORMS_MATCHES_CHECK, "tests/forms.rs::matches_check", m.FORMS_SRC)
    assert r == FailureReading(note='`Pattern::new("a**")` should match `Ok(_)`, but it does not')


def test_a_custom_assert_message_is_read_from_the_condition() -> None:
    r = read(m.FORMS_CUSTOM_ASSERT, "tests/forms.rs::custom_assert", m.FORMS_SRC)
    assert r == FailureReading(call='Pattern::new("a*").unwrap().matches("b")',
                               actual="false", expected="true")


# -- panics, unwrap, should_panic, Err, time limits ------------------------------------------

def test_overflow_in_the_library_is_a_raise() -> None:
    r = read(m.OVERFLOW_MSG, "src/lib.rs::test::test_wildcard_errors",
             lib_rs(1122, m.GLOB_WILDCARD_SRC))
    assert r == FailureReading(raises="panic: attempt to subtract with overflow")


def test_the_backtrace_note_is_dropped() -> None:
    panic = first_panic(m.FORMS_CUSTOM_ASSERT)
    assert panic is not None and panic.message == "pattern should match b"
    assert (panic.file, panic.line, panic.col) == ("tests/forms.rs", 11, 5)


def test_index_out_of_bounds_is_a_raise() -> None:
    r = read(m.FORMS_INDEX_OOB, "tests/forms.rs::index_oob", m.FORMS_SRC)
    assert r == FailureReading(raises="panic: index out of bounds: the len is 2 but the "
                                      "index is 5")


@pytest.mark.parametrize(("message", "test", "call", "actual", "expected"), [
    (m.FORMS_UNWRAP_ERR, "unwrap_err", 'Pattern::new("a[")',
     'Err(PatternError { pos: 1, msg: "invalid range pattern" })', "Ok(…)"),
    (m.FORMS_EXPECT_ERR, "expect_err", 'Pattern::new("a[")',
     'Err(PatternError { pos: 1, msg: "invalid range pattern" })', "Ok(…)"),
    (m.FORMS_UNWRAP_NONE, "unwrap_none", 'glob::glob("/nonexistent-dir-xyz/*").unwrap().next()',
     "None", "Some(…)"),
])
def test_unwrap_says_what_the_call_returned(message: str, test: str, call: str, actual: str,
                                            expected: str) -> None:
    r = read(message, f"tests/forms.rs::{test}", m.FORMS_SRC)
    assert r == FailureReading(call=call, actual=actual, expected=expected)


def test_unwrap_without_the_source_is_a_raise() -> None:
    r = read(m.FORMS_UNWRAP_NONE, "tests/forms.rs::unwrap_none")
    assert r == FailureReading(raises="panic: called `Option::unwrap()` on a `None` value")


def test_should_panic() -> None:
    assert read(m.FORMS_NO_PANIC, "tests/forms.rs::no_panic", m.FORMS_SRC) == \
        FailureReading(should_raise="a panic")
    r = read(m.FORMS_WRONG_PANIC, "tests/forms.rs::wrong_panic", m.FORMS_SRC)
    assert r is not None and r.should_raise == "a panic with `invalid pattern`"
    assert r.raises is not None and r.raises.startswith("panic: called `Result::unwrap()`")


def test_a_test_returning_err() -> None:
    r = read(m.FORMS_RETURNS_ERR, "tests/forms.rs::returns_err", m.FORMS_SRC)
    assert r == FailureReading(note='a call returns the error `PatternError { pos: 0, msg: '
                                    '"recursive wildcards must form a single path component" }`')


def test_time_limit_and_empty() -> None:
    assert read(m.KILLED_MSG, "src/lib.rs::tests::spins") == FailureReading(hangs=True)
    assert read("", "src/lib.rs::tests::x") is None
    assert read("note: run with `RUST_BACKTRACE=1` environment variable to display a "
                "backtrace\n", "src/lib.rs::tests::x") is None


# -- reading the source -------------------------------------------------------------------------

def test_source_readers() -> None:
    src = 'let pat = Pattern::new(\n    "a,(b",\n).unwrap();\n'
    assert call_before(src, 3, 3) == 'Pattern::new( "a,(b", )'
    assert computed_side('glob_vec("a")', 'vec!(PathBuf::from("aaa"))', "") == 0
    assert computed_side("expected", "parse(x)", "let expected = 3;") == 1
    assert computed_side("a.len()", "b.len()", "") is None
    region = "fn t() { let p = Pattern::new(\"x\").unwrap(); for i in 0..3 {"
    assert public_expression("p.matches(&format!(\"{}\", i))", region, frozenset()) == \
        'Pattern::new("x").unwrap().matches(…)'
    assert public_expression("helper(3)", "", frozenset({"helper"})) is None
    assert public_expression("s", "", frozenset()) is None


# -- statements ---------------------------------------------------------------------------------

GLOB_BEFORE = "    '?' | '*' | '[' | ']' => {\n"
GLOB_AFTER = "    '?' | '*' | '[' => {\n"


def glob_candidate(function: str = "escape") -> Candidate:
    patch = unified_diff("src/lib.rs", GLOB_BEFORE, GLOB_AFTER)
    return Candidate(kind=CandidateKind.synthetic, repo="rust-lang__glob", language="rust",
                     base_commit="0" * 40, bug_patch=patch, gold_patch=reverse_diff(patch),
                     generator="procedural", files=("src/lib.rs",),
                     provenance={"function": function})


def statement(messages: dict[str, str], sources: dict[str, str],
              cand: Candidate | None = None) -> str:
    ev = StatementEvidence(fail_to_pass=tuple(messages), language="rust", messages=messages,
                           test_sources=sources)
    return offline_statement(cand or glob_candidate(), ev)


def says_returns(text: str, call: str | None, got: str, want: str) -> bool:
    """``text`` says, in one of the writer's forms, that ``call`` returns ``got`` and
    should return ``want`` (no call: that the check got ``got`` where ``want`` was
    expected)."""
    forms = [f.format(c=f"`{call}`" if call else "", got=got, exp=want)
             for f in (RETURNS if call else RETURNS_NO_CALL)]
    return any(f in text or f[:1].upper() + f[1:] in text for f in forms)


def test_statement_names_the_call_and_values_the_right_way_round() -> None:
    test = "src/lib.rs::test::test_pattern_escape"
    text = statement({test: m.ESCAPE_MSG}, {"src/lib.rs": lib_rs(1347, m.GLOB_ESCAPE_SRC)})
    assert says_returns(text, 'Pattern::escape("_[_]_?_*_!_")', '"_[[]_]_[?]_[*]_!_"',
                        '"_[[]_[]]_[?]_[*]_!_"')
    assert "RUST_BACKTRACE" not in text and "panicked" not in text
    assert "test_pattern_escape" not in text and "'['" not in text  # no test, no fix


def test_statement_with_expected_written_first() -> None:
    text = statement({"tests/forms.rs::expected_first": m.FORMS_EXPECTED_FIRST},
                     {"tests/forms.rs": m.FORMS_SRC})
    assert says_returns(text, 'Pattern::escape("?")', '"[?]"', '"[*]"')


def test_statement_of_a_negated_assert() -> None:
    test = "src/lib.rs::test::test_pattern_matches_case_insensitive_range"
    text = statement({test: m.RANGE_MSG}, {"src/lib.rs": lib_rs(1369, m.GLOB_RANGE_SRC)},
                     glob_candidate("matches_from"))
    assert says_returns(text, 'Pattern::new("[!a]").unwrap().matches_with("a", …)', "true",
                        "false")
    assert text.splitlines()[0].startswith("# ") and "`matches_with`" in text.splitlines()[0]
    assert "options_case_insensitive" not in text and "pat_except" not in text


def test_statement_of_an_overflow() -> None:
    tests = ("src/lib.rs::test::test_wildcard_errors", "src/lib.rs::test::test_absolute_pattern")
    text = statement(dict.fromkeys(tests, m.OVERFLOW_MSG),
                     {"src/lib.rs": lib_rs(1122, m.GLOB_WILDCARD_SRC)}, glob_candidate("new"))
    assert "It raises `panic: attempt to subtract with overflow`." in text
    assert "RUST_BACKTRACE" not in text and "A failing check reports" not in text


def test_statement_of_a_macro_made_test() -> None:
    patch = unified_diff("src/lib.rs", "buf[offset].write(b'-');\n", "buf[offset].write(b'+');\n")
    cand = Candidate(kind=CandidateKind.synthetic, repo="dtolnay__itoa", language="rust",
                     base_commit="0" * 40, bug_patch=patch, gold_patch=reverse_diff(patch),
                     generator="procedural", files=("src/lib.rs",),
                     provenance={"function": "write"})
    text = statement({"tests/test.rs::test_i16_min": m.I16_MIN_MSG},
                     {"tests/test.rs": m.ITOA_TEST_SRC}, cand)
    assert says_returns(text, None, '"+32768"', '"-32768"')
    assert "b'-'" not in text


def test_observations_in_the_plainest_words() -> None:
    ev = StatementEvidence(fail_to_pass=("tests/forms.rs::unwrap_err", "tests/forms.rs::ne_check"),
                           language="rust", messages={"tests/forms.rs::unwrap_err":
                                                      m.FORMS_UNWRAP_ERR,
                                                      "tests/forms.rs::ne_check":
                                                      m.FORMS_NE_CHECK},
                           test_sources={"tests/forms.rs": m.FORMS_SRC})
    assert observations(ev) == [
        '`Pattern::new("a[")` returns `Err(PatternError { pos: 1, msg: "invalid range '
        'pattern" })`; it should return `Ok(…)`.',
        '`Pattern::escape("abc")` returns `"abc"`, which it should not.']


def test_the_toolchain_reads_through_this_module() -> None:
    test = "tests/forms.rs::expected_first"
    assert toolchain_for("rust").read_failure(m.FORMS_EXPECTED_FIRST, test,
                                              {"tests/forms.rs": m.FORMS_SRC}) == \
        read(m.FORMS_EXPECTED_FIRST, test, m.FORMS_SRC)
