"""Each rust mutator: exact sites on small Rust snippets (every mutant parses cleanly and
counts as a real change: see ``support.mutants``), and what it must leave alone so the
crate still builds: test code, ``const`` items, macros, ``unsafe`` blocks, and the
proposals rustc would reject."""

from __future__ import annotations

from textwrap import dedent, indent

import pytest

from repogym.generators.mutators import MUTATORS
from tests.generators.rust.support import RS_KINDS, descriptions, mutants

EXPECTED_KINDS = {
    "rs_arithmetic_swap", "rs_bitwise_swap", "rs_break_call_chain", "rs_comparison_flip",
    "rs_constant_swap", "rs_invert_if_else", "rs_logical_swap", "rs_match_arm_swap",
    "rs_negate_condition", "rs_off_by_one", "rs_remove_conditional",
    "rs_remove_early_return", "rs_remove_statement", "rs_return_value",
    "rs_swap_arguments"}


def test_all_kinds_registered_in_the_rust_family() -> None:
    assert set(RS_KINDS) == EXPECTED_KINDS
    assert {MUTATORS.get(kind).family for kind in RS_KINDS} == {"rust"}
    assert not any(MUTATORS.get(kind).edits_defaults for kind in RS_KINDS)
    assert all(MUTATORS.get(kind).family != "rust" for kind in MUTATORS.names()
               if not kind.startswith("rs_"))


def body(code: str, params: str = "a: i32, b: i32", result: str = "") -> str:
    """``code`` (dedented) as the body of ``fn f(params) -> result``."""
    arrow = f" -> {result}" if result else ""
    return f"fn f({params}){arrow} {{\n{indent(dedent(code).strip(), '    ')}\n}}\n"


TEST_CODE = """\
const LIMIT: i32 = {expr};
static OTHER: i32 = {expr};

macro_rules! m {{
    ($a:expr) => {{ {expr} }};
}}

fn g(a: i32, b: i32) -> i32 {{
    println!("{{}}", {expr});
    assert!({expr} > 0);
    const INNER: i32 = {expr};
    unsafe {{ h({expr}) }}
}}

#[cfg(test)]
mod tests {{
    use super::*;

    #[test]
    fn t() {{
        let x = {expr};
        if a < b {{ return; }}
    }}
}}

#[test]
fn top(a: i32, b: i32) -> i32 {{
    {expr}
}}
"""


@pytest.mark.parametrize("kind", sorted(EXPECTED_KINDS))
@pytest.mark.parametrize("expr", ["a + b", "a < b && a == 1", "a & b << 1",
                                  "if a < 1 { 0 } else { 1 }", "[a, b][0]", "true"])
def test_nothing_in_tests_consts_macros_or_unsafe_blocks(kind: str, expr: str) -> None:
    assert mutants(kind, TEST_CODE.format(expr=expr)) == []


# --- operators -------------------------------------------------------------------------

@pytest.mark.parametrize(("op", "flipped"), [
    ("<", ">="), (">=", "<"), (">", "<="), ("<=", ">"), ("==", "!="), ("!=", "==")])
def test_comparison_flip(op: str, flipped: str) -> None:
    assert mutants("rs_comparison_flip", body(f"a {op} b", result="bool")) == [
        body(f"a {flipped} b", result="bool")]


def test_comparison_flip_describes_the_change() -> None:
    assert descriptions("rs_comparison_flip", body("a < b", result="bool")) == [
        (2, "`<` replaced by `>=`")]


@pytest.mark.parametrize(("before", "after"), [
    ("a + b", "a - b"), ("a - b", "a + b"), ("a * b", "a / b"), ("a / b", "a * b"),
    ("a % b", "a * b"), ("a + 1", "a - 1"), ("n.len() - k", "n.len() + k")])
def test_arithmetic_swap(before: str, after: str) -> None:
    params = "a: i32, b: i32, n: &[u8], k: usize"
    result = "usize" if "len" in before else "i32"
    assert mutants("rs_arithmetic_swap", body(before, params, result)) == [
        body(after, params, result)]


def test_arithmetic_swap_compound_assignments_and_typed_locals() -> None:
    code = "let mut t: u64 = 0;\nt += b;\nlet c = 2;\nc * t"
    assert mutants("rs_arithmetic_swap", body(code, "b: u64", "u64")) == [
        body(code.replace("t += b", "t -= b"), "b: u64", "u64"),
        body(code.replace("c * t", "c / t"), "b: u64", "u64")]


@pytest.mark.parametrize("code", [
    's + "x"',                   # String + &str: no Sub
    "x + y",                     # types the file does not show
    "now - start",               # Instant - Instant: no Add
    "2 * d",                     # u32 * Duration: no Div the other way
    "a * 0",                     # a / 0: unconditional_panic
    "60 * 60",                   # constants: may overflow once changed
])
def test_arithmetic_swap_only_on_numbers_it_can_see(code: str) -> None:
    params = "a: i32, s: String, x: T, y: T, now: Instant, start: Instant, d: Duration"
    assert mutants("rs_arithmetic_swap", body(code, params, "R")) == []


def test_arithmetic_swap_on_fields_the_file_declares() -> None:
    source = ("struct S { n: usize, name: String }\n\nimpl S {\n    fn f(&self) -> usize {\n"
              "        self.n + 1\n    }\n    fn g(&self) -> String {\n"
              "        self.name.clone() + \"x\"\n    }\n}\n")
    assert mutants("rs_arithmetic_swap", source) == [source.replace("self.n + 1",
                                                                    "self.n - 1")]


@pytest.mark.parametrize(("before", "after"), [
    ("a & b", "a | b"), ("a | b", "a & b"), ("a ^ b", "a & b"), ("a << b", "a >> b"),
    ("a >> b", "a << b")])
def test_bitwise_swap(before: str, after: str) -> None:
    assert mutants("rs_bitwise_swap", body(before, "a: u32, b: u32", "u32")) == [
        body(after, "a: u32, b: u32", "u32")]


def test_bitwise_swap_leaves_constants_and_labels() -> None:
    assert mutants("rs_bitwise_swap", body("1 << 31", result="u32")) == []
    labelled = "let v = 'value: {\n    break 'value &s[0..0];\n};\nv"
    assert mutants("rs_bitwise_swap", body(labelled, "s: &[u8]", "&[u8]")) == []


def test_logical_swap() -> None:
    assert mutants("rs_logical_swap", body("a < 1 && b > 2 || a == b", result="bool")) == [
        body("a < 1 && b > 2 && a == b", result="bool"),
        body("a < 1 || b > 2 || a == b", result="bool")]


def test_logical_swap_leaves_let_chains() -> None:
    code = "if let Some(x) = o && x > 1 {\n    return x;\n}\n0"
    assert mutants("rs_logical_swap", body(code, "o: Option<i32>", "i32")) == []


# --- conditions ------------------------------------------------------------------------

@pytest.mark.parametrize(("cond", "negated"), [
    ("a < b", "!(a < b)"), ("ok", "!ok"), ("!ok", "ok"), ("v.is_empty()", "!v.is_empty()"),
    ("a < b && ok", "!(a < b && ok)")])
def test_negate_condition(cond: str, negated: str) -> None:
    params = "a: i32, b: i32, ok: bool, v: &[u8]"
    code = f"if {cond} {{\n    g();\n}}"
    assert mutants("rs_negate_condition", body(code, params)) == [
        body(code.replace(f"if {cond}", f"if {negated}"), params)]


def test_negate_condition_in_while_not_in_let() -> None:
    code = "while a < b {\n    a += 1;\n}\nwhile let Some(x) = it.next() {\n    g(x);\n}"
    assert mutants("rs_negate_condition", body(code)) == [
        body(code.replace("while a < b", "while !(a < b)"))]


def test_invert_if_else() -> None:
    code = "if a < b {\n    a\n} else {\n    b\n}"
    assert mutants("rs_invert_if_else", body(code, result="i32")) == [
        body("if a < b {\n    b\n} else {\n    a\n}", result="i32")]


def test_invert_if_else_leaves_if_let_else_if_and_equal_branches() -> None:
    code = ("if let Some(x) = o {\n    x\n} else {\n    0\n}")
    assert mutants("rs_invert_if_else", body(code, "o: Option<i32>", "i32")) == []
    chained = "if a < b {\n    1\n} else if a > b {\n    2\n} else {\n    3\n}"
    assert mutants("rs_invert_if_else", body(chained, result="i32")) == [
        body("if a < b {\n    1\n} else if a > b {\n    3\n} else {\n    2\n}",
             result="i32")]
    same = "if a < b {\n    g();\n} else {\n    g();\n}"
    assert mutants("rs_invert_if_else", body(same)) == []


# --- literals --------------------------------------------------------------------------

def test_off_by_one_in_comparisons() -> None:
    assert mutants("rs_off_by_one", body("a < 10", result="bool")) == [
        body("a < 11", result="bool"), body("a < 9", result="bool")]


def test_off_by_one_never_makes_a_negative_nor_passes_a_bound() -> None:
    assert mutants("rs_off_by_one", body("n > 0", "n: usize", "bool")) == [
        body("n > 1", "n: usize", "bool")]
    assert mutants("rs_off_by_one", body("b <= 255", "b: u8", "bool")) == [
        body("b <= 254", "b: u8", "bool")]
    assert mutants("rs_off_by_one", body("a > -1", result="bool")) == [
        body("a > 0", result="bool"), body("a > -2", result="bool")]


def test_off_by_one_in_indexes_ranges_and_offsets() -> None:
    params = "v: &[u8], n: usize"
    assert mutants("rs_off_by_one", body("v[2]", params, "u8")) == [
        body("v[1]", params, "u8")]
    assert mutants("rs_off_by_one", body("v[0]", params, "u8")) == []
    assert mutants("rs_off_by_one", body("v[v.len() - 1]", params, "u8")) == [
        body("v[v.len() - 2]", params, "u8"), body("v[v.len() - 0]", params, "u8")]
    assert mutants("rs_off_by_one", body("&v[1..n]", params, "&[u8]")) == [
        body("&v[1..=n]", params, "&[u8]"), body("&v[2..n]", params, "&[u8]"),
        body("&v[0..n]", params, "&[u8]")]


def test_off_by_one_range_kinds_only_where_both_work() -> None:
    code = "for i in 0..=n {\n    g(i);\n}"
    assert mutants("rs_off_by_one", body(code, "n: usize")) == [
        body(code.replace("0..=n", "0..n"), "n: usize"),
        body(code.replace("0..=n", "1..=n"), "n: usize")]
    assert mutants("rs_off_by_one", body("(1..n).len()", "n: usize", "usize")) == [
        body("(2..n).len()", "n: usize", "usize"), body("(0..n).len()", "n: usize", "usize")]
    assert mutants("rs_off_by_one", body("(b'a'..=b'z').contains(&c)", "c: u8", "bool")) == [
        body("(b'a'..b'z').contains(&c)", "c: u8", "bool")]


def test_off_by_one_keeps_suffix_and_base() -> None:
    assert mutants("rs_off_by_one", body("a < 0x10u8", "a: u8", "bool")) == [
        body("a < 0x11u8", "a: u8", "bool"), body("a < 0xfu8", "a: u8", "bool")]


def test_off_by_one_leaves_match_patterns() -> None:
    code = "match a {\n    0..=9 => 1,\n    _ => 2,\n}"
    assert mutants("rs_off_by_one", body(code, result="i32")) == []


def test_constant_swap() -> None:
    code = "let mut n = 0;\nlet done = false;\ng(1, done);\nn"
    assert mutants("rs_constant_swap", body(code, "", "i32")) == [
        body(code.replace("n = 0", "n = 1"), "", "i32"),
        body(code.replace("false", "true"), "", "i32"),
        body(code.replace("g(1,", "g(0,"), "", "i32")]


def test_constant_swap_leaves_patterns_divisors_and_capacities() -> None:
    code = ("match ok {\n    true => g(a / 1),\n    _ => Vec::with_capacity(0),\n}")
    assert mutants("rs_constant_swap", body(code, "ok: bool, a: i32", "R")) == []


# --- statements ------------------------------------------------------------------------

def test_remove_statement() -> None:
    code = "let mut n = a;\nn += 1;\nself.log(n);\nn *= 2;\nself.total = n;"
    assert mutants("rs_remove_statement", body(code, "&mut self, a: i32")) == [
        body(code.replace("n += 1;\n", ""), "&mut self, a: i32"),
        body(code.replace("self.log(n);\n", ""), "&mut self, a: i32"),
        body(code.replace("n *= 2;\n", ""), "&mut self, a: i32"),
        body(code.replace("\nself.total = n;", ""), "&mut self, a: i32")]
    # `n += 1` alone would leave `let mut n` never mutated: unused_mut
    single = "let mut n = a;\nn += 1;\nself.total = n;"
    assert mutants("rs_remove_statement", body(single, "&mut self, a: i32")) == [
        body("let mut n = a;\nn += 1;", "&mut self, a: i32")]


def test_remove_statement_keeps_what_rustc_needs() -> None:
    # the last use of a parameter, a deferred initialisation, the push fixing a type,
    # the only mutation of a `let mut`, drop(guard), a macro
    assert mutants("rs_remove_statement", body("g(a);", "a: i32")) == []
    assert mutants("rs_remove_statement", body("let x;\nx = g();\nh(x);")) == []
    assert mutants("rs_remove_statement",
                   body("let mut v = Vec::new();\nv.push(1u8);\nv", "", "Vec<u8>")) == []
    assert mutants("rs_remove_statement",
                   body("let mut n = 0;\nn += 1;\nn", "", "i32")) == []
    assert mutants("rs_remove_statement", body("let g = m.lock();\ndrop(g);\nh();", "")) == [
        body("let g = m.lock();\ndrop(g);", "")]
    assert mutants("rs_remove_statement", body("println!(\"x\");\nwrite!(f, \"y\")?;")) \
        == []


def test_remove_statement_keeps_a_diverging_last_statement() -> None:
    """``fn f() -> i32 { ...; process::exit(1); }`` builds because the last statement
    diverges: without it, the block is ``()``."""
    code = "g();\nstd::process::exit(1);"
    assert mutants("rs_remove_statement", body(code, "", "i32")) == [
        body("std::process::exit(1);", "", "i32")]
    assert mutants("rs_remove_statement", body(code)) == [
        body("std::process::exit(1);"), body("g();")]


def test_remove_early_return() -> None:
    code = "if a < 0 {\n    return 0;\n}\na + 1"
    assert mutants("rs_remove_early_return", body(code, "a: i32", "i32")) == [
        body("if a < 0 {\n}\na + 1", "a: i32", "i32")]
    loop = "for x in xs {\n    if x > 1 {\n        return;\n    }\n    g(x);\n}"
    assert mutants("rs_remove_early_return", body(loop, "xs: &[i32]")) == [
        body(loop.replace("        return;\n", ""), "xs: &[i32]")]


def test_remove_early_return_only_where_the_block_type_allows() -> None:
    # the return is what makes the branch diverge: the if is the function's value,
    # a `let` takes its value, the arm of a `match` that gives a value
    tail = "if a < 0 {\n    return 0;\n} else {\n    return 1;\n}"
    assert mutants("rs_remove_early_return", body(tail, "a: i32", "i32")) == []
    let = "let x = if a < 0 {\n    return 0;\n} else {\n    a\n};\nx"
    assert mutants("rs_remove_early_return", body(let, "a: i32", "i32")) == []
    arm = "let x = match o {\n    Some(x) => x,\n    None => {\n        return 0;\n    }\n};\nx"
    assert mutants("rs_remove_early_return", body(arm, "o: Option<i32>", "i32")) == []
    body_return = "g();\nreturn 1;"
    assert mutants("rs_remove_early_return", body(body_return, "", "i32")) == []


def test_remove_early_return_not_out_of_a_bare_loop() -> None:
    code = "loop {\n    if a > 1 {\n        return;\n    }\n    g();\n}"
    assert mutants("rs_remove_early_return", body(code)) == []


@pytest.mark.parametrize(("result", "before", "after"), [
    ("Option<usize>", "Some(a.len())", "None"),
    ("Result<Option<usize>, E>", "Ok(Some(a.len()))", "Ok(None)"),
    ("bool", "a.is_empty()", "!a.is_empty()"),
    ("bool", "a.len() > 2", "!(a.len() > 2)"),
    ("usize", "a.len()", "0"),
    ("String", "a.to_string()", "String::new()"),
    ("Vec<u8>", "a.to_vec()", "Vec::new()"),
])
def test_return_value(result: str, before: str, after: str) -> None:
    assert mutants("rs_return_value", body(f"g(a);\n{before}", "a: &[u8]", result)) == [
        body(f"g(a);\n{after}", "a: &[u8]", result)]
    plain = {"bool": "false", "usize": "0", "String": "String::new()",
             "Vec<u8>": "Vec::new()"}.get(result, "None")  # the tail: already "wrong"
    early = f"if a.is_empty() {{\n    return {before};\n}}\n{plain}"
    assert mutants("rs_return_value", body(early, "a: &[u8]", result)) == [
        body(early.replace(f"return {before}", f"return {after}"), "a: &[u8]", result)]


def test_return_value_leaves_aliases_closures_literals_and_last_uses() -> None:
    assert mutants("rs_return_value", body("Ok(Status::Partial)", "", "Result<u8>")) == []
    closure = "let f = |x: &[u8]| -> Option<usize> { Some(x.len()) };\nf"
    assert mutants("rs_return_value", body(closure, "", "F")) == []
    assert mutants("rs_return_value", body("true", "", "bool")) == []
    assert mutants("rs_return_value", body("Some(a)", "a: u8", "Option<u8>")) == []


# --- blocks ----------------------------------------------------------------------------

def test_remove_conditional() -> None:
    code = "let mut n = a;\nif n < 0 {\n    n = 0;\n}\nn"
    assert mutants("rs_remove_conditional", body(code, "a: i32", "i32")) == []  # unused_mut
    code = "if a < 0 {\n    self.reset();\n}\nself.push(a);"
    assert mutants("rs_remove_conditional", body(code, "&mut self, a: i32")) == [
        body("self.push(a);", "&mut self, a: i32")]


def test_remove_conditional_leaves_else_if_and_needed_code() -> None:
    chained = "if a < 0 {\n    g();\n} else if a > 0 {\n    h();\n}"
    assert mutants("rs_remove_conditional", body(chained)) == []
    only_use = "if b {\n    g();\n}"
    assert mutants("rs_remove_conditional", body(only_use, "b: bool")) == []
    logging = "if a < 0 {\n    debug!(\"negative\");\n}\ng(a);"
    assert mutants("rs_remove_conditional", body(logging)) == []
    exit = "loop {\n    if a > 1 {\n        break;\n    }\n    g();\n}"
    assert mutants("rs_remove_conditional", body(exit)) == []


def test_match_arm_swap() -> None:
    code = "match c {\n    b'a' => true,\n    b'b' => false,\n    _ => false,\n}"
    assert mutants("rs_match_arm_swap", body(code, "c: u8", "bool")) == [
        body(code.replace("'a' => true,\n    b'b' => false", "'a' => false,\n    b'b' => true"),
             "c: u8", "bool")]
    paths = "match a {\n    0 => Ordering::Less,\n    _ => Ordering::Greater,\n}"
    assert mutants("rs_match_arm_swap", body(paths, "a: i32", "Ordering")) == [
        body(paths.replace("Less", "X").replace("Greater", "Less").replace("X", "Greater"),
             "a: i32", "Ordering")]


def test_match_arm_swap_leaves_bindings_and_other_shapes() -> None:
    code = "match o {\n    Some(x) => x,\n    None => 0,\n}"
    assert mutants("rs_match_arm_swap", body(code, "o: Option<i32>", "i32")) == []
    mixed = "match a {\n    0 => \"zero\",\n    _ => NAME,\n}"
    assert mutants("rs_match_arm_swap", body(mixed, "a: i32", "&str")) == []


# --- calls -----------------------------------------------------------------------------

def test_swap_arguments() -> None:
    code = 'g(a, b);\nh("x", "y", 1);\nk(&mut a, &b);'
    assert mutants("rs_swap_arguments", body(code, "mut a: i32, b: i32")) == [
        body(code.replace("g(a, b)", "g(b, a)"), "mut a: i32, b: i32"),
        body(code.replace('h("x", "y"', 'h("y", "x"'), "mut a: i32, b: i32")]


def test_swap_arguments_only_of_one_known_type() -> None:
    code = ('g(a, c);\nh(x, y);\nmax(a, b);\nstd::mem::swap(&mut a, &mut b);\n'
            'k("a", b"b");\nn(1, 1000);')
    params = "a: i32, b: i32, c: u8, x: T, y: U"
    assert mutants("rs_swap_arguments", body(code, params)) == []


def test_break_call_chain() -> None:
    params = "s: &str, xs: &[u8]"
    assert mutants("rs_break_call_chain", body("s.trim().trim_matches('/')", params, "&str")) \
        == [body("s.trim()", params, "&str")]
    assert mutants("rs_break_call_chain",
                   body("s.to_string().to_lowercase()", params, "String")) == [
        body("s.to_string()", params, "String")]
    assert mutants("rs_break_call_chain", body("xs.iter().rev().count()", params, "usize")) \
        == [body("xs.iter().count()", params, "usize")]


def test_break_call_chain_keeps_types() -> None:
    params = "s: &str, xs: &[u8]"
    assert mutants("rs_break_call_chain", body("s.trim().to_lowercase()", params, "String")) \
        == []
    assert mutants("rs_break_call_chain", body("xs.iter().map(f).count()", params, "usize")) \
        == []
    assert mutants("rs_break_call_chain", body("xs.iter().rev()", params, "R")) == []
