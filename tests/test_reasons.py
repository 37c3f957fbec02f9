"""Reason codes come from one enum (:class:`repogym.schemas.reasons.Reason`), never a literal."""

from __future__ import annotations

import ast
from pathlib import Path

from repogym.schemas.reasons import Reason
from repogym.schemas.records import Status, Verdict

SRC = Path(__file__).resolve().parents[1] / "src" / "repogym"


def test_codes_round_trip_and_unknown_codes_read_as_none() -> None:
    assert Reason.no_op.code() == "no_op"
    assert Reason.infra.code("timeout") == "infra:timeout"
    assert Reason.of("probe:config_plugin_pyproject_toml") is Reason.probe
    assert Reason.of("env_mismatch:no_tests") is Reason.env_mismatch
    assert Reason.of("") is None and Reason.of("retired_long_ago:x") is None
    verdict = Verdict(instance_id="x", status=Status.reject, reason=Reason.oracle.code("gold"))
    assert verdict.reason == "oracle:gold" and type(verdict.reason) is str
    assert Reason.of(verdict.reason) is Reason.oracle


def literal_reasons(path: Path) -> list[str]:
    """``reason="..."``, ``{"reason": "..."}`` and ``_Reject(status, "...")`` in a file."""
    out = []

    def literal(node: ast.AST | None) -> bool:
        return (isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(node.value)
                or isinstance(node, ast.JoinedStr))

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            out += [f"{path.name}:{node.lineno}" for kw in node.keywords
                    if kw.arg == "reason" and literal(kw.value)]
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            where = {"_Reject": 1, "RunInfraError": 0}.get(name)  # the reason's position
            if where is not None and len(node.args) > where and literal(node.args[where]):
                out.append(f"{path.name}:{node.lineno}")
        elif isinstance(node, ast.Dict):
            out += [f"{path.name}:{node.lineno}" for k, v in zip(node.keys, node.values)
                    if isinstance(k, ast.Constant) and k.value == "reason" and literal(v)]
    return sorted(out, key=lambda hit: int(hit.rsplit(":", 1)[1]))


def test_no_verdict_reason_is_written_as_a_literal() -> None:
    found = [hit for p in sorted(SRC.rglob("*.py")) if "plugins" not in p.parts
             for hit in literal_reasons(p)]
    assert found == [], "write Reason.<name>.code(...) instead: " + ", ".join(found)


def test_the_check_sees_a_literal(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('v.model_copy(update={"reason": "no_op"})\nVerdict(reason=f"x:{y}")\n'
                     'raise _Reject(Status.reject, "uncovered")\nVerdict(reason="")\n')
    assert literal_reasons(probe) == ["probe.py:1", "probe.py:2", "probe.py:3"]
