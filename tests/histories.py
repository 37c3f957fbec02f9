"""A test repository with a realistic history, for mining tests.

:func:`build_realistic_history` writes ``shopcart`` (a pure-Python package: pricing,
cart, config) and commits a history like a small project's, one commit a day from
2024-01-01 (author and committer dates fixed, so the shas are reproducible). Along the
first-parent line, oldest first:

====  =========  ==========================================================================
 #    kind       commit
====  =========  ==========================================================================
 0    initial    package, tests, README, CHANGELOG
 1    fix        bulk discount off by one at the threshold (+ CHANGELOG entry)
 2    docs       README usage section
 3    refactor   cart: one dict lookup in ``Cart.add``
 4    fix        money rounds half-up, not half-to-even
 5    tests      more cart tests (they pass already)
 6    deps       ``iniconfig`` dependency + ``shopcart.config`` (no test); tagged ``v1.0``
 7    fix        ``Cart.add`` rejects zero and negative quantities
 8    merge      ``--no-ff`` merge of branch ``docstrings`` (one refactor commit, #7b)
 9    fix        ``Cart.lines`` sorted by name ascending, not descending
10    docs       docs/usage.rst and a CHANGELOG entry
11    refactor   pricing: a ``CENT`` constant
12    fix        ``apply_discount`` rejects percentages outside 0..100 (edits an old test)
====  =========  ==========================================================================

Every fix commit changes source *and* tests, and its new or changed test fails at the
fix's parent and passes after it; nothing else changes both.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

TAG = "v1.0"
BRANCH = "docstrings"

PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "shopcart"
version = "0.1.0"
requires-python = ">=3.9"

[project.optional-dependencies]
test = ["pytest"]

[tool.setuptools]
packages = ["shopcart"]
'''

PRICING = '''"""Prices, discounts and rounding."""

BULK_THRESHOLD = 10
BULK_RATE = 0.05


def round_money(amount):
    """Round an amount to cents."""
    return round(amount, 2)


def bulk_discount(quantity):
    """The discount rate for buying ``quantity`` of one item."""
    if quantity > BULK_THRESHOLD:
        return BULK_RATE
    return 0.0


def apply_discount(total, percent):
    """``total`` reduced by ``percent`` per cent."""
    return round_money(total * (1 - percent / 100))
'''

CART = '''"""A shopping cart."""

from dataclasses import dataclass

from shopcart.pricing import bulk_discount, round_money


@dataclass
class Line:
    name: str
    price: float
    quantity: int

    def subtotal(self):
        return self.price * self.quantity * (1 - bulk_discount(self.quantity))


class Cart:
    def __init__(self):
        self._lines = {}

    def add(self, name, price, quantity=1):
        if name in self._lines:
            self._lines[name].quantity += quantity
        else:
            self._lines[name] = Line(name, price, quantity)

    def lines(self):
        """The cart's lines, sorted by item name."""
        return sorted(self._lines.values(), key=lambda line: line.name, reverse=True)

    def total(self):
        return round_money(sum(line.subtotal() for line in self._lines.values()))
'''

TEST_PRICING = '''from shopcart.pricing import apply_discount, bulk_discount, round_money


def test_round_money():
    assert round_money(1.234) == 1.23


def test_bulk_discount():
    assert bulk_discount(1) == 0.0
    assert bulk_discount(20) == 0.05


def test_apply_discount():
    assert apply_discount(200, 10) == 180
'''

TEST_CART = '''from shopcart.cart import Cart


def test_total_single_item():
    cart = Cart()
    cart.add("pen", 1.5, 2)
    assert cart.total() == 3.0


def test_add_merges_quantities():
    cart = Cart()
    cart.add("pen", 1.5)
    cart.add("pen", 1.5, 3)
    assert [line.quantity for line in cart.lines()] == [4]
'''

CONFIG = '''"""Shop settings read from an ini file."""

import iniconfig

DEFAULTS = {"currency": "EUR", "bulk_threshold": "10"}


def load_settings(path):
    """The ``[shop]`` section of the ini file at ``path``, over the defaults."""
    ini = iniconfig.IniConfig(path)
    settings = dict(DEFAULTS)
    if "shop" in ini:
        settings.update(ini["shop"].items())
    return settings
'''

INITIAL = {
    "pyproject.toml": PYPROJECT,
    "README.md": "# shopcart\n\nA tiny shopping cart.\n",
    "CHANGELOG.md": "# Changelog\n\n## 0.1.0\n\n- First release.\n",
    "shopcart/__init__.py": '"""shopcart: carts, prices, discounts."""\n',
    "shopcart/pricing.py": PRICING,
    "shopcart/cart.py": CART,
    "tests/__init__.py": "",
    "tests/test_pricing.py": TEST_PRICING,
    "tests/test_cart.py": TEST_CART,
}


@dataclass
class History:
    """The shas of a :func:`build_realistic_history` repository, by kind (oldest first)."""

    root: Path
    initial_commit: str = ""
    fix_commits: list[str] = field(default_factory=list)
    refactor_commits: list[str] = field(default_factory=list)  # on the first-parent line
    branch_commits: list[str] = field(default_factory=list)  # only reachable via the merge
    doc_commits: list[str] = field(default_factory=list)
    test_only_commits: list[str] = field(default_factory=list)
    dep_change_commit: str = ""
    merge_commit: str = ""
    tag: str = TAG  # points at dep_change_commit
    head: str = ""
    dates: dict[str, str] = field(default_factory=dict)  # sha -> committer date (ISO)

    @property
    def first_parent_line(self) -> list[str]:
        """Every commit on the first-parent line, newest first (as ``git log`` lists them)."""
        out = subprocess.run(["git", "rev-list", "--first-parent", "HEAD"], cwd=self.root,
                             check=True, capture_output=True, text=True).stdout
        return out.split()


class _Builder:
    """Writes files and commits them, one day apart."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.day = 0

    def git(self, *args: str) -> str:
        date = f"2024-01-{self.day + 1:02d}T12:00:00+00:00"
        env = {**os.environ, "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
               "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com",
               "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date,
               "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        return subprocess.run(["git", *args], cwd=self.root, env=env, check=True,
                              capture_output=True, text=True).stdout.strip()

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def edit(self, rel: str, old: str, new: str) -> None:
        text = (self.root / rel).read_text()
        assert text.count(old) == 1, f"{rel}: {old!r} must occur once"
        self.write(rel, text.replace(old, new))

    def commit(self, message: str, history: History) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        sha = self.git("rev-parse", "HEAD")
        history.dates[sha] = f"2024-01-{self.day + 1:02d}T12:00:00+00:00"
        self.day += 1
        return sha


def build_realistic_history(root: Path) -> History:
    """Create the ``shopcart`` repository at ``root`` (a new directory) and its history."""
    root.mkdir(parents=True)
    b, h = _Builder(root), History(root=root)
    b.git("init", "-q", "-b", "main")
    for rel, text in INITIAL.items():
        b.write(rel, text)
    h.initial_commit = b.commit("Initial shopcart package", h)
    _fix_bulk_threshold(b, h)
    b.edit("README.md", "A tiny shopping cart.\n",
           "A tiny shopping cart.\n\n## Usage\n\n    cart = Cart()\n    cart.add('pen', 1.5)\n")
    h.doc_commits.append(b.commit("README: usage section", h))
    b.edit("shopcart/cart.py", '''        if name in self._lines:
            self._lines[name].quantity += quantity
        else:
            self._lines[name] = Line(name, price, quantity)''',
           '''        line = self._lines.setdefault(name, Line(name, price, 0))
        line.quantity += quantity''')
    h.refactor_commits.append(b.commit("cart: one dict lookup in Cart.add", h))
    _fix_rounding(b, h)
    _tests_only(b, h)
    _dependency_change(b, h)
    _fix_quantity_validation(b, h)
    _merge_branch(b, h)
    _fix_sort_order(b, h)
    _later_docs_and_refactor(b, h)
    _fix_percent_validation(b, h)
    h.head = b.git("rev-parse", "HEAD")
    return h


def _fix_bulk_threshold(b: _Builder, h: History) -> None:
    b.edit("shopcart/pricing.py", "if quantity > BULK_THRESHOLD:", "if quantity >= BULK_THRESHOLD:")
    b.edit("tests/test_pricing.py", "    assert bulk_discount(20) == 0.05\n",
           "    assert bulk_discount(20) == 0.05\n\n\n"
           "def test_bulk_discount_starts_at_threshold():\n"
           "    assert bulk_discount(9) == 0.0\n    assert bulk_discount(10) == 0.05\n")
    b.edit("CHANGELOG.md", "# Changelog\n", "# Changelog\n\n## Unreleased\n\n"
           "- Orders of exactly 10 items get the bulk discount.\n")
    h.fix_commits.append(b.commit(
        "Fix off-by-one in the bulk discount threshold\n\n"
        "Buying exactly BULK_THRESHOLD items did not give the bulk discount.", h))


def _fix_rounding(b: _Builder, h: History) -> None:
    b.edit("shopcart/pricing.py", '"""Prices, discounts and rounding."""\n',
           '"""Prices, discounts and rounding."""\n\nfrom decimal import ROUND_HALF_UP, Decimal\n')
    b.edit("shopcart/pricing.py", "    return round(amount, 2)\n",
           '    cents = Decimal(str(amount)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)\n'
           "    return float(cents)\n")
    b.edit("tests/test_pricing.py", "    assert round_money(1.234) == 1.23\n",
           "    assert round_money(1.234) == 1.23\n\n\n"
           "def test_round_money_half_up():\n"
           "    assert round_money(0.125) == 0.13\n    assert round_money(2.675) == 2.68\n")
    h.fix_commits.append(b.commit(
        "Round money half-up\n\nround() rounds half to even and suffers from binary floats: "
        "0.125 became 0.12.", h))


def _tests_only(b: _Builder, h: History) -> None:
    b.edit("tests/test_cart.py", "    assert cart.total() == 3.0\n",
           "    assert cart.total() == 3.0\n\n\n"
           "def test_total_two_items():\n    cart = Cart()\n    cart.add(\"pen\", 1.5, 2)\n"
           "    cart.add(\"pad\", 2.25)\n    assert cart.total() == 5.25\n")
    h.test_only_commits.append(b.commit("Test totals over several lines", h))


def _dependency_change(b: _Builder, h: History) -> None:
    b.edit("pyproject.toml", 'requires-python = ">=3.9"\n',
           'requires-python = ">=3.9"\ndependencies = ["iniconfig>=1.1"]\n')
    b.write("shopcart/config.py", CONFIG)
    h.dep_change_commit = b.commit("Read shop settings from an ini file (adds iniconfig)", h)
    b.git("tag", TAG)


def _fix_quantity_validation(b: _Builder, h: History) -> None:
    b.edit("shopcart/cart.py", "    def add(self, name, price, quantity=1):\n",
           "    def add(self, name, price, quantity=1):\n        if quantity <= 0:\n"
           '            raise ValueError(f"quantity must be positive, got {quantity}")\n')
    b.edit("tests/test_cart.py", "from shopcart.cart import Cart\n",
           "import pytest\n\nfrom shopcart.cart import Cart\n")
    b.write("tests/test_cart.py", (b.root / "tests/test_cart.py").read_text()
            + "\n\n@pytest.mark.parametrize(\"quantity\", [0, -1])\n"
              "def test_add_rejects_non_positive_quantity(quantity):\n"
              "    with pytest.raises(ValueError):\n        Cart().add(\"pen\", 1.5, quantity)\n")
    h.fix_commits.append(b.commit("Cart.add: reject zero and negative quantities (fixes #12)", h))


def _merge_branch(b: _Builder, h: History) -> None:
    b.git("checkout", "-q", "-b", BRANCH)
    b.edit("shopcart/cart.py", "    def subtotal(self):\n",
           '    def subtotal(self):\n        """Price times quantity, less any bulk discount."""\n')
    h.branch_commits.append(b.commit("Docstring for Line.subtotal", h))
    b.git("checkout", "-q", "main")
    b.git("merge", "-q", "--no-ff", "-m", f"Merge branch '{BRANCH}'", BRANCH)
    h.merge_commit = b.git("rev-parse", "HEAD")
    h.dates[h.merge_commit] = f"2024-01-{b.day + 1:02d}T12:00:00+00:00"
    b.day += 1


def _fix_sort_order(b: _Builder, h: History) -> None:
    b.edit("shopcart/cart.py", "key=lambda line: line.name, reverse=True)",
           "key=lambda line: line.name)")
    b.write("tests/test_cart.py", (b.root / "tests/test_cart.py").read_text()
            + "\n\ndef test_lines_sorted_by_name():\n    cart = Cart()\n"
              "    for name in (\"pen\", \"ink\", \"pad\"):\n        cart.add(name, 1.0)\n"
              "    assert [line.name for line in cart.lines()] == [\"ink\", \"pad\", \"pen\"]\n")
    h.fix_commits.append(b.commit("Sort cart lines by name ascending", h))


def _later_docs_and_refactor(b: _Builder, h: History) -> None:
    b.write("docs/usage.rst", "Usage\n=====\n\nCreate a ``Cart`` and add items to it.\n")
    b.edit("CHANGELOG.md", "## Unreleased\n\n", "## Unreleased\n\n- Usage documentation.\n")
    h.doc_commits.append(b.commit("Docs: usage page", h))
    b.edit("shopcart/pricing.py", "BULK_RATE = 0.05\n", 'BULK_RATE = 0.05\nCENT = Decimal("0.01")\n')
    b.edit("shopcart/pricing.py", '.quantize(Decimal("0.01"), ', ".quantize(CENT, ")
    h.refactor_commits.append(b.commit("pricing: name the cent", h))


def _fix_percent_validation(b: _Builder, h: History) -> None:
    b.edit("shopcart/pricing.py", '    """``total`` reduced by ``percent`` per cent."""\n',
           '    """``total`` reduced by ``percent`` per cent (0 to 100)."""\n'
           "    if not 0 <= percent <= 100:\n"
           '        raise ValueError(f"percent must be within 0..100, got {percent}")\n')
    b.edit("tests/test_pricing.py", "from shopcart.pricing import",
           "import pytest\n\nfrom shopcart.pricing import")
    b.edit("tests/test_pricing.py", "    assert apply_discount(200, 10) == 180\n",
           "    assert apply_discount(200, 10) == 180\n    assert apply_discount(200, 100) == 0\n"
           "    with pytest.raises(ValueError):\n        apply_discount(200, 150)\n"
           "    with pytest.raises(ValueError):\n        apply_discount(200, -5)\n")
    h.fix_commits.append(b.commit("apply_discount: reject percentages outside 0..100", h))


MISSING_DIST = "repogym-no-such-dist"  # no index serves it: an install that needs it fails


def build_history_that_did_not_install(root: Path) -> History:
    """``shopcart`` installed from a ``requirements.txt`` (no project file: the tests import
    the working copy) whose first commit needs a distribution no index serves
    (:data:`MISSING_DIST`); commit 1 is the bulk-threshold fix, so its parent's environment
    does not install; commit 2 drops that requirement, so HEAD installs."""
    root.mkdir(parents=True)
    b, h = _Builder(root), History(root=root)
    b.git("init", "-q", "-b", "main")
    for rel, text in INITIAL.items():
        if rel != "pyproject.toml":
            b.write(rel, text)
    b.write("requirements.txt", f"{MISSING_DIST}>=1\n")
    h.initial_commit = b.commit("Initial shopcart package", h)
    _fix_bulk_threshold(b, h)
    b.write("requirements.txt", "# nothing beyond the standard library\n")
    h.dep_change_commit = b.commit(f"Drop the {MISSING_DIST} requirement", h)
    h.head = b.git("rev-parse", "HEAD")
    return h


GONE_API = "this_api_is_gone"  # no pytest has it: a conftest importing it stops every run


def build_history_whose_old_suite_does_not_run(root: Path) -> History:
    """``shopcart`` whose first commit's ``tests/conftest.py`` imports an API today's pytest
    does not have (:data:`GONE_API`; iniconfig's old tests call ``py.test.raises``), so no
    test runs at that commit in today's environment; commit 1 is the bulk-threshold fix (its
    parent is that commit); commit 2 drops the import, so HEAD's suite runs."""
    root.mkdir(parents=True)
    b, h = _Builder(root), History(root=root)
    b.git("init", "-q", "-b", "main")
    for rel, text in INITIAL.items():
        b.write(rel, text)
    b.write("tests/conftest.py", f"from pytest import {GONE_API}  # noqa: F401\n")
    h.initial_commit = b.commit("Initial shopcart package", h)
    _fix_bulk_threshold(b, h)
    b.write("tests/conftest.py", "")
    h.test_only_commits.append(b.commit("tests: drop an import pytest no longer has", h))
    h.head = b.git("rev-parse", "HEAD")
    return h
