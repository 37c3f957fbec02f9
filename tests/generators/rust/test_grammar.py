"""The Rust grammar: registered by name and suffix, its own family, what counts as a real
change (never in a test file), and the runtime-code rules: function bodies only, never
test code, ``const`` items, macros or ``unsafe`` blocks."""

from __future__ import annotations

import pytest

from repogym.generators.mutators.grammars import GRAMMARS, Grammar, family_grammar, grammar_for
from repogym.generators.mutators.rust.grammar import RUST, RustGrammar
from repogym.generators.mutators.rust.runtime import (
    enclosing_function,
    in_runtime_code,
    is_test_file,
    runtime_nodes,
)
from tests.generators.rust.support import parse


def test_registered_as_rust_in_its_own_family() -> None:
    assert GRAMMARS.get("rust") is RustGrammar
    assert RustGrammar.family == "rust" and RustGrammar.suffixes == (".rs",)
    assert isinstance(family_grammar("rust"), RustGrammar)


@pytest.mark.parametrize("path", ["src/lib.rs", "src/parser/mod.rs", "tests/it.rs"])
def test_grammar_for_picks_rust_files(path: str) -> None:
    grammar = grammar_for(path)
    assert grammar is not None and grammar.name == "rust"
    assert grammar_for("Cargo.toml") is None and grammar_for("a.rsx") is None


def test_parses_generics_and_flags_broken_code() -> None:
    parse("fn map<T, U: Clone>(xs: &[T], f: impl Fn(&T) -> U) -> Vec<U> {\n"
          "    xs.iter().map(f).collect()\n}\n")
    assert not RUST.parses_cleanly(b"fn f( {\n    1 +\n}\n")


ORIGINAL = "fn f(a: i32) -> bool {\n    // keep\n    a < 1\n}\n"


@pytest.mark.parametrize(("mutated", "real"), [
    ("fn f(a: i32) -> bool {\n    a < 1\n}\n", False),                  # comment dropped
    ("fn f(a: i32) -> bool {\n    /* x */ a  <  1\n}\n", False),        # layout
    ("fn f(a: i32) -> bool {\n    // keep\n    a >= 1\n}\n", True),
    ("fn f(a: i32) -> bool {\n    // keep\n    a < 2\n}\n", True),
    ("fn f(a: i32) -> bool {\n    // keep\n    a < \n}\n", False),      # does not parse
])
def test_real_change_ignores_comments_and_layout(mutated: str, real: bool) -> None:
    assert RUST.real_change("src/lib.rs", ORIGINAL, mutated, 3) is real
    if "a < \n" not in mutated:
        assert Grammar.real_change(RUST, "src/lib.rs", ORIGINAL, mutated, 3) is real


@pytest.mark.parametrize(("path", "test"), [
    ("src/lib.rs", False), ("src/parser/mod.rs", False), ("tests/it.rs", True),
    ("benches/b.rs", True), ("examples/demo.rs", True), ("build.rs", True),
    ("src/tests.rs", True), ("src/parse_test.rs", True), ("fuzz/fuzz_targets/a.rs", True)])
def test_no_change_to_a_test_file_is_real(path: str, test: bool) -> None:
    assert is_test_file(path) is test
    mutated = ORIGINAL.replace("a < 1", "a >= 1")
    assert RUST.real_change(path, ORIGINAL, mutated, 3) is not test


FILE = """\
#![allow(dead_code)]
use std::fmt;

const LIMIT: usize = 1 + 2;
static NAME: &str = "x";

macro_rules! twice {
    ($e:expr) => { $e + $e };
}

pub struct Parser<T> { pos: usize, items: Vec<T> }

impl<T: Clone> Parser<T> {
    pub fn advance(&mut self, n: usize) -> usize {
        self.pos = self.pos + n;
        println!("at {}", self.pos + 1);
        let close = |x: usize| x + 1;
        unsafe { helper(self.pos - 1) };
        const INNER: usize = 2 + 2;
        close(self.pos)
    }

    const fn size() -> usize { 4 * 2 }

    unsafe fn raw(&self) -> usize { self.pos * 2 }
}

impl<T> fmt::Display for Parser<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.pos + 1)
    }
}

trait Scan {
    fn scan(&self) -> usize { 3 - 1 }
    fn other(&self) -> usize;
}

fn free(a: u32) -> u32 {
    fn nested(b: u32) -> u32 { b * 3 }
    if a > 2 {
        return nested(a);
        #[allow(unreachable_code)]
        a - 1;
    }
    a + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(free(1), 2 + 0);
        let x = 1 + 1;
    }
}

#[test]
fn top_level_test() { let y = 3 - 1; }

#[cfg(not(test))]
fn only_without_tests() -> u32 { 5 + 5 }

#[tokio::test]
async fn async_test() { let z = 4 * 4; }
"""


def _binary_ops(root_text: str) -> list[tuple[str, str | None]]:
    root = parse(root_text)
    found = []
    for node in runtime_nodes(root):
        if node.type == "binary_expression":
            assert in_runtime_code(node)
            found.append(((node.text or b"").decode(), enclosing_function(node)))
    return found


def test_runtime_code_is_function_bodies_outside_tests_consts_macros_and_unsafe() -> None:
    assert _binary_ops(FILE) == [
        ("self.pos + n", "Parser::advance"), ("x + 1", "Parser::advance"),
        ("3 - 1", "Scan::scan"), ("b * 3", "free::nested"), ("a > 2", "free"),
        ("a + 1", "free")]


def test_in_runtime_code_agrees_with_the_walk() -> None:
    root = parse(FILE)
    walked = {(n.start_byte, n.end_byte, n.type) for n in runtime_nodes(root)}
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.is_named and node.type not in ("line_comment", "block_comment"):
            assert in_runtime_code(node) is ((node.start_byte, node.end_byte, node.type)
                                              in walked), (node.type, node.text)


def test_a_file_under_an_inner_cfg_test_has_no_runtime_code() -> None:
    assert _binary_ops("#![cfg(test)]\n\nfn f(a: u8) -> bool { a < 1 }\n") == []
    assert _binary_ops("fn f(a: u8) -> bool { a < 1 }\n") == [("a < 1", "f")]
