"""repogym's Maven extension: Java sources, compiled into each environment at install.

``Participant`` (a lifecycle participant), ``Spy`` (an event spy), ``Adapt`` and ``Run``:
loaded into Maven with ``-Dmaven.ext.class.path``, for the install (``Adapt`` only) and for
every test run (see :mod:`repogym.toolchains.java`). They are compiled in the environment
by an install step (:func:`build_step`), against the Maven that runs them, so the ``local``
provider builds them as the ``docker`` one does; the jar lands in the environment's venv,
which is read-only to the tests.
"""

from __future__ import annotations

from importlib import resources

# where the extension goes (EXT_DIR, EXT_JAR): the run's own constants (its Maven command
# line loads the jar), in the standard-library module an exported task's grader runs too
from repogym.toolchains.plugins.repogym_maven import EXT_DIR, EXT_JAR

SOURCES = ("Run.java", "Adapt.java", "Participant.java", "Spy.java", "Tap.java")
COMPONENTS = ("repogym.maven.Participant", "repogym.maven.Spy")  # the Sisu index


def source(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text()


def build_step() -> str:
    """The install step that writes the sources, compiles them against the Maven on the
    ``PATH`` (Java 8 class files) and packs ``EXT_JAR``."""
    src = f"{EXT_DIR}/src/repogym/maven"
    lines = [f'rm -rf "{EXT_DIR}" && mkdir -p "{src}" "{EXT_DIR}/classes/META-INF/sisu"']
    for name in SOURCES:
        lines += [f"cat > \"{src}/{name}\" <<'REPOGYM_JAVA'", source(name).rstrip("\n"),
                  "REPOGYM_JAVA"]
    index = "\\n".join(COMPONENTS)
    lines += [
        f"printf '{index}\\n' > \"{EXT_DIR}/classes/META-INF/sisu/javax.inject.Named\"",
        'lib="$(dirname "$(readlink -f "$(command -v mvn)")")/../lib"',
        f'javac -nowarn -Xlint:-options --release 8 -cp "$lib/*" -d "{EXT_DIR}/classes" '
        f'"{src}"/*.java',
        f'jar cf "{EXT_JAR}" -C "{EXT_DIR}/classes" . && rm -rf "{EXT_DIR}/classes"',
    ]
    return "\n".join(lines)


__all__ = ["EXT_DIR", "EXT_JAR", "build_step"]
