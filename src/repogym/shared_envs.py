"""Mined fixes at old commits judged in the repository's main environment when it holds
what their commit's recipe would install.

A fix whose install files differ from HEAD's (a version bump in ``setup.py``, a classifier,
a reformatted ``setup.cfg``) used to get an environment image of its own: about 14 s to
build, most of it downloading and installing what the main image already holds. Before
building, :func:`served_by` asks the toolchain whether the main environment, reset to that
commit, already satisfies the commit's recipe: first from the host's git
(:meth:`Toolchain.env_may_serve`: other native sources, say, rule it out without a
sandbox), then in a sandbox (:meth:`Toolchain.env_serves`: pip resolves the recipe offline
against what is installed, so a pinned older release, a new dependency or a new extra sends
the fix to an image of its own as before). The answer is kept per main image
(its identity, which changes when it is rebuilt), commit spec and version of the
toolchain's rule (:attr:`Toolchain.serve_rule`), so a later run does not ask again.

The same question is put to an image built in the same run for a later commit
(:class:`repogym.pipeline.OldCommitEnvs`): several old commits often share their
dependencies while their install files differ in something else.

Anything that goes wrong while asking (the engine, the sandbox) only means "build it", as
before: the question saves time and never decides a verdict.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Mapping, TypeVar

from repogym.cache import RecordCache
from repogym.errors import RepogymError
from repogym.sandboxes.base import Sandbox, SandboxProvider
from repogym.schemas.records import EnvImage, EnvSpec, Record
from repogym.toolchains.base import Toolchain

log = logging.getLogger(__name__)

CHECK_TIMEOUT = 300.0  # seconds for one commit's offline resolution
K = TypeVar("K")


class ServedRecord(Record):
    """Whether the environment ``env`` (an image identity) serves the commit spec ``wanted``
    (its digest)."""

    env: str
    wanted: str
    served: bool


CheckoutAt = Callable[[str], tuple[Path, EnvSpec]]  # commit -> its checkout, its spec


def served_by(provider: SandboxProvider, env: EnvImage, toolchain: Toolchain,
              commits: Mapping[K, str], checkout_at: CheckoutAt,
              cache_dir: Path | None, askers: "Askers | None" = None) -> set[K]:
    """The keys of ``commits`` whose commit ``env`` serves (see the module doc).
    ``checkout_at`` checks a commit out on the host (one folder, so one at a time) and
    gives its environment spec; a commit it fails on is left to be built (and fail there).
    ``askers`` keeps the sandbox asked in open for the next call about ``env`` (its owner
    closes it); without, it is closed on return."""
    if env.spec is None or not commits:
        return set()
    try:
        identity = provider.identity(env.ref) or env.spec.digest()
    except RepogymError as exc:
        log.warning("%s: cannot tell which image it is (%s): building for old commits", env.ref,
                    exc)
        return set()
    cache = RecordCache(cache_dir / "env-serves" if cache_dir else None, ServedRecord)
    asker = askers.of(env) if askers is not None else _Asker(provider, env, toolchain)
    served: set[K] = set()
    try:
        for key, commit in commits.items():
            try:
                repo, wanted = checkout_at(commit)
            except RepogymError:
                continue
            cache_key = f"{identity}-{toolchain.serve_rule}-{wanted.digest()}"
            known = cache.get(cache_key)
            if known is None:
                answer = (toolchain.env_may_serve(env.spec, repo, wanted)
                          and asker.serves(repo, wanted))
                known = ServedRecord(env=identity, wanted=wanted.digest(), served=answer)
                cache.put(cache_key, known)
            if known.served:
                served.add(key)
    except RepogymError as exc:
        log.warning("%s: could not check which old commits its environment serves (%s): "
                    "building for the others", env.ref, exc)
        if askers is not None:
            askers.drop(env)  # the sandbox broke: a new one next time
    finally:
        if askers is None:
            asker.close()
    return served


class Askers:
    """One open sandbox per environment asked, for several :func:`served_by` calls (an
    image built for one old commit is asked about each earlier one): opening one costs
    about a second. Not thread-safe: one thread asks."""

    def __init__(self, provider: SandboxProvider, toolchain: Toolchain) -> None:
        self.provider, self.toolchain = provider, toolchain
        self.asking: dict[str, _Asker] = {}  # image ref -> its asker

    def of(self, env: EnvImage) -> "_Asker":
        if env.ref not in self.asking:
            self.asking[env.ref] = _Asker(self.provider, env, self.toolchain)
        return self.asking[env.ref]

    def drop(self, env: EnvImage) -> None:
        if (asker := self.asking.pop(env.ref, None)) is not None:
            asker.close()

    def close(self) -> None:
        for ref in list(self.asking):
            self.asking.pop(ref).close()


class _Asker:
    """Asks the toolchain, in one sandbox of ``env`` opened at the first question."""

    def __init__(self, provider: SandboxProvider, env: EnvImage, toolchain: Toolchain) -> None:
        self.provider, self.env, self.toolchain = provider, env, toolchain
        self.sandbox: Sandbox | None = None

    def serves(self, repo: Path, wanted: EnvSpec) -> bool:
        """Raises: SandboxError: the sandbox broke."""
        assert self.env.spec is not None
        if self.sandbox is None:
            self.sandbox = self.provider.open(self.env)
        self.sandbox.reset(wanted.commit)
        ok = self.toolchain.env_serves(self.sandbox, self.env.spec, repo, wanted,
                                       timeout=CHECK_TIMEOUT)
        log.info("%s at %s: %s %s", wanted.repo, wanted.commit[:12], self.env.ref,
                 "serves it" if ok else "does not serve it")
        return ok

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
