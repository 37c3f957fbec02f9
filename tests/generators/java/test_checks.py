"""The compile guards of the java family (:mod:`repogym.generators.mutators.java.checks`):
types as far as the file shows, definite assignment, checked exceptions, literals."""

from __future__ import annotations

import pytest
from tree_sitter import Node

from repogym.generators.mutators.java.checks import (
    assigns_blank,
    catch_needs_calls,
    condition_is_plain,
    declared_type,
    is_numeric,
    type_of,
)
from repogym.generators.mutators.java.literals import int_value, written
from tests.generators.java.support import parse

SOURCE = '''\
package p;

class A {
    private final int size;
    private String label;
    long total;

    A(int size) {
        this.size = size;
    }

    int f(int a, String s, int[] xs, Object o, char c) {
        int n;
        String t = s + a;
        long m = 2L;
        if (o instanceof String u && (n = u.length()) > 0) {
            return n;
        }
        try {
            n = read(a);
            total = xs.length;
        } catch (java.io.IOException | IllegalStateException e) {
            n = 0;
        }
        try {
            n = parse(s);
        } catch (NumberFormatException e) {
            n = -1;
        }
        return a + xs[0] + c + s.length() + (a > 0 ? 1 : 2) + this.size + label.length();
    }
}
'''


def _find(root: Node, snippet: str, kind: str | None = None) -> Node:
    stack = [root]
    while stack:
        node = stack.pop()
        if (node.text or b"").decode() == snippet and (kind is None or node.type == kind) \
                and node.type != "variable_declarator":
            return node
        stack.extend(reversed(node.children))
    raise AssertionError(snippet)


@pytest.mark.parametrize(("snippet", "kind"), [
    ("a", "int"), ("s", "String"), ("xs", "int[]"), ("t", "String"), ("m", "long"),
    ("this.size", "int"), ("2L", "long"), ("\"x\"", None), ("label", "String"),
    ("total", "long"), ("u", "String"), ("e", None)])
def test_declared_types(snippet: str, kind: str | None) -> None:
    root = parse(SOURCE.replace("String t = s + a;", "String t = s + a + \"x\";"))
    node = _find(root, snippet)
    assert type_of(node) == (kind if snippet != '"x"' else "String")
    if node.type == "identifier":
        assert declared_type(snippet, node) == kind


@pytest.mark.parametrize(("snippet", "numeric"), [
    ("a", True), ("xs[0]", True), ("c", True), ("s.length()", True),
    ("(a > 0 ? 1 : 2)", True), ("this.size", True), ("s", False), ("o", False),
    ("label.length()", True), ("s + a", False), ("read(a)", False)])
def test_is_numeric(snippet: str, numeric: bool) -> None:
    assert is_numeric(_find(parse(SOURCE), snippet)) is numeric


def test_condition_is_plain() -> None:
    root = parse(SOURCE)
    assert not condition_is_plain(_find(root, "o instanceof String u && (n = u.length()) > 0"))
    assert condition_is_plain(_find(root, "(n = u.length()) > 0"))
    assert condition_is_plain(_find(root, "a > 0"))


def test_assigns_blank_and_final_fields() -> None:
    root = parse(SOURCE)
    assert assigns_blank(_find(root, "n = read(a);", "expression_statement"))
    assert assigns_blank(_find(root, "this.size = size;", "expression_statement"))
    assert not assigns_blank(_find(root, "total = xs.length;", "expression_statement"))


def test_catch_needs_calls_of_checked_exceptions_only() -> None:
    root = parse(SOURCE)
    assert catch_needs_calls(_find(root, "n = read(a);", "expression_statement"))
    assert not catch_needs_calls(_find(root, "total = xs.length;", "expression_statement"))
    assert not catch_needs_calls(_find(root, "n = parse(s);", "expression_statement"))


@pytest.mark.parametrize(("literal", "value"), [
    ("0", 0), ("017", 15), ("0x1F", 31), ("0b101", 5), ("1_000L", 1000), ("9", 9)])
def test_int_value(literal: str, value: int) -> None:
    assert int_value(literal) == value


@pytest.mark.parametrize(("value", "literal", "out"), [
    (16, "017", "020"), (32, "0x1F", "0x20"), (30, "0X1F", "0X1E"), (6, "0b101", "0b110"),
    (1001, "1_000L", "1001L"), (2 ** 31, "2147483647", None), (-1, "0x0", None),
    (2 ** 31, "2147483647L", "2147483648L")])
def test_written_keeps_base_and_suffix(value: int, literal: str, out: str | None) -> None:
    assert written(value, literal) == out
