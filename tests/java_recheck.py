"""Re-check a Java task without repogym's runner or its image: a fresh clone of the
repository on the host, Maven (``mvn -q test -Dtest=...``: the host's when it is 3.9 or newer,
else Apache's own distribution of the version the Java image has, fetched once from Maven
Central and checked against its pinned SHA-512: Debian's Maven 3.8.7 fails the version
checks of current POMs such as commons-cli's), Surefire's XML reports read back; the FAIL_TO_PASS tests must not pass at the broken state (failing, or
not compiled) and must pass with the row's patch; the PASS_TO_PASS tests that do not pass on
the host are returned.

The broken state is made as the judge makes it (bug patch, test patch), the fixed one as
grading does (bug patch, the row's patch, test patch).

A repogym test id is ``<test file>::<Class>#<test>``: the class's package is read from the
test file's ``package`` line; Maven runs from the root, every module. Surefire
reports a ``testcase`` per test (``classname`` the class's binary name, ``name`` the test's
as Surefire prints it: ``param(String)[2]`` for a parameterized one); a ``failure`` or
``error`` child is a failure, ``skipped`` a skip, none a pass.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from repogym.toolchains.java.layer import MAVEN_CENTRAL, MAVEN_VERSION, SHA512

# plugins that check the build, not the tests: skipped, as they do not decide an outcome
SKIPS = ("-Drat.skip=true", "-Dcheckstyle.skip=true", "-Danimal.sniffer.skip=true",
         "-Djacoco.skip=true", "-Dspotbugs.skip=true", "-Dpmd.skip=true", "-Dcpd.skip=true",
         "-Djapicmp.skip=true", "-Dmaven.javadoc.skip=true", "-Denforcer.skip=true",
         "-Dspotless.check.skip=true", "-Dmoditect.skip=true", "-Drevapi.skip=true")
_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)


@dataclass(frozen=True)
class SurefireRun:
    """What the reports said: each test's outcome (``passed``, ``failed``, ``skipped``) by
    (class binary name, test name), and whether Maven ended cleanly."""

    exit_code: int
    outcomes: dict[tuple[str, str], str] = field(default_factory=dict)


@dataclass(frozen=True)
class JavaTest:
    """A repogym id taken apart: the class's binary name (``pkg.Outer$Inner``), the
    test's name as Surefire reports it."""

    classname: str
    name: str

    @property
    def method(self) -> str:
        """The Java method the test runs (``param(String)[2]`` -> ``param``)."""
        return re.split(r"[(\[]", self.name, maxsplit=1)[0]

    @property
    def filter(self) -> str:
        """Surefire's ``-Dtest`` pattern for it: the outer class, then the method."""
        return f"{self.classname.split('$', 1)[0]}#{self.method}"


def java_test(repo: Path, test_id: str) -> JavaTest:
    """The :class:`JavaTest` of a repogym id, the package read from the test file."""
    path, _, rest = test_id.partition("::")
    cls, _, name = rest.partition("#")
    text = (repo / path).read_text(encoding="utf-8", errors="replace")
    found = _PACKAGE.search(text)
    classname = f"{found.group(1)}.{cls}" if found else cls
    return JavaTest(classname=classname, name=name)


def read_reports(repo: Path) -> dict[tuple[str, str], str]:
    """Every Surefire ``TEST-*.xml`` under ``repo`` read: (classname, name) -> outcome."""
    out: dict[tuple[str, str], str] = {}
    for report in sorted(repo.glob("**/target/surefire-reports/TEST-*.xml")):
        out.update(parse_report(report.read_bytes()))
    return out


def parse_report(data: bytes) -> dict[tuple[str, str], str]:
    """One Surefire report's test cases: (classname, name) -> passed, failed or skipped."""
    out: dict[tuple[str, str], str] = {}
    for case in ET.fromstring(data).iter("testcase"):
        tags = {child.tag for child in case}
        outcome = ("failed" if tags & {"failure", "error"} else
                   "skipped" if "skipped" in tags else "passed")
        out[(case.get("classname", ""), case.get("name", ""))] = outcome
    return out


def maven(cache: Path = Path.home() / ".cache" / "repogym-recheck") -> str:
    """The ``mvn`` to run: the host's when it is 3.9 or newer, else Apache Maven
    :data:`MAVEN_VERSION` unpacked under ``cache`` (downloaded once, its SHA-512 checked)."""
    host = shutil.which("mvn")
    if host:
        out = subprocess.run([host, "-v"], capture_output=True, text=True).stdout
        found = re.search(r"Apache Maven (\d+)\.(\d+)", out)
        if found and (int(found.group(1)), int(found.group(2))) >= (3, 9):
            return host
    home = cache / f"apache-maven-{MAVEN_VERSION}"
    if not (home / "bin" / "mvn").exists():
        url = (f"{MAVEN_CENTRAL}/org/apache/maven/apache-maven/{MAVEN_VERSION}/"
               f"apache-maven-{MAVEN_VERSION}-bin.tar.gz")
        with urllib.request.urlopen(url, timeout=600) as response:
            data = response.read()
        assert hashlib.sha512(data).hexdigest() == SHA512[MAVEN_VERSION], url
        tmp = cache / f".unpack-{os.getpid()}"
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp, filter="tar")
        home.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp / f"apache-maven-{MAVEN_VERSION}", home)
        shutil.rmtree(tmp, ignore_errors=True)
    return str(home / "bin" / "mvn")


def mvn_test(repo: Path, tests: Iterable[JavaTest]) -> SurefireRun:
    """Run ``tests`` with :func:`maven` in ``repo`` (every module; a failing test does
    not stop the others) and read the reports."""
    by_class: dict[str, set[str]] = {}
    for test in tests:
        outer, method = test.filter.split("#")
        by_class.setdefault(outer, set()).add(method)
    selection = ",".join(f"{c}#{'+'.join(sorted(m))}" for c, m in sorted(by_class.items()))
    res = subprocess.run(
        [maven(), "-q", "-B", "test", f"-Dtest={selection}",
         "-Dsurefire.failIfNoSpecifiedTests=false", "-DfailIfNoTests=false",
         "-Dmaven.test.failure.ignore=true", *SKIPS],
        cwd=repo, capture_output=True, text=True, timeout=1800)
    return SurefireRun(exit_code=res.returncode, outcomes=read_reports(repo))


def _apply(repo: Path, patch: str) -> None:
    if patch:
        subprocess.run(["git", "apply", "-"], input=patch.encode(), cwd=repo, check=True)


def _state(source: Path, repo: Path, commit: str, *patches: str) -> None:
    if not repo.exists():
        subprocess.run(["git", "clone", "-q", str(source), str(repo)], check=True)
    subprocess.run(["git", "checkout", "-q", "-f", commit], cwd=repo, check=True)
    subprocess.run(["git", "clean", "-qfdx"], cwd=repo, check=True)
    for patch in patches:
        _apply(repo, patch)
    _without_old_error_prone(repo)


_OLD_ERROR_PRONE = re.compile(r"\s*<compilerId>\s*javac-with-errorprone\s*</compilerId>|"
                              r"\s*<forceJavacCompilerUse>[^<]*</forceJavacCompilerUse>|"
                              r"\s*<dependency>(?:(?!</dependency>).)*?<groupId>\s*("
                              r"com\.google\.errorprone|org\.codehaus\.plexus)\s*</groupId>"
                              r"(?:(?!</dependency>).)*?</dependency>", re.S)


def _without_old_error_prone(repo: Path) -> None:
    """The one change repogym's environment makes to a build that the host needs too: the
    old Error Prone compiler (``javac-with-errorprone``: square/javapoet) bundles a javac 9
    that cannot read JDK 17's classes, so the compiler plugin uses the JDK's own javac:
    its ``compilerId``, ``forceJavacCompilerUse`` and the Error Prone and plexus-compiler
    dependencies go (``toolchains/java/maven/Adapt.java`` does the same in the
    environment)."""
    for pom in repo.glob("**/pom.xml"):
        text = pom.read_text(encoding="utf-8")
        if "javac-with-errorprone" in text:
            pom.write_text(_OLD_ERROR_PRONE.sub("", text), encoding="utf-8")


def _outcome(run: SurefireRun, test: JavaTest) -> str | None:
    return run.outcomes.get((test.classname, test.name))


def recheck(source: Path, workdir: Path, row: Any) -> list[str]:
    """The row's FAIL_TO_PASS tests do not pass at the broken state and pass with its
    patch, as the host's Maven and Surefire say in a fresh clone of ``source``.

    Returns:
        The PASS_TO_PASS tests that did not pass with the patch on the host (the host is not
        the task's environment).

    Raises:
        AssertionError: the FAIL_TO_PASS tests do not behave (the message names the row
            and the outcomes).
    """
    repo = workdir / f"recheck-{row.instance_id}"
    _state(source, repo, row.base_commit, row.bug_patch, row.test_patch)
    f2p = {t: java_test(repo, t) for t in row.FAIL_TO_PASS}
    broken = mvn_test(repo, f2p.values())
    passed = [t for t, test in f2p.items() if _outcome(broken, test) == "passed"]
    assert not passed, (row.instance_id, "passes at the broken state", passed)
    _state(source, repo, row.base_commit, row.bug_patch, row.patch, row.test_patch)
    listed = {t: java_test(repo, t) for t in (*row.FAIL_TO_PASS, *row.PASS_TO_PASS)}
    fixed = mvn_test(repo, listed.values())
    failing = {t: _outcome(fixed, listed[t]) for t in row.FAIL_TO_PASS
               if _outcome(fixed, listed[t]) != "passed"}
    assert not failing, (row.instance_id, "fixed state", failing, fixed.exit_code)
    return [t for t in row.PASS_TO_PASS if _outcome(fixed, listed[t]) != "passed"]


__all__ = ["JavaTest", "SurefireRun", "mvn_test", "parse_report", "recheck", "java_test"]

