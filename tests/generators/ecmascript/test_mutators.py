"""Each ecmascript mutator: exact sites on small JavaScript and TypeScript snippets (every
mutant parses cleanly: see ``support.mutants``), what it must leave alone, and one
conformance suite every ``js_`` mutator passes."""

from __future__ import annotations

from textwrap import dedent

import pytest

from repogym.generators.mutators import MUTATORS
from repogym.generators.mutators.ecmascript.runtime import in_runtime_code
from repogym.generators.mutators.ecmascript.scopes import enclosing_function
from tests.generators.ecmascript.support import (
    GRAMMARS,
    JS_KINDS,
    descriptions,
    mutants,
    sites,
)

EXPECTED_KINDS = {
    "js_arithmetic_swap", "js_break_call_chain", "js_change_default", "js_comparison_flip",
    "js_constant_swap", "js_invert_if_else", "js_logical_swap", "js_negate_condition",
    "js_off_by_one", "js_remove_conditional", "js_remove_loop", "js_remove_return",
    "js_remove_statement", "js_remove_try", "js_return_value", "js_swap_arguments",
    "js_swap_statements", "js_update_flip"}


def test_all_kinds_registered_in_the_ecmascript_family() -> None:
    assert set(JS_KINDS) == EXPECTED_KINDS
    assert {MUTATORS.get(kind).family for kind in JS_KINDS} == {"ecmascript"}
    assert all(MUTATORS.get(kind).family != "ecmascript" for kind in MUTATORS.names()
               if kind not in EXPECTED_KINDS)


def body(code: str, params: str = "a, b") -> str:
    """``code`` as the body of ``function f(params)``."""
    return f"function f({params}) {{\n  {code}\n}}\n"


# --- js_comparison_flip ----------------------------------------------------------------

@pytest.mark.parametrize(("op", "flipped"), [
    ("<", ">="), (">=", "<"), (">", "<="), ("<=", ">"), ("===", "!=="), ("!==", "==="),
    ("==", "!="), ("!=", "==")])
@pytest.mark.parametrize("lang", ["js", "ts"])
def test_comparison_flip(op: str, flipped: str, lang: str) -> None:
    assert mutants("js_comparison_flip", body(f"return a {op} b;"), lang) == [
        body(f"return a {flipped} b;")]


def test_comparison_flip_describes_the_change() -> None:
    assert descriptions("js_comparison_flip", body("return a.length < b;")) == [
        (2, "`<` replaced by `>=`")]


def test_comparison_flip_leaves_other_operators_alone() -> None:
    assert mutants("js_comparison_flip", body("return a instanceof B || a in b;")) == []


# --- js_arithmetic_swap ----------------------------------------------------------------

@pytest.mark.parametrize(("before", "after"), [
    ("a + b", "a - b"), ("a - b", "a + b"), ("a * b", "a / b"), ("a / b", "a * b"),
    ("a % b", "a * b")])
def test_arithmetic_swap(before: str, after: str) -> None:
    assert mutants("js_arithmetic_swap", body(f"return {before};")) == [
        body(f"return {after};")]


@pytest.mark.parametrize(("before", "after"), [
    ("a += b", "a -= b"), ("a -= b", "a += b"), ("a *= b", "a /= b"), ("a /= b", "a *= b"),
    ("a %= b", "a *= b")])
def test_arithmetic_swap_compound_assignments(before: str, after: str) -> None:
    assert mutants("js_arithmetic_swap", body(f"{before};")) == [body(f"{after};")]


def test_arithmetic_swap_leaves_string_building_alone() -> None:
    assert mutants("js_arithmetic_swap", """\
        function f(name: string, n: number) {
          let out = "";
          out += name;
          const label = "x" + name + n;
          return `${out}!` + label, name + 'y';
        }
        """, "ts") == []


def test_arithmetic_swap_in_typescript() -> None:
    assert mutants("js_arithmetic_swap", """\
        function f(xs: number[]): number {
          return (xs.length as number) * 2;
        }
        """, "ts") == [dedent("""\
        function f(xs: number[]): number {
          return (xs.length as number) / 2;
        }
        """)]


# --- js_logical_swap -------------------------------------------------------------------

def test_logical_swap() -> None:
    assert mutants("js_logical_swap", body("return a && b || c ?? d;")) == [
        body("return a && b || c || d;"),
        body("return a && b && c ?? d;"),
        body("return a || b || c ?? d;"),
    ]


def test_logical_swap_assignments() -> None:
    assert mutants("js_logical_swap", body("a.x ??= b; a.y ||= b; a.z &&= b;")) == [
        body("a.x ||= b; a.y ||= b; a.z &&= b;"),
        body("a.x ??= b; a.y &&= b; a.z &&= b;"),
        body("a.x ??= b; a.y ||= b; a.z ||= b;"),
    ]


# --- js_update_flip --------------------------------------------------------------------

def test_update_flip_in_loops_only() -> None:
    source = """\
        function f(xs) {
          let n = 0;
          n++;
          for (let i = 0; i < xs.length; i++) {
            --n;
          }
          return () => { n++; };
        }
        """
    assert descriptions("js_update_flip", source) == [
        (4, "`++` replaced by `--`"), (5, "`--` replaced by `++`")]
    assert mutants("js_update_flip", source)[0] == dedent(source).replace(
        "xs.length; i++", "xs.length; i--")


# --- js_negate_condition ---------------------------------------------------------------

NEGATE_SOURCE = """\
function f(a, b) {
  if (a && b) {
    a = 1;
  } else if (b > 2) a = 2;
  while (!a) a += 1;
  do { b-- } while (b.ok());
  return a ? b : (a || b) ? 1 : 2;
}
"""


def test_negate_condition_every_kind_of_condition() -> None:
    assert mutants("js_negate_condition", NEGATE_SOURCE) == [
        NEGATE_SOURCE.replace("if (a && b)", "if (!(a && b))"),
        NEGATE_SOURCE.replace("if (b > 2)", "if (!(b > 2))"),
        NEGATE_SOURCE.replace("while (!a)", "while (a)"),
        NEGATE_SOURCE.replace("while (b.ok())", "while (!b.ok())"),
        NEGATE_SOURCE.replace("return a ? b", "return !a ? b"),
        NEGATE_SOURCE.replace("(a || b) ? 1", "!(a || b) ? 1"),
    ]


def test_negate_condition_describes_the_keyword() -> None:
    assert [d for _, d in descriptions("js_negate_condition", NEGATE_SOURCE)] == [
        "if condition negated", "if condition negated", "while condition negated",
        "do-while condition negated", "ternary condition negated",
        "ternary condition negated"]


def test_negate_condition_typescript_cast() -> None:
    assert mutants("js_negate_condition", "function f(a: unknown) {\n  if (a as boolean) "
                   "return 1;\n}\n", "ts") == [
        "function f(a: unknown) {\n  if (!(a as boolean)) return 1;\n}\n"]


# --- js_invert_if_else -----------------------------------------------------------------

def test_invert_if_else_blocks() -> None:
    assert mutants("js_invert_if_else", """\
        function f(a) {
          if (a) {
            return 1;
          } else {
            a.reset();
            return 2;
          }
        }
        """) == [dedent("""\
        function f(a) {
          if (a) {
            a.reset();
            return 2;
          } else {
            return 1;
          }
        }
        """)]


def test_invert_if_else_single_statements() -> None:
    assert mutants("js_invert_if_else", body("if (a) x(); else y()")) == [
        body("if (a) y(); else x();")]
    assert mutants("js_invert_if_else", body("if (a) x()\n  else y()")) == [
        body("if (a) y()\n  else x()")]


def test_invert_if_else_leaves_else_if_and_equal_branches_alone() -> None:
    assert mutants("js_invert_if_else", body("if (a) x(); else if (b) y();")) == []
    assert mutants("js_invert_if_else", body("if (a) { x(); } else { x(); }")) == []


# --- js_off_by_one ---------------------------------------------------------------------

def test_off_by_one_contexts() -> None:
    source = """\
        function f(xs, s) {
          for (let i = 0; i < 10; i++) {}
          const last = xs[xs.length - 1];
          const head = s.slice(1, -2);
          if (s.indexOf("/") === -1) return xs[i + 0x1];
          return compute(3) + 4;
        }
        """
    assert descriptions("js_off_by_one", source) == [
        (2, "loop start `0` changed to `1`"), (2, "loop start `0` changed to `-1`"),
        (2, "comparison `10` changed to `11`"), (2, "comparison `10` changed to `9`"),
        (3, "`xs.length` offset `1` changed to `2`"),
        (3, "`xs.length` offset `1` changed to `0`"),
        (4, "`.slice()` argument `1` changed to `2`"),
        (4, "`.slice()` argument `1` changed to `0`"),
        (4, "`.slice()` argument `-2` changed to `-1`"),
        (4, "`.slice()` argument `-2` changed to `-3`"),
        (5, "comparison `-1` changed to `0`"), (5, "comparison `-1` changed to `-2`"),
        (5, "index offset `0x1` changed to `0x2`"), (5, "index offset `0x1` changed to `0x0`"),
    ]
    assert mutants("js_off_by_one", source)[5].count("xs.length - 0") == 1


def test_off_by_one_keeps_a_minus_apart() -> None:
    assert mutants("js_off_by_one", body("return a[b - 0];")) == [
        body("return a[b - 1];"), body("return a[b - -1];")]


def test_off_by_one_leaves_floats_bigints_and_other_numbers_alone() -> None:
    assert mutants("js_off_by_one", body("return a < 1.5 || b > 10n || a[1e3] || f(2);")) \
        == []


# --- js_constant_swap ------------------------------------------------------------------

def test_constant_swap() -> None:
    assert mutants("js_constant_swap", body("return a ? true : false;")) == [
        body("return a ? false : false;"), body("return a ? true : true;")]


def test_constant_swap_leaves_literal_types_alone() -> None:
    assert mutants("js_constant_swap", "function f(a: true): false {\n  return a as true;\n}\n",
                   "ts") == []


# --- js_change_default -----------------------------------------------------------------

def test_change_default_parameters_and_destructuring() -> None:
    source = """\
        function f(strict = true, n: number = 2, sep = ",", x = null, { end = false } = {}) {
          const { limit = -1, name = `id` } = options;
          return [strict, n, sep, x, end, limit, name];
        }
        """
    assert descriptions("js_change_default", source, "ts") == [
        (1, "default of `strict` changed from `true` to `false`"),
        (1, "default of `n` changed from `2` to `3`"),
        (1, 'default of `sep` changed from `","` to `""`'),
        (1, "default of `end` changed from `false` to `true`"),
        (2, "default of `limit` changed from `-1` to `0`"),
        (2, "default of `name` changed from ``id`` to ````"),
    ]
    got = mutants("js_change_default", source, "ts")
    assert got[0] == dedent(source).replace("strict = true", "strict = false")
    assert got[5] == dedent(source).replace("name = `id`", "name = ``")


def test_change_default_leaves_stubs_overloads_and_declarations_alone() -> None:
    assert mutants("js_change_default", """\
        declare function d(a?: boolean): void;
        function o(a: number): number;
        function stub(a = 1) {}
        function thrower(a = 1) { throw new Error("Not implemented"); }
        const cb = [1].map((a = 1) => a);
        """, "ts") == []


# --- js_remove_statement ---------------------------------------------------------------

def test_remove_statement_lines_and_inline() -> None:
    source = """\
        async function f(a) {
          a.count = 0; // reset
          await a.save();
          delete a.cache;
          if (a.dirty) a.flush();
          const b = a.copy();
          return b;
        }
        """
    assert descriptions("js_remove_statement", source) == [
        (2, "assignment `a.count = 0;` removed"), (3, "call `await a.save();` removed"),
        (4, "delete `delete a.cache;` removed"), (5, "call `a.flush();` removed")]
    got = mutants("js_remove_statement", source)
    assert got[0] == dedent(source).replace("  a.count = 0; // reset\n", "")
    assert got[3] == dedent(source).replace("if (a.dirty) a.flush();", "if (a.dirty) {}")


def test_remove_statement_leaves_super_logging_and_callbacks_with_logging_alone() -> None:
    assert mutants("js_remove_statement", """\
        class K extends B {
          constructor(a) {
            super(a);
            console.log(a);
            a.items.forEach((x) => { console.debug(x); });
          }
        }
        """) == []


def test_remove_statement_refuses_to_glue_lines_without_semicolons() -> None:
    source = """\
        function f(a, b) {
          const x = a
          b.run()
          ;[x].forEach(use)
          b.stop()
        }
        """
    # `b.run()` ends with the `;` of the next line: without it, `a[x].forEach(use)`
    assert descriptions("js_remove_statement", source) == [
        (4, "call `[x].forEach(use)` removed"), (5, "call `b.stop()` removed")]


# --- js_remove_return ------------------------------------------------------------------

def test_remove_return_only_early_returns() -> None:
    source = """\
        function f(a) {
          if (!a) return null;
          for (const x of a) {
            if (x) {
              return x;
            }
          }
          switch (a.kind) { case 1: return 1; }
          return a;
        }
        """
    got = mutants("js_remove_return", source)
    assert [d for _, d in descriptions("js_remove_return", source)] == [
        "early `return null;` removed", "early `return x;` removed",
        "early `return 1;` removed"]
    assert got[0] == dedent(source).replace("if (!a) return null;", "if (!a) {}")
    assert got[1] == dedent(source).replace("      return x;\n", "")


# --- js_return_value -------------------------------------------------------------------

def test_return_value() -> None:
    source = """\
        function f(a) {
          if (a) return;
          const g = (x) => x.trim();
          const h = (x) => { return undefined; };
          return a.map((y) => ({ y }));
        }
        function* gen() { return 1; }
        """
    assert descriptions("js_return_value", source) == [
        (3, "`=> x.trim()` returns undefined instead"),
        (5, "`return a.map((y) => ({ y }))` returns undefined instead"),
        (5, "`=> ({ y })` returns undefined instead")]
    assert mutants("js_return_value", source)[0] == dedent(source).replace(
        "(x) => x.trim()", "(x) => undefined")


def test_return_value_of_a_named_arrow_at_module_level() -> None:
    assert mutants("js_return_value", "export const id = (v: string) => v;\n", "ts") == [
        "export const id = (v: string) => undefined;\n"]


# --- js_remove_conditional -------------------------------------------------------------

def test_remove_conditional() -> None:
    source = """\
        function f(a) {
          if (a.x) {
            a.y = 1;
          }
          if (a.z) a.w = 2; else a.w = 3;
          return a;
        }
        """
    assert descriptions("js_remove_conditional", source) == [
        (2, "`if (a.x)` block removed")]
    assert mutants("js_remove_conditional", source) == [
        dedent(source).replace("  if (a.x) {\n    a.y = 1;\n  }\n", "")]


# --- js_remove_loop --------------------------------------------------------------------

def test_remove_loop_every_kind() -> None:
    source = """\
        function f(xs, o) {
          for (let i = 0; i < xs.length; i++) xs[i] = 0;
          for (const x of xs) use(x);
          for (const k in o) use(k);
          while (xs.length) xs.pop();
          do { xs.push(1) } while (xs.length < 3)
          return xs;
        }
        """
    assert [d for _, d in descriptions("js_remove_loop", source)] == [
        "`for (let i = 0; i < xs.length; i++)` loop removed",
        "`for (const x of xs)` loop removed", "`for (const k in o)` loop removed",
        "`while (xs.length)` loop removed", "`do ... while (xs.length < 3)` loop removed"]
    assert mutants("js_remove_loop", source)[1] == dedent(source).replace(
        "  for (const x of xs) use(x);\n", "")


# --- js_swap_statements ----------------------------------------------------------------

def test_swap_statements_when_order_matters() -> None:
    source = """\
        function f(a, out) {
          let total = 0;
          total += a.size;
          out.push(total);
          out.push(a);
          const b = a.copy();
          const c = b.size;
          a.n = 1;
          a.m = 2;
          i++;
          use(i);
        }
        """
    assert [d for _, d in descriptions("js_swap_statements", source)] == [
        "`total += a.size;` and `out.push(total);` swapped",
        "`out.push(total);` and `out.push(a);` swapped",
        "`i++;` and `use(i);` swapped"]
    assert mutants("js_swap_statements", source)[0] == dedent(source).replace(
        "  total += a.size;\n  out.push(total);\n", "  out.push(total);\n  total += a.size;\n")


def test_swap_statements_never_moves_a_use_above_its_declaration_or_super() -> None:
    assert mutants("js_swap_statements", """\
        class K extends B {
          constructor(a) {
            super(a);
            this.a = a;
            const x = a.x;
            use(x);
          }
        }
        """) == []


# --- js_remove_try ---------------------------------------------------------------------

TRY_SOURCE = """\
function load(path) {
  let parts = [];
  try {
    const text = read(path).trim();
    parts = text.split(",");
  } catch (err) {
    return null;
  } finally {
    close(path);
  }
  return parts;
}
"""


def test_remove_try_unwraps_body_and_finally() -> None:
    assert mutants("js_remove_try", TRY_SOURCE) == [dedent("""\
        function load(path) {
          let parts = [];
          const text = read(path).trim();
          parts = text.split(",");
          close(path);
          return parts;
        }
        """)]
    assert descriptions("js_remove_try", TRY_SOURCE) == [
        (3, "`try` unwrapped: its `catch` is gone")]


def test_remove_try_keeps_template_lines_and_refuses_clashes() -> None:
    source = "function f(a) {\n  try {\n    return `x\n  y`;\n  } catch { return 0; }\n}\n"
    assert mutants("js_remove_try", source) == ["function f(a) {\n  return `x\n  y`;\n}\n"]
    clash = TRY_SOURCE.replace("return parts;", "const text = parts.join();\n  return text;")
    assert mutants("js_remove_try", clash) == []
    logged = TRY_SOURCE.replace("return null;", "console.error(err);")
    assert mutants("js_remove_try", logged) == []
    assert mutants("js_remove_try", TRY_SOURCE.replace("} catch (err) {\n    return null;\n  ",
                                                       "  ")) == []


# --- js_swap_arguments -----------------------------------------------------------------

def test_swap_arguments() -> None:
    source = body("return [g(a, b.c), new E(a, 'm'), h(1, 2), Math.max(a, b), k(a, b, 1), "
                  "s.replace(/x/, 'y'), m(a, f())];")
    assert [d for _, d in descriptions("js_swap_arguments", source)] == [
        "arguments `a` and `b.c` of `g()` swapped", "arguments `a` and `'m'` of `E()` swapped"]
    assert mutants("js_swap_arguments", source)[0] == source.replace("g(a, b.c)", "g(b.c, a)")


# --- js_break_call_chain ---------------------------------------------------------------

def test_break_call_chain() -> None:
    source = body("return s.trim().toLowerCase().split(',');", "s")
    assert mutants("js_break_call_chain", source) == [
        body("return s.trim().toLowerCase();", "s"),
        body("return s.trim().split(',');", "s")]
    assert descriptions("js_break_call_chain", source)[0] == (
        2, "`.split()` dropped from `s.trim().toLowerCase().split(',')`")


def test_break_call_chain_leaves_calls_given_a_callback_alone() -> None:
    assert mutants("js_break_call_chain", """\
        class K extends B {
          m(db) {
            Object.keys(db).forEach((k) => use(k));
            return f().then(function done() {}) + super.m().x();
          }
        }
        """) == ["""\
class K extends B {
  m(db) {
    Object.keys(db).forEach((k) => use(k));
    return f().then(function done() {}) + super.m();
  }
}
"""]


# --- conformance: every js_ mutator ----------------------------------------------------

CORPUS = '''\
import { helper } from "./helper";

const LIMIT = 3;

export class Stack<T> {
  private items: T[] = [];
  size = 0;

  constructor(items: T[] = [], private strict = true) {
    this.items = [...items];
    this.size = this.items.length;
  }

  push(item: T): void {
    if (item === undefined || this.size > LIMIT * 2) {
      throw new RangeError("bad item");
    } else {
      this.items.push(item);
    }
    this.size += 1;
  }

  top(n: number = 1): T[] {
    console.debug("top %d", n);
    if (n > this.size && this.strict !== false) {
      return this.items.slice(0);
    }
    return n > 0 ? this.items.slice(-n) : [];
  }
}

export function window(xs: number[], k: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < xs.length - k + 1; i++) {
    out.push(xs.slice(i, i + k).reduce((a, b) => a + b, 0) / k);
  }
  while (out.length > LIMIT * 2) {
    out.pop();
  }
  return out;
}

export const words = (text: string, lower = true): string[] => {
  let parts: string[] = [];
  try {
    parts = helper(text, LIMIT).trim().split(" ");
  } catch (err) {
    return [];
  }
  return lower ? parts.map((w) => w.toLowerCase()) : parts;
};
'''


@pytest.mark.parametrize("lang", ["ts", "tsx"])
@pytest.mark.parametrize("kind", JS_KINDS)
def test_conformance(kind: str, lang: str) -> None:
    grammar = GRAMMARS[lang]
    data = CORPUS.encode()
    tree = grammar.parse(data)
    found = sites(kind, CORPUS, lang)
    assert found, f"{kind} found nothing in the corpus"
    n_lines = CORPUS.count("\n")
    for site in found:
        assert 0 <= site.start <= site.end <= len(data)
        assert 1 <= site.line <= n_lines and site.description
        mutated = site.apply(data)
        assert mutated != data and grammar.parses_cleanly(mutated), mutated.decode()
        assert grammar.real_change("src/stack.ts", CORPUS, mutated.decode(), site.line)
        node = site.node(tree, data)
        assert node is not None
        assert in_runtime_code(node, defaults=MUTATORS.get(kind).edits_defaults)
        assert enclosing_function(node) in {"Stack.constructor", "Stack.push", "Stack.top",
                                            "window", "words"}
