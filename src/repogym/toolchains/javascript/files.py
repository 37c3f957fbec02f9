"""Which files of a JavaScript/TypeScript repository are tests, and which a graded patch may
not change.

Tests: ``*.test.*``, ``*.spec.*``, ``test.*`` files, and anything under a ``test``,
``tests``, ``__tests__``, ``spec``, ``__mocks__`` or snapshot folder (fixtures included).

Protected (a graded patch's changes there are thrown away): the tests; every file a
runner or the module system reads before or around the tests -- runner configuration
(``jest.config.*``, ``vitest.config.*``, ``vite.config.*``, ``.mocharc*``, ``ava.config.*``,
``.taprc``, ...), transpiler configuration (``babel.config.*``, ``.babelrc``,
``tsconfig*.json``, ``.swcrc``), every ``package.json`` (test fields, ``type``, ``imports``
and ``exports`` decide what a test loads), npm's own settings (``.npmrc``), setup files
(``setupTests.*``, ``*.setup.*``), lock files, and anything under ``node_modules``.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

SOURCE_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec", "specs", "__mocks__",
                       "__snapshots__", "tap-snapshots", "__fixtures__", "e2e"})
_TEST_NAME = re.compile(r"(^|[.\-_])(test|spec)s?(-d)?\.[cm]?[jt]sx?(\.snap)?$|^test\.[cm]?[jt]sx?$"
                        r"|\.snap$")
_CONFIG_PREFIXES = ("jest.config.", "vitest.config.", "vitest.workspace.", "vite.config.",
                    "ava.config.", "babel.config.", ".mocharc", ".taprc", ".babelrc",
                    ".swcrc", ".c8rc", ".nycrc", "nyc.config.", "karma.conf.", "tsconfig",
                    "jsconfig", "playwright.config.", "uvu.config.")
_CONFIG_NAMES = frozenset({"package.json", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs",
                           "pnpm-workspace.yaml", "package-lock.json", "npm-shrinkwrap.json",
                           "pnpm-lock.yaml", "yarn.lock", ".nvmrc", ".node-version",
                           "bunfig.toml", "deno.json", "turbo.json", "lerna.json"})
_SETUP_NAME = re.compile(r"(^setupTests\.|\.setup\.[cm]?[jt]sx?$|^test-setup\.|^jest-setup\.|"
                         r"^vitest-setup\.|^global-?setup\.|^global-?teardown\.)", re.I)
NOT_RUNTIME_NAMES = frozenset({"Gruntfile.js", "gulpfile.js", "rollup.config.js",
                               "webpack.config.js", "eslint.config.js", ".eslintrc.js",
                               "prettier.config.js", ".prettierrc.js", "commitlint.config.js",
                               "lint-staged.config.js", "tsdown.config.ts", "tsup.config.ts",
                               "build.js", "benchmark.js"})


def is_test_file(path: str) -> bool:
    """Test code: a test or spec file, or anything under a test folder."""
    p = PurePosixPath(path)
    return bool(_TEST_NAME.search(p.name)) or bool(TEST_DIRS.intersection(p.parts[:-1]))


def is_runner_file(path: str) -> bool:
    """A file that decides how the tests run: configuration, setup files, package
    metadata, lock files, installed dependencies."""
    p = PurePosixPath(path)
    name = p.name
    return (name in _CONFIG_NAMES or name.startswith(_CONFIG_PREFIXES)
            or bool(_SETUP_NAME.search(name)) or "node_modules" in p.parts
            or name.endswith(".d.ts") and "test" in name)


def is_declaration(path: str) -> bool:
    """A TypeScript declaration file: types only, no runtime code."""
    return bool(re.search(r"\.d\.[cm]?ts$", path))


__all__ = ["NOT_RUNTIME_NAMES", "SOURCE_SUFFIXES", "is_declaration", "is_runner_file",
           "is_test_file"]
