"""What only the local provider does: env directories, the env lock, rlimits."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

import repogym.sandboxes.local as local_module
from repogym.config import Settings
from repogym.errors import SandboxError
from repogym.sandboxes.base import Limits
from repogym.sandboxes.local import MARKER, LocalProvider, LocalSandbox
from repogym.schemas.records import EnvImage
from tests.sandboxes.test_conformance import make_checkout, make_spec


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> LocalProvider:
    return LocalProvider(Settings(out=tmp_path_factory.mktemp("local-out")), lock_wait=0.2)


@pytest.fixture(scope="module")
def env(provider: LocalProvider, tmp_path_factory: pytest.TempPathFactory) -> EnvImage:
    """The tiny project without an install (these tests need the venv and git only)."""
    tmp = tmp_path_factory.mktemp("local-env")
    repo = make_checkout(tmp / "tinycalc")
    return provider.build_env(make_spec(repo, "unused"), repo, tmp / "logs")


@pytest.fixture
def sb(provider: LocalProvider, env: EnvImage) -> Iterator[LocalSandbox]:
    with closing(provider.open(env)) as sandbox:
        yield sandbox


def test_docstring_says_it_is_not_an_isolation_boundary() -> None:
    assert "NOT an isolation boundary" in (local_module.__doc__ or "")
    assert "NOT an isolation boundary" in (LocalProvider.__doc__ or "")


def test_env_layout(env: EnvImage, provider: LocalProvider) -> None:
    root = Path(env.ref)
    assert root == provider.env_dir(env.spec) and root.is_absolute()
    assert Path(env.repo_dir) == root / "repo"
    for name in (MARKER, "venv/bin/python", "post-install.tar", "commit", "repo/.git"):
        assert (root / name).exists(), name


def test_commands_use_the_env_venv(sb: LocalSandbox, env: EnvImage) -> None:
    res = sb.exec("python -c 'import sys; print(sys.prefix)'", timeout=30)
    assert res.stdout.strip() == str(Path(env.ref) / "venv")


def test_user_argument_is_ignored(sb: LocalSandbox) -> None:
    assert sb.exec("true", timeout=30, user="root").ok


def test_one_sandbox_per_env(provider: LocalProvider, env: EnvImage) -> None:
    first = provider.open(env)
    try:
        with pytest.raises(SandboxError, match="in use"):
            provider.open(env)
    finally:
        first.close()
    provider.open(env).close()


def test_half_built_env_is_rebuilt(provider: LocalProvider, env: EnvImage,
                                   tmp_path: Path) -> None:
    repo = make_checkout(tmp_path / "tinycalc")
    spec = make_spec(repo, "unused", ("echo once >> ../count",))
    first = provider.build_env(spec, repo, tmp_path / "logs")
    (Path(first.ref) / MARKER).unlink()  # as if the build had died before the end
    with pytest.raises(SandboxError):
        provider.open(first)
    again = provider.build_env(spec, repo, tmp_path / "logs")
    assert not again.reused and (Path(again.ref) / MARKER).is_file()
    assert (Path(again.ref) / "count").read_text() == "once\n"
    assert provider.build_env(spec, repo, tmp_path / "logs").reused


def test_memory_limit(provider: LocalProvider, env: EnvImage) -> None:
    with closing(provider.open(env, Limits(memory_mb=256))) as sandbox:
        res = sandbox.exec(["python", "-c", "b = b'x' * (1024**3)"], timeout=60)
        assert not res.ok and "MemoryError" in res.stderr
        assert sandbox.exec("echo alive", timeout=30).ok


def test_reset_kills_processes_that_left_the_group(sb: LocalSandbox) -> None:
    res = sb.exec("setsid sleep 3128 >/dev/null 2>&1 & echo $!", timeout=30)
    pid = int(res.stdout.strip())
    time.sleep(0.2)
    sb.reset()
    deadline = time.monotonic() + 3
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    state = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}").exists() \
        else "gone"
    assert state in {"gone", "Z"}


def test_timeout_leaves_no_process_behind(sb: LocalSandbox) -> None:
    res = sb.exec("sleep 3129 & echo $!; wait", timeout=1)
    assert res.timed_out and res.exit_code == -9
    pid = int(res.stdout.split()[0])
    time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists() or \
        Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_environments_live_where_the_settings_say(tmp_path: Path, monkeypatch) -> None:
    """Under the dataset's cache by default; in one shared folder with ``local_envs``."""
    from repogym.config import Settings

    monkeypatch.delenv("REPOGYM_LOCAL_ENVS", raising=False)
    assert Settings(out=tmp_path / "o").local_envs_dir == tmp_path / "o" / ".cache" / "local-envs"
    monkeypatch.setenv("REPOGYM_LOCAL_ENVS", str(tmp_path / "shared"))
    assert Settings(out=tmp_path / "o").local_envs_dir == tmp_path / "shared"
