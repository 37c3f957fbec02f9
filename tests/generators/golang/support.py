"""Helpers shared by the Go mutator tests: run one mutator on a snippet, check mutants
with ``gofmt -e`` and, on whole packages, with ``go vet``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from textwrap import dedent

import pytest
from tree_sitter import Node

from repogym.generators.mutators import MUTATORS, Mutator, Site
from repogym.generators.mutators.golang.grammar import GO

GO_KINDS = [name for name in MUTATORS.names() if name.startswith("go_")]
GO_BIN = Path("/usr/local/go/bin")
VET_CHECKS = ["-atomic", "-bool", "-buildtags", "-directive", "-errorsas", "-ifaceassert",
              "-nilfunc", "-printf", "-stringintconv"]
"""The analyzers ``go test`` runs before the tests (a finding fails every test)."""


def parse(source: str) -> Node:
    """The root of ``source`` (dedented); it must parse cleanly."""
    tree = GO.parse(dedent(source).encode())
    assert not tree.root_node.has_error, source
    return tree.root_node


def sites(kind: str, source: str) -> list[Site]:
    """The sites the mutator finds in ``source`` (dedented, parsed cleanly)."""
    data = dedent(source).encode()
    tree = GO.parse(data)
    assert not tree.root_node.has_error, source
    mutator: Mutator = MUTATORS.get(kind)()
    return list(mutator.sites(tree, data))


def mutants(kind: str, source: str) -> list[str]:
    """Every mutated version of ``source`` (dedented) the mutator proposes, in site order;
    each must parse cleanly and count as a real change that builds (what the generator
    checks: ``GoGrammar.real_change``)."""
    source = dedent(source)
    out = [s.apply(source.encode()).decode() for s in sites(kind, source)]
    for mutated in out:
        assert GO.parses_cleanly(mutated.encode()), mutated
        assert GO.real_change("p/a.go", source, mutated, 1), mutated
    return out


def descriptions(kind: str, source: str) -> list[tuple[int, str]]:
    """``(line, description)`` of every site, in order."""
    return [(s.line, s.description) for s in sites(kind, source)]


def go_tool(name: str) -> str:
    """The path of ``go`` or ``gofmt``: on PATH, or in /usr/local/go/bin. The machines
    this project runs on have Go; a missing one is an error, not a skip."""
    found = shutil.which(name) or (str(GO_BIN / name) if (GO_BIN / name).exists() else None)
    if found is None:
        pytest.fail(f"{name} is not installed (looked on PATH and in {GO_BIN})")
    return found


def gofmt_errors(source: str) -> str:
    """What ``gofmt -e`` says is wrong with ``source`` (``""``: nothing)."""
    done = subprocess.run([go_tool("gofmt"), "-e"], input=source, text=True,
                          capture_output=True)
    return done.stderr if done.returncode else ""


def go_env() -> dict[str, str]:
    """The environment for ``go`` commands: the host's, with modules on, no toolchain
    download and Go's own bin on PATH."""
    env = dict(os.environ, GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
    env["PATH"] = f"{Path(go_tool('go')).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


CANARY = "package canary\n\nfunc f() {\n\tunused := 1\n}\n"
"""A package that cannot build: go vet must name it, or it checked nothing (a package
that fails to load, or lies in another module, makes ``go vet ./...`` quietly skip or
stop before type checking the others)."""


def vet_packages(module: Path, folder: str) -> dict[str, list[str]]:
    """``go vet`` (type checking and the checks ``go test`` runs) over every package under
    ``folder`` of the module at ``module``: the errors of each package that has any, by
    the name of its directory.

    Raises:
        AssertionError: go vet did not type check every package (a canary package that
            cannot build was not reported, or a package failed to load).
    """
    canary = module / folder / "zzcanary"
    canary.mkdir(parents=True)
    (canary / "canary.go").write_text(CANARY)
    done = subprocess.run([go_tool("go"), "vet", *VET_CHECKS, f"./{folder}/..."],
                          cwd=module, env=go_env(), capture_output=True, text=True,
                          timeout=600)
    errors: dict[str, list[str]] = {}
    current = None
    place = re.compile(rf"(?:^|\s){re.escape(folder)}/([^/\s]+)/[^/\s]+\.go:")
    for line in done.stderr.splitlines():
        header = re.match(r"# \S*?([^/\s]+)$", line)
        found = place.search(line)
        if header:
            current = header.group(1)
        elif found is not None:
            errors.setdefault(found.group(1), []).append(line)
        elif current is not None and line.strip():
            errors.setdefault(current, []).append(line)
    if "declared and not used" not in " ".join(errors.pop("zzcanary", [])):
        raise AssertionError(f"go vet did not check every package:\n{done.stderr[:3000]}")
    return errors
