"""Reading Surefire failures (:mod:`repogym.toolchains.java.failures`) on real messages, and
the statements written from them: the call checked, what it gives and what it should,
the right way round, never the fix."""

from __future__ import annotations

import pytest

from repogym.generators.statements import observations, offline_statement
from repogym.generators.statements.wording import RETURNS
from repogym.patches import reverse_diff, unified_diff
from repogym.schemas.calls import FailureReading, StatementEvidence
from repogym.schemas.records import Candidate, CandidateKind
from repogym.toolchains import toolchain_for
from repogym.toolchains.java.failures import public_expression, read_failure, thrown_of
from tests.toolchains.java import failure_messages as m

DIR = "src/test/java/org/apache/commons/cli/"
FORMS = f"{DIR}FormsTest.java"
UTIL = f"{DIR}UtilTest.java"
SOURCES = {FORMS: m.FORMS_SRC, UTIL: m.UTIL_SRC}
HYPHENS = 'Util.stripLeadingHyphens("--foo")'
NPE = ('java.lang.NullPointerException: Cannot invoke "String.length()" because "str" '
       'is null')


def forms(message: str, test: str, sources: dict[str, str] | None = None) -> FailureReading | None:
    return read_failure(message, f"{FORMS}::FormsTest#{test}",
                        SOURCES if sources is None else sources)


@pytest.mark.parametrize(("message", "test", "call", "actual", "expected"), [
    (m.FORMS_ASSERTJ, "assertj", HYPHENS, '"-foo"', '"foo"'),
    (m.FORMS_ASSERTJ_INT, "assertjInt", f"{HYPHENS}.length()", "4", "3"),
    (m.FORMS_TRUTH, "truth", HYPHENS, "-foo", "foo"),
    (m.FORMS_HAMCREST, "hamcrest", HYPHENS, '"-foo"', '"foo"'),
    (m.FORMS_JUPITER_MESSAGE, "jupiterMessage", HYPHENS, "-foo", "foo"),
    (m.FORMS_JUPITER_TRUE, "jupiterTrue", f'{HYPHENS}.equals("foo")', "false", "true"),
    (m.FORMS_JUPITER_FALSE, "jupiterFalse", f'{HYPHENS}.startsWith("-")', "true", "false"),
    (m.FORMS_ASSERTJ_TRUE, "assertjTrue", f"{HYPHENS}.isEmpty()", "false", "true"),
    (m.FORMS_JUNIT4_EQUALS_INT, "junit4EqualsInt", f"{HYPHENS}.length()", "4", "3"),
    (m.FORMS_JUNIT4_TRUE, "junit4True", f'{HYPHENS}.equals("foo")', "false", "true"),
    # JUnit 4's compacted strings, uncompacted: expected:<[]f> but was:<[-f]f>
    (m.FORMS_JUNIT4_MESSAGE, "junit4Message", 'Util.stripLeadingHyphens("--ff")', "-ff", "f"),
    (m.FORMS_JUNIT4_LONG, "junit4Long", 'Util.stripLeadingHyphens("--a-very-long-option-name'
     '-here")', "-a-very-long-option-name-here", "the option name without its hyphens"),
    # a local receiver bound to a public expression is said as that expression
    (m.FORMS_LOCAL_RECEIVER, "localReceiver", 'new Options().addOption("a", "all", false, '
     '"all").getOption("a").getLongOpt()', "all", "--all"),
])
def test_compared_values_the_right_way_round(message: str, test: str, call: str, actual: str,
                                             expected: str) -> None:
    assert forms(message, test) == FailureReading(call=call, actual=actual, expected=expected)


def test_the_projects_own_test() -> None:
    r = read_failure(m.UTIL_TEST_STRIP_LEADING_HYPHENS,
                     f"{UTIL}::UtilTest#testStripLeadingHyphens", SOURCES)
    assert r == FailureReading(call='Util.stripLeadingHyphens("--foo")', actual="-foo",
                               expected="foo")
    r = read_failure(m.UTIL_TEST_STRIP_LEADING_AND_TRAILING_QUOTES,
                     f"{UTIL}::UtilTest#testStripLeadingAndTrailingQuotes", SOURCES)
    assert r == FailureReading(call="Util.stripLeadingAndTrailingQuotes(null)", raises=NPE)


def test_exceptions_name_the_call_at_the_tests_frame() -> None:
    for message, test in ((m.FORMS_NPE, "npe"), (m.FORMS_JUPITER_NULL, "jupiterNull")):
        assert forms(message, test) == FailureReading(
            call="Util.stripLeadingAndTrailingQuotes(null)", raises=NPE)
    thrown = thrown_of(m.FORMS_NPE, FORMS)
    assert (thrown.type, thrown.line) == ("java.lang.NullPointerException", 80)


def test_nothing_thrown() -> None:
    assert forms(m.FORMS_JUPITER_THROWS, "jupiterThrows") == FailureReading(
        call='Util.stripLeadingHyphens("--")', should_raise="java.lang.IllegalArgumentException")


def test_notes_for_checks_without_an_equal_value() -> None:
    assert forms(m.FORMS_ASSERTJ_CONTAINS, "assertjContains") == FailureReading(
        note=f'`{HYPHENS}` returns `"-foo"`, which is expected to contain `"oof"`')
    assert forms(m.FORMS_ASSERTJ_LIST, "assertjList") == FailureReading(
        note=f'`Arrays.asList({HYPHENS})` returns `["-foo"]`, which is expected to contain '
             'exactly (and in same order) `["foo"]`')
    assert forms(m.FORMS_HAMCREST_CONTAINS, "hamcrestContains") == FailureReading(
        note=f'`{HYPHENS}` returns `"-foo"`; it should be a string starting with "f"')
    assert forms(m.FORMS_JUPITER_NOT_NULL, "jupiterNotNull") == FailureReading(
        note="`Util.stripLeadingHyphens(null)` returns `null`, where it should return a value")
    assert forms(m.FORMS_JUPITER_ARRAY, "jupiterArray") == FailureReading(
        note=f"element [0] of `new String[] {{{HYPHENS}}}` is `-foo`; it should be `foo`")


def test_without_the_source_the_values_still_read() -> None:
    assert forms(m.FORMS_JUPITER_MESSAGE, "jupiterMessage", {}) == FailureReading(
        actual="-foo", expected="foo")
    assert read_failure(m.NO_TRACE_MSG, "src/test/java/a/ATest.java::ATest#one", {}) == \
        FailureReading(actual="2", expected="1")


def test_time_limits_hang() -> None:
    assert forms(m.FORMS_HANGS, "hangs") == FailureReading(hangs=True)
    assert forms(m.WATCHDOG_MSG, "hangs") == FailureReading(hangs=True)
    assert forms("", "x") is None


def test_public_expression() -> None:
    region = 'void t() { final CommandLine line = parser.parse(options, args); int n = 3;'
    assert public_expression('line.getOptionValue("f")', region, frozenset()) == \
        'getOptionValue("f")'
    assert public_expression("Util.repeat(n)", region, frozenset()) == "Util.repeat(3)"
    assert public_expression("Util.repeat(count)", region, frozenset()) == "Util.repeat(…)"
    assert public_expression("check(3)", region, frozenset({"check"})) is None
    # bound to a call on a local: the receiver left out, the locals too
    assert public_expression("line", region, frozenset()) == "parse(…, …)"


# -- statements ---------------------------------------------------------------------------------

BEFORE = "            return str.substring(2);\n"
AFTER = "            return str.substring(1);\n"


def cli_candidate() -> Candidate:
    patch = unified_diff("src/main/java/org/apache/commons/cli/Util.java", BEFORE, AFTER)
    return Candidate(kind=CandidateKind.synthetic, repo="apache__commons-cli", language="java",
                     base_commit="0" * 40, bug_patch=patch, gold_patch=reverse_diff(patch),
                     generator="procedural",
                     files=("src/main/java/org/apache/commons/cli/Util.java",),
                     provenance={"function": "stripLeadingHyphens"})


def says_returns(text: str, call: str, got: str, want: str) -> bool:
    forms_ = [f.format(c=f"`{call}`", got=got, exp=want) for f in RETURNS]
    return any(f in text or f[:1].upper() + f[1:] in text for f in forms_)


def test_statement_names_the_call_and_values_the_right_way_round() -> None:
    test = f"{UTIL}::UtilTest#testStripLeadingHyphens"
    ev = StatementEvidence(fail_to_pass=(test,), language="java",
                           messages={test: m.UTIL_TEST_STRIP_LEADING_HYPHENS},
                           test_sources=SOURCES)
    text = offline_statement(cli_candidate(), ev)
    assert says_returns(text, 'Util.stripLeadingHyphens("--foo")', "-foo", "foo")
    assert "substring" not in text  # never the fix
    assert "testStripLeadingHyphens" not in text and "AssertionFailedError" not in text
    assert "`stripLeadingHyphens`" in text.splitlines()[0]


def test_observations_in_the_plainest_words() -> None:
    tests = (f"{FORMS}::FormsTest#npe", f"{FORMS}::FormsTest#jupiterThrows",
             f"{FORMS}::FormsTest#hangs", f"{FORMS}::FormsTest#junit4Message")
    messages = dict(zip(tests, (m.FORMS_NPE, m.FORMS_JUPITER_THROWS, m.FORMS_HANGS,
                                m.FORMS_JUNIT4_MESSAGE), strict=True))
    ev = StatementEvidence(fail_to_pass=tests, language="java", messages=messages,
                           test_sources=SOURCES)
    assert observations(ev) == [
        f"`Util.stripLeadingAndTrailingQuotes(null)` raises `{NPE}`.",
        '`Util.stripLeadingHyphens("--")` does not raise; it should raise '
        "`java.lang.IllegalArgumentException`.",
        "It never returns (it hangs).",
        '`Util.stripLeadingHyphens("--ff")` returns `-ff`; it should return `f`.']


def test_the_toolchain_reads_through_this_module() -> None:
    test = f"{FORMS}::FormsTest#assertj"
    assert toolchain_for("java").read_failure(m.FORMS_ASSERTJ, test, SOURCES) == \
        forms(m.FORMS_ASSERTJ, "assertj")


HELP = f"{DIR}help/HelpFormatterTest.java"
HELP_SRC = """package org.apache.commons.cli.help;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.StringReader;
import java.util.Arrays;

import org.apache.commons.io.IOUtils;
import org.junit.jupiter.api.Test;

class HelpFormatterTest {
    @Test
    void testPrintOptions() throws Exception {
        final StringBuilder sb = new StringBuilder();
        final TextHelpAppendable serializer = new TextHelpAppendable(sb);
        serializer.appendParagraph("Options  Description");
        assertEquals(Arrays.asList(" Options  Description", ""), IOUtils.readLines(new StringReader(sb.toString())));
    }

    @Test
    void testPad() {
        assertEquals(Arrays.asList("Hello world "), Arrays.asList(TextStyle.pad(true, "Hello world")));
    }
}
"""


def help_failure(test: str, line: int, want: str, got: str) -> str:
    return (f"org.opentest4j.AssertionFailedError: expected: <{want}> but was: <{got}>\n"
            f"\tat org.apache.commons.cli.help.HelpFormatterTest.{test}"
            f"(HelpFormatterTest.java:{line})\n")


def test_a_library_call_around_the_result_names_no_function_of_the_project() -> None:
    """commons-cli's help tests check ``IOUtils.readLines(...)`` (commons-io): the values are
    that call's, and it is said whole, but ``readLines`` is no function of the project (a
    statement once read "a problem with `readLines` (in `TextHelpAppendable`)"); inside
    ``Arrays.asList(...)`` the project's ``pad`` is the function."""
    sources = {HELP: HELP_SRC}
    lines = HELP_SRC.splitlines()
    at = {name: next(i for i, ln in enumerate(lines, 1) if "assertEquals(" in ln and i > start)
          for name, start in (("testPrintOptions", 12), ("testPad", 20))}
    read = read_failure(help_failure("testPrintOptions", at["testPrintOptions"],
                                     "[ Options  Description, ]", "[Options  Description, ]"),
                        f"{HELP}::HelpFormatterTest#testPrintOptions", sources)
    assert read == FailureReading(call="IOUtils.readLines(new StringReader(….toString()))",
                                  actual="[Options  Description, ]",
                                  expected="[ Options  Description, ]", function="")
    pad = read_failure(help_failure("testPad", at["testPad"], "[Hello world ]", "[Hello world]"),
                       f"{HELP}::HelpFormatterTest#testPad", sources)
    assert pad is not None and pad.function == "pad"
    assert pad.call == 'Arrays.asList(TextStyle.pad(true, "Hello world"))'


def test_a_statement_never_blames_a_library_and_shows_values_that_differ() -> None:
    tests = (f"{HELP}::HelpFormatterTest#testPrintOptions", f"{HELP}::HelpFormatterTest#testPad")
    lines = HELP_SRC.splitlines()
    long_want = "[ usage:  cs [-V <arg>], , " + "x" * 150 + ", -a  aaaa]"
    long_got = "[ usage:  cs [-V <arg>], , " + "x" * 150 + ", -a aaaa]"
    messages = {
        tests[0]: help_failure("testPrintOptions", lines.index(next(
            ln for ln in lines if "IOUtils" in ln and "assertEquals" in ln)) + 1,
            long_want, long_got),
        tests[1]: help_failure("testPad", len(lines) - 2, "[Hello world ]", "[Hello world]")}
    ev = StatementEvidence(fail_to_pass=tests, language="java", messages=messages,
                           test_sources={HELP: HELP_SRC})
    said = observations(ev)
    assert not any("readLines`" in line and "problem" in line for line in said)
    text = offline_statement(cli_candidate(), ev)
    assert "`readLines`" not in text  # named only inside the call that was checked
    # cut around the difference, not both to the same first 120 characters
    assert "returns `…xxx" in text and "x, -a aaaa]`; it should return `…xxx" in text
    assert "x, -a  aaaa]`." in text


def test_values_that_differ_in_spaces_only_are_quoted() -> None:
    """commons-cli's ``TextStyle.pad``: ``Hello world`` where ``Hello world `` is expected
    read as the same value twice."""
    from repogym.generators.statements.values import display_pair

    assert display_pair("Hello world", "Hello world ") == ('"Hello world"', '"Hello world "')
    assert display_pair("1", "2") == ("1", "2")
    # commons-codec's doubleMetaphone("jumped"): "now returns `` instead of `JMPT`"
    assert display_pair("", "JMPT") == ('""', '"JMPT"')
    assert display_pair("'a'", "'a '") == ("'a'", "'a '")  # Python reprs show it already


def test_a_behaviour_is_said_once_by_its_most_precise_call() -> None:
    """commons-cli's getOptionProperties: three tests raising the same exception, one call
    with a literal, one with a test's local (``…``); the vaguer one is not said again."""
    from repogym.generators.statements.observed import Observed
    from repogym.generators.statements.wording import _group

    error = "java.lang.IndexOutOfBoundsException: Index -2 out of bounds for length 2"
    fn = "getOptionProperties"
    precise = Observed(function=fn, call='getOptionProperties("D")', raises=error)
    other = Observed(function=fn, call=None, raises=error.replace("length 2", "length 1"))
    grouped = _group([precise, Observed(function=fn, call="getOptionProperties(…)",
                                        raises=error), Observed(function=fn, raises=error),
                      other])
    assert grouped == {fn: [precise, other]}
