from repogym.judges.unsolvable import introduced_names, unstated_names
from repogym.patches import unified_diff

OLD = "def total(items):\n    return sum(items)\n"
NEW = ("def total(items):\n    return sum(items)\n\n\n"
       "def average(items):\n    return total(items) / len(items)\n\nLIMIT = 10\n")
GOLD = unified_diff("pkg/calc.py", OLD, NEW)
TESTS = unified_diff("tests/test_calc.py", "", "from pkg.calc import average\n\n\n"
                     "def test_average():\n    assert average([1, 3]) == 2\n")


def test_introduced_names_are_new_definitions_only():
    assert introduced_names(GOLD) == {"average", "LIMIT"}


def test_name_used_by_tests_but_not_in_statement_is_unstated():
    assert unstated_names(GOLD, TESTS, "The total is wrong for empty lists.") == ["average"]


def test_name_the_statement_mentions_is_fine():
    assert unstated_names(GOLD, TESTS, "Please add `average(items)` to pkg.calc.") == []


def test_names_the_tests_do_not_use_are_fine():
    assert unstated_names(GOLD, "", "anything") == []
