"""One exception hierarchy for repogym.

Three kinds of outcome are kept apart everywhere (see ARCHITECTURE.md):
the *task* failed (a verdict, not an exception), the *infrastructure* failed
(``InfraError`` and subclasses: never turned into a task verdict), or the
*input* was bad (``InputError`` and subclasses: a one-line message for the user).

    RepogymError
    ├── InputError                 bad input from the user; message is shown as is
    │   ├── SourceError            not a git repo / cannot be cloned / bad commit
    │   ├── NoTestsError           the repository has no tests we can run
    │   ├── ConfigError            invalid setting or configuration file
    │   ├── UnknownPluginError     a plug-in name that is not registered
    │   └── EnvDoesNotInstall      a commit's env failed to install in repeated builds
    ├── InfraError                 infrastructure broke; the judge reports ``infra_error``
    │   ├── SandboxError           a sandbox could not start, exec, read or write
    │   ├── ImageBuildError        the base image or an env image could not be built
    │   │   └── InstallError       one install step of an env image failed (log kept)
    │   └── TestRunError           the test runner produced no usable report
    └── DatasetError               the dataset on disk is unreadable or of an unknown version
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from repogym.build_failures import BuildFailure


class RepogymError(Exception):
    """Root of every error repogym raises on purpose."""


class InputError(RepogymError):
    """The user's input is bad; the message says what and is shown in one line."""


class SourceError(InputError):
    """A repository source is not a git repo, cannot be cloned, or lacks the commit."""


class NoTestsError(InputError):
    """The repository has no tests the toolchain can run."""


class ConfigError(InputError):
    """A setting or configuration file is invalid."""


class UnknownPluginError(InputError, KeyError):
    """A plug-in name that is not registered; the message lists the valid names."""

    def __init__(self, kind: str, name: str, valid: list[str]) -> None:
        super().__init__(f"unknown {kind} {name!r}; valid names: {', '.join(sorted(valid))}")
        self.kind, self.name, self.valid = kind, name, valid

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class EnvDoesNotInstall(InputError):
    """The environment at a commit is known not to install: its spec failed in repeated
    builds (:mod:`repogym.build_failures`), so it is not built again. A fact about that
    commit with this recipe, not an infrastructure failure."""

    def __init__(self, failure: "BuildFailure") -> None:
        super().__init__(failure.describe())
        self.failure = failure


class InfraError(RepogymError):
    """Infrastructure failed: never a verdict on a task."""


class SandboxError(InfraError):
    """A sandbox could not be created, or broke while executing, reading or writing."""


class ImageBuildError(InfraError):
    """An image (base or per-repo environment) could not be built."""


class InstallError(ImageBuildError):
    """One install step of a repository's environment failed.

    Attributes:
        repo: the repository's name.
        step: the failing step's command line.
        log_path: where the full log of the step was kept (may be None).
        limit: the sandbox limit that stopped the step ("reached its process limit (96
            processes)"), empty when the step itself failed.
    """

    def __init__(self, repo: str, step: str, log_path: Path | None, tail: str = "",
                 limit: str = "") -> None:
        where = f" (log: {log_path})" if log_path else ""
        what = f"stopped: the build {limit}" if limit else "failed"
        super().__init__(f"{repo}: install step {what}: {step}{where}")
        self.repo, self.step, self.log_path, self.tail = repo, step, log_path, tail
        self.limit = limit


class TestRunError(InfraError):
    """The test runner produced no usable report (it crashed, timed out or was killed)."""

    __test__ = False  # not a pytest test class


class DatasetError(RepogymError):
    """The dataset on disk is unreadable, corrupt or of an unknown schema version."""
