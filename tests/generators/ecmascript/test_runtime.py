"""The ecmascript runtime-code rules: what no mutator may touch, unreachable code,
parameter defaults, and the names of enclosing functions."""

from __future__ import annotations

from textwrap import dedent

import pytest
from tree_sitter import Node

from repogym.generators.mutators.ecmascript.runtime import (
    in_default_value,
    in_function_body,
    in_runtime_code,
    is_declaration_file,
    runtime_nodes,
)
from repogym.generators.mutators.ecmascript.scopes import enclosing_function
from tests.generators.ecmascript.support import GRAMMARS, JS_KINDS, parse, sites

# --- what no mutator may touch ---------------------------------------------------------

OFF_LIMITS_TS = '''\
/** JSDoc: a < b + 1 && true, x[0]. */
"use strict";
import { a } from "./a";
export { a as b };
declare const VERSION: string;
declare function ext(a: number, b?: boolean): number;
declare module "m" { export function k(a?: boolean): void }
export type Pair = [number, boolean];
export type Pick = (a: number, b: number) => boolean;
export interface Opts { retries: number; flag: true; pick(a: number, b: number): boolean }
enum Color { Red = 1, Blue = Red + 1 }
const LIMIT = 3 > 2 ? 4 - 1 : 0;
let counter = 0;
if (LIMIT > 2 && LIMIT < 10) { counter = counter + 1; } else { counter--; }
for (let i = 0; i < 3; i++) { counter++; }
while (counter > 100) counter -= 1;
[1, 2].forEach((n) => { counter += n > 1 ? 1 : 0; });
(function () { counter = counter * 2; })();
export function overload(a: number, flag?: boolean): number;
export function overload(a: string, flag?: boolean): string;
export function overload(a: any, flag?: boolean): any {
  console.log("x", a < 1 && a + 1, a[0] === true);
  console.error(a > 1 ? "y" : "z");
  logger.info("x %d", a - 1);
  this.log.warn(a || false);
  debug("d %o", a * 2);
  await this.logger.flush(a ?? 1);
  "another bare string: a < b";
  // comment: return a < 1 && b + 1
  /* block comment: x[0] + 1 */
  const t = a as unknown as Array<1 | 2>;
  const u = <Record<string, true>>a;
  const v = {} satisfies Partial<Opts>;
  type Local = { x: 1 };
  interface LocalOpts { y: true }
  throw new Error("not implemented: " + (a < 1));
  return a < 1 && a + 1 ? true : a[0];
}
export abstract class Base<T extends object = {}> implements Opts {
  static defaults = { retries: 3 > 2 ? 1 : 0, flag: true as const };
  retries = LIMIT + 1;
  flag: true = true;
  private items: T[] = [];
  handler = [1].map((x) => x + 1);
  static { counter = counter - 1; }
  @decorate(1 + 2, true) decorated: number = 0;
  abstract run(a: number, b: boolean): void;
  pick(a: number, b: number): boolean;
  pick(a: any, b: any): any {
    throw new NotImplementedError(a + b);
  }
  stub(flag = true, n = 1) {}
  later(xs: number[]) {
    return;
    xs.length = xs.length - 1;
    if (xs[0] === 1) xs.reverse();
  }
}
'''

OFF_LIMITS_JS = '''\
#!/usr/bin/env node
/*!
 * module banner: a < b + 1
 */
'use strict'

var db = require('db')
var limit = db.size > 2 ? db.size - 1 : 0
exports.charsets = { lookup: db.lookup || null, strict: true }
module.exports.types = Object.create(null)
populate(exports.types, limit + 1)

Object.keys(db).forEach(function (type) {
  if (db[type] && !db[type].extensions) return
  limit += 1
})

;(function () {
  limit = limit * 2
})()

class Registry {
  static instance = new Registry(1 + 1)
  size = limit > 1 ? 1 : 0
  #hidden = true
  handlers = [function () { return limit - 1 }]

  warn (message) {
    console.warn('registry: %s', message, limit > 1)
    process.emitWarning(message + '!')
    deprecate('warn() is deprecated' + (limit < 2))
  }
}

describe('registry', () => {
  it('works', () => {
    expect(limit > 0).toBe(true)
  })
})
'''

DECLARATIONS_DTS = '''\
declare const VERSION: string;
export declare function parse(str: string, options?: { strict: boolean }): string[];
export declare function parse(str: string[]): string[];
export declare class Parser {
  constructor(strict?: boolean);
  private state;
  parse(input: string, start?: number): string;
  get size(): number;
}
export interface Options { strict: true; limit: 1 | 2 }
export type Token = { type: "text"; value: string } | { type: "end" };
export default parse;
declare module "other" {
  export function helper(a: number, b?: boolean): void;
}
'''


@pytest.mark.parametrize(("lang", "fixture"), [
    ("ts", OFF_LIMITS_TS), ("tsx", OFF_LIMITS_TS.replace("<Record<string, true>>a", "a")),
    ("js", OFF_LIMITS_JS), ("ts", DECLARATIONS_DTS)], ids=["ts", "tsx", "js", "d.ts"])
@pytest.mark.parametrize("kind", JS_KINDS)
def test_leaves_types_logging_stubs_module_code_and_fields_alone(kind: str, lang: str,
                                                                 fixture: str) -> None:
    assert [(s.line, s.description) for s in sites(kind, fixture, lang)] == []


def test_module_level_code_inside_a_named_function_is_runtime_code() -> None:
    """The same module-level code wrapped in a function: its statements and callbacks
    become runtime code; class fields and logging stay off limits."""
    wrapped = "function f() {\n" + OFF_LIMITS_JS.split("'use strict'\n")[1] + "}\n"
    assert [(s.line, s.description) for s in sites("js_comparison_flip", wrapped)] == [
        (4, "`>` replaced by `<=`"), (33, "`>` replaced by `<=`")]
    assert {s.line for s in sites("js_arithmetic_swap", wrapped)} == {4, 7, 11, 15}


def test_a_declaration_file_has_no_runtime_code() -> None:
    assert list(runtime_nodes(parse(DECLARATIONS_DTS, "ts"))) == []
    assert is_declaration_file("types/index.d.ts") and is_declaration_file("a.d.mts")
    assert not is_declaration_file("src/index.ts") and not is_declaration_file("d.ts.js")


# --- unreachable code -----------------------------------------------------------------

UNREACHABLE = '''\
function f(xs) {
  for (const x of xs) {
    if (x > 1) {
      continue;
      xs.push(x + 1);
    }
    switch (x) {
      case 1: xs.pop(); break; xs.shift();
      default: throw new TypeError("bad"); xs.sort();
    }
  }
  return helper(xs);
  xs.length = 0;
  function helper(ys) {
    return ys.length > 1;
  }
}
'''


def _statement_lines(source: str) -> set[int]:
    kinds = {"expression_statement", "return_statement", "break_statement", "throw_statement",
             "continue_statement"}
    return {n.start_point[0] + 1 for n in runtime_nodes(parse(source)) if n.type in kinds}


def test_statements_after_return_throw_continue_break_are_not_runtime_code() -> None:
    assert _statement_lines(UNREACHABLE) == {4, 8, 9, 12, 15}


def test_hoisted_function_declarations_after_a_return_stay_runtime_code() -> None:
    assert [(s.line, s.description) for s in sites("js_comparison_flip", UNREACHABLE)] == [
        (3, "`>` replaced by `<=`"), (15, "`>` replaced by `<=`")]


@pytest.mark.parametrize("kind", JS_KINDS)
def test_unreachable_code_is_left_alone(kind: str) -> None:
    assert {s.line for s in sites(kind, UNREACHABLE)} <= {2, 3, 4, 7, 8, 9, 12, 15}


# --- the walk and the upward check agree ------------------------------------------------

AGREEMENT = '''\
const top = (a: number = 1) => a + 1;
export class K<T> {
  field = (x: T) => x;
  static made = [1].map((n) => n * 2);
  constructor(private readonly n: number = 2) { this.n = n + 1; }
  get size(): number { return [this.n].filter((m) => m > 0).length; }
  run(xs: number[]) {
    const inner = class { go() { return xs.length - 1; } z = 1 + 1; };
    return xs.map(function (x) { return x as number + 1; });
  }
}
'''


@pytest.mark.parametrize("lang", ["ts", "tsx"])
def test_runtime_nodes_and_in_runtime_code_agree(lang: str) -> None:
    root = parse(AGREEMENT, lang)
    walked = {(n.start_byte, n.end_byte, n.type) for n in runtime_nodes(root) if n.is_named}
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.is_named:
            key = (node.start_byte, node.end_byte, node.type)
            assert in_function_body(node) == (key in walked), (node.type, node.text)


# --- parameter defaults ----------------------------------------------------------------

DEFAULTS = '''\
function f(a = 1, { b = true } = {}, [c = "x"] = []) { return a; }
function g(a: number = 1): number;
function stub(a = 1) {}
const h = function (a = 2) { return a; };
[0].map(function (a = 3) { return a; });
function outer() { return (a = 4) => a; }
class K { m(a = 5) { return a; } static n = (a = 6) => a; o = [1].map((a = 7) => a); }
'''


def _default_values(source: str, lang: str) -> list[str]:
    root = parse(source, lang)
    values = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.children))
        if node.type in ("number", "true", "string") and in_default_value(node):
            values.append((node.text or b"").decode())
    return values


def test_defaults_count_in_live_named_functions_and_callbacks_in_runtime_code() -> None:
    source = DEFAULTS.replace("function g(a: number = 1): number;\n", "")
    assert _default_values(source, "js") == ["1", "true", '"x"', "2", "4", "5", "6"]
    params = parse(source).named_children[0].child_by_field_name("parameters")
    assert params is not None
    value = params.named_children[0].child_by_field_name("right")
    assert value is not None and not in_runtime_code(value)
    assert in_runtime_code(value, defaults=True)


def test_defaults_of_overload_signatures_do_not_count() -> None:
    source = "function g(a: number = 1): number;\nfunction g(a = 2) { return a; }\n"
    assert _default_values(source, "ts") == ["2"]


# --- the names of enclosing functions --------------------------------------------------

NAMES = '''\
function outerFn() {
  function innerFn() { return 1 + 1; }
  return [1].map((x) => x + 2);
}
const parse = (s) => s + 3;
exports.format = function () { return 4 + 4; };
module.exports = function name() { return 5 + 5; };
Klass.prototype.method = function () { return 6 + 6; };
class Klass {
  constructor() { this.a = 7 + 7; }
  get size() { return 8 + 8; }
  handle = () => 9 + 9;
  static create() { return 10 + 10; }
}
const utils = { lookup: function () { return 11 + 11; }, other() { return 12 + 12; } };
export default function () { return 13 + 13; }
const Named = class { go() { return 14 + 14; } };
'''


def test_enclosing_function_names() -> None:
    root = parse(NAMES)
    names = {}
    for node in runtime_nodes(root):
        if node.type == "binary_expression":
            names[(node.text or b"").decode()] = enclosing_function(node)
    assert names == {
        "1 + 1": "outerFn.innerFn", "x + 2": "outerFn", "s + 3": "parse", "4 + 4": "format",
        "5 + 5": "name", "6 + 6": "Klass.method", "7 + 7": "Klass.constructor",
        "8 + 8": "Klass.size", "9 + 9": "Klass.handle", "10 + 10": "Klass.create",
        "11 + 11": "utils.lookup", "12 + 12": "utils.other", "13 + 13": "default",
        "14 + 14": "Named.go"}


def test_no_name_outside_named_functions() -> None:
    root = parse(dedent('''\
        const x = 1 + 1;
        [1].forEach(function () { return 2 + 2; });
        (() => 3 + 3)();
        '''))
    sums = [n for n in _walk(root) if n.type == "binary_expression"]
    assert [enclosing_function(n) for n in sums] == [None, None, None]
    assert not any(in_runtime_code(n) for n in sums)


def _walk(root: Node) -> list[Node]:
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(node.children))
    return out


def test_grammars_share_the_rules() -> None:
    assert {g.family for g in GRAMMARS.values()} == {"ecmascript"}
