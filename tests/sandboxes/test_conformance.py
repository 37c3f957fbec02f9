"""The one conformance suite every sandbox provider passes (parametrized by provider).

Each provider builds the tiny project's environment once per module; every test opens a
fresh sandbox on it (the env is shared, the sandbox is not).
"""

from __future__ import annotations

import difflib
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.errors import InstallError, SandboxError, UnknownPluginError
from repogym.sandboxes import DockerProvider, LocalProvider, SandboxProvider, get_provider
from repogym.sandboxes.base import Limits, Sandbox
from repogym.schemas.records import EnvImage, EnvSpec
from tests.conftest import TINY_PROJECT, git

INSTALL = "python -m pip install -q -e '.[test]'"
OPS = "tinycalc/ops.py"
PROVIDERS = ["local", pytest.param("docker", marks=pytest.mark.docker)]


def make_checkout(root: Path, files: dict[str, str] = TINY_PROJECT) -> Path:
    """A committed git repository holding ``files``."""
    root.mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


def make_spec(repo: Path, base_image: str, steps: tuple[str, ...] = (INSTALL,),
              name: str = "tinycalc") -> EnvSpec:
    """An env spec for ``repo``; a per-run recipe version so each test run builds afresh."""
    return EnvSpec(repo=name, commit=git(repo, "rev-parse", "HEAD"), base_image=base_image,
                   toolchain="python", install_steps=steps,
                   recipe_version=f"test-{secrets.token_hex(4)}")


def make_provider(name: str, request: pytest.FixtureRequest, out: Path) -> SandboxProvider:
    """A provider writing under ``out``; docker ones get a namespace of their own."""
    if name == "local":
        return get_provider("local", Settings(out=out), lock_wait=2.0)
    base_image = request.getfixturevalue("base_image")
    client = request.getfixturevalue("docker_client")
    settings = Settings(out=out, base_image=base_image, memory_mb=1024, pids=256)
    return get_provider("docker", settings, client=client,
                        namespace=f"test-{secrets.token_hex(4)}")


def base_image_of(provider: SandboxProvider) -> str:
    assert isinstance(provider, (DockerProvider, LocalProvider))
    return provider.settings.base_image


def drop_provider(provider: SandboxProvider) -> None:
    """Remove what a test provider left behind (containers and env images)."""
    provider.cleanup()
    from repogym.sandboxes.docker import DockerProvider, cleanup_images

    if isinstance(provider, DockerProvider):
        cleanup_images(provider.client, provider.namespace)


@pytest.fixture(scope="module", params=PROVIDERS)
def built(request: pytest.FixtureRequest,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SandboxProvider, EnvImage]]:
    """(provider, env) for the tiny project, built once per provider and module."""
    tmp = tmp_path_factory.mktemp(f"env-{request.param}")
    provider = make_provider(request.param, request, tmp / "out")
    repo = make_checkout(tmp / "tinycalc")
    (repo / "NOTES.txt").write_text("second commit\n")  # a history to reset into
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    spec = make_spec(repo, base_image_of(provider))
    env = provider.build_env(spec, repo, tmp / "logs")
    assert not env.reused
    yield provider, env
    drop_provider(provider)


@pytest.fixture
def provider(built: tuple[SandboxProvider, EnvImage]) -> SandboxProvider:
    return built[0]


@pytest.fixture
def env(built: tuple[SandboxProvider, EnvImage]) -> EnvImage:
    return built[1]


@pytest.fixture
def sb(provider: SandboxProvider, env: EnvImage) -> Iterator[Sandbox]:
    with provider.open(env) as sandbox:
        yield sandbox


def diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{path}", f"b/{path}"))


def gone(sb: Sandbox, pid: str) -> bool:
    """Whether process ``pid`` has died (a zombie not yet reaped counts as dead)."""
    script = (f"for i in $(seq 40); do s=$(ps -o stat= -p {pid}); "
              '[ -z "$s" ] || [ "${s#Z}" != "$s" ] && exit 0; sleep 0.05; done; exit 1')
    return sb.exec(script, timeout=10).ok


def alive(sb: Sandbox, pid: str) -> bool:
    """Whether process ``pid`` is running (not a zombie)."""
    state = sb.exec(["ps", "-o", "stat=", "-p", pid], timeout=10).stdout.strip()
    return bool(state) and not state.startswith("Z")


def test_unknown_provider_lists_the_valid_names() -> None:
    with pytest.raises(UnknownPluginError, match="docker, local"):
        get_provider("nope", Settings())


def test_identity_names_what_the_env_is_now(provider: SandboxProvider, env: EnvImage,
                                            tmp_path: Path) -> None:
    """Stable while the env is unchanged; None for an environment that does not exist (a
    rebuild under the same ref changes it: tests/datasets/test_reverify_image.py)."""
    first = provider.identity(env.ref)
    assert first and provider.identity(env.ref) == first
    assert provider.env_for(env.ref).ref == env.ref
    missing = ("repogym-env/nothing-here:0000000000000000" if isinstance(provider, DockerProvider)
               else str(tmp_path / "no-env"))
    assert provider.identity(missing) is None


# -- exec ---------------------------------------------------------------------------------

def test_exec_ok(sb: Sandbox) -> None:
    res = sb.exec("echo hello", timeout=30)
    assert res.ok and res.exit_code == 0 and res.stdout == "hello\n"
    assert not res.timed_out and res.duration >= 0


def test_exec_failing_command_is_a_result(sb: Sandbox) -> None:
    res = sb.exec("echo oops >&2; exit 3", timeout=30)
    assert res.exit_code == 3 and not res.ok
    assert res.stderr == "oops\n" and res.stdout == ""


def test_exec_keeps_stdout_and_stderr_apart(sb: Sandbox) -> None:
    res = sb.exec("echo out; echo err >&2; echo out2", timeout=30)
    assert res.stdout == "out\nout2\n" and res.stderr == "err\n"


def test_exec_argument_list_is_quoted(sb: Sandbox) -> None:
    res = sb.exec(["printf", "%s|", "a b", "$HOME", "c'd"], timeout=30)
    assert res.stdout == "a b|$HOME|c'd|"


def test_exec_env(sb: Sandbox) -> None:
    res = sb.exec('echo "$RG_ONE-$RG_TWO"', timeout=30, env={"RG_ONE": "1", "RG_TWO": "a b"})
    assert res.stdout == "1-a b\n"


def test_exec_workdir(sb: Sandbox) -> None:
    assert sb.exec("pwd", timeout=30).stdout.strip() == sb.repo_dir
    sub = sb.exec("pwd", timeout=30, workdir="tinycalc").stdout.strip()
    assert sub == f"{sb.repo_dir}/tinycalc"
    assert sb.exec("pwd", timeout=30, workdir="/").stdout.strip() == "/"


def test_exec_missing_workdir_is_a_failed_result(sb: Sandbox) -> None:
    assert not sb.exec("true", timeout=30, workdir="no/such/dir").ok


def test_exec_runs_in_the_env(sb: Sandbox) -> None:
    assert sb.exec("python -c 'import tinycalc, pytest'", timeout=60).ok
    res = sb.exec("python -m pytest -q", timeout=120)
    assert res.ok and "6 passed" in res.stdout


def test_timeout_kills_and_sandbox_recovers(sb: Sandbox) -> None:
    start = time.monotonic()
    res = sb.exec("echo started; sleep 60", timeout=2)
    assert time.monotonic() - start < 10
    assert res.timed_out and res.exit_code == -9 and not res.ok
    assert "started" in res.stdout
    sb.reset()
    assert sb.exec("echo alive", timeout=30).stdout == "alive\n"


def test_timeout_kills_the_whole_process_group(sb: Sandbox) -> None:
    res = sb.exec("sleep 61.25 & echo $!; sleep 60", timeout=2)
    assert res.timed_out
    assert gone(sb, res.stdout.split()[0])


def test_output_is_capped(provider: SandboxProvider, env: EnvImage) -> None:
    with provider.open(env, Limits(output_bytes=1000)) as sandbox:
        res = sandbox.exec("head -c 100000 /dev/zero | tr '\\0' x; echo; echo END", timeout=30)
    assert res.ok and len(res.stdout) < 1200
    assert res.stdout.startswith("xxx") and res.stdout.endswith("END\n")
    assert "dropped" in res.stdout


# -- files --------------------------------------------------------------------------------

def test_write_read_roundtrip_text(sb: Sandbox) -> None:
    sb.write_file("notes/new.txt", "héllo\n")
    assert sb.read_file("notes/new.txt") == "héllo\n".encode()
    assert sb.exec("cat notes/new.txt", timeout=30).stdout == "héllo\n"


def test_write_read_roundtrip_binary_and_mode(sb: Sandbox) -> None:
    data = bytes(range(256)) * 64
    sb.write_file("bin/blob.bin", data, mode=0o755)
    assert sb.read_file("bin/blob.bin") == data
    assert sb.exec("test -x bin/blob.bin && wc -c < bin/blob.bin", timeout=30).stdout.strip() \
        == str(len(data))


def test_written_files_belong_to_the_sandbox_user(sb: Sandbox) -> None:
    sb.write_file(OPS, "x = 1\n")
    assert sb.exec(f"echo more >> {OPS} && test -O {OPS}", timeout=30).ok


def test_write_to_scratch_path(sb: Sandbox) -> None:
    path = sb.scratch_path(".txt")
    assert not path.startswith(sb.repo_dir)
    sb.write_file(path, "scratch")
    assert sb.read_file(path) == b"scratch"
    assert sb.exec(["cat", path], timeout=30).stdout == "scratch"


def test_files_in_tmp(sb: Sandbox) -> None:
    path = f"/tmp/rg-test-{secrets.token_hex(4)}/in.txt"
    sb.write_file(path, "written")
    assert sb.exec(["cat", path], timeout=30).stdout == "written"
    assert sb.exec(f"echo made > {path}.out", timeout=30).ok
    assert sb.read_file(f"{path}.out") == b"made\n"
    sb.exec(["rm", "-rf", path.rsplit("/", 1)[0]], timeout=30)


def test_read_missing_file_raises_file_not_found(sb: Sandbox) -> None:
    with pytest.raises(FileNotFoundError):
        sb.read_file("no/such/file.txt")
    with pytest.raises(FileNotFoundError):
        sb.read_file(sb.scratch_path())
    with pytest.raises(FileNotFoundError):
        sb.read_file("/tmp/rg-no-such-file")


# -- patches ------------------------------------------------------------------------------

def test_apply_good_patch(sb: Sandbox) -> None:
    old = sb.read_file(OPS).decode()
    new = old.replace("return a + b", "return a - b")
    assert sb.apply_patch(diff(OPS, old, new))
    assert sb.read_file(OPS).decode() == new
    assert not sb.exec("python -m pytest -q", timeout=120).ok


def test_apply_bad_patch_changes_nothing(sb: Sandbox) -> None:
    old = sb.read_file(OPS).decode()
    good = diff(OPS, old, old.replace("return a + b", "return a - b"))
    bad = good.replace("def add(a, b):", "def add(x, y):").replace("return a + b",
                                                                   "return x + y")
    stale = diff(OPS, old, old.replace("n % 2 == 0", "n % 2 == 1")) + \
        diff("tinycalc/missing.py", "a\n", "b\n")
    assert not sb.apply_patch(bad)
    assert not sb.apply_patch(stale)  # one good hunk, one bad file: all or nothing
    assert sb.read_file(OPS).decode() == old
    assert sb.exec("git diff --quiet", timeout=30).ok


def test_apply_empty_patch(sb: Sandbox) -> None:
    assert sb.apply_patch("")


# -- reset --------------------------------------------------------------------------------

def test_reset_restores_modified_deleted_and_added_files(sb: Sandbox) -> None:
    ops = sb.read_file(OPS)
    sb.write_file(OPS, "broken = True\n")
    assert sb.exec("rm tests/test_ops.py && mkdir -p extra/deep && touch extra/deep/x.py "
                   "&& echo y > tinycalc/new.py", timeout=30).ok
    sb.reset()
    assert sb.read_file(OPS) == ops
    assert sb.read_file("tests/test_ops.py")
    for path in ("tinycalc/new.py", "extra/deep/x.py"):
        with pytest.raises(FileNotFoundError):
            sb.read_file(path)
    assert sb.exec("git status --porcelain --untracked-files=no", timeout=30).stdout == ""


def test_reset_undoes_commits(sb: Sandbox) -> None:
    head = sb.exec("git rev-parse HEAD", timeout=30).stdout
    sb.write_file(OPS, "broken = True\n")
    commit = "git -c user.name=a -c user.email=a@b commit -qam hack"
    assert sb.exec(f"{commit} && git checkout -qb other", timeout=30).ok
    sb.reset()
    assert sb.exec("git rev-parse HEAD", timeout=30).stdout == head
    assert b"def add" in sb.read_file(OPS)


def test_reset_keeps_the_editable_install(sb: Sandbox) -> None:
    assert sb.exec("rm -rf *.egg-info .pytest_cache && python -m pytest -q", timeout=120).ok
    sb.reset()
    assert sb.exec('python -c "import tinycalc"', timeout=60).ok
    res = sb.exec("python -m pytest -q", timeout=120)
    assert res.ok, res.stdout + res.stderr


def test_reset_kills_background_processes(sb: Sandbox) -> None:
    # in a session of its own, out of reach of the command's process-group cleanup
    res = sb.exec("setsid sleep 3127 >/dev/null 2>&1 </dev/null & pid=$!; sleep 0.3; echo $pid",
                 timeout=30)  # (0.3 s: setsid must run before the command returns)
    pid = res.stdout.strip()
    assert res.ok and pid and alive(sb, pid)
    sb.reset()
    assert gone(sb, pid)


def test_reset_empties_scratch(sb: Sandbox) -> None:
    path = sb.scratch_path(".txt")
    sb.write_file(path, "x")
    sb.reset()
    with pytest.raises(FileNotFoundError):
        sb.read_file(path)


def test_reset_is_repeatable(sb: Sandbox) -> None:
    for _ in range(3):
        sb.write_file(OPS, "broken = True\n")
        sb.reset()
        assert sb.exec("git diff --quiet", timeout=30).ok


# -- lifecycle ----------------------------------------------------------------------------

def test_close_twice_is_fine(provider: SandboxProvider, env: EnvImage) -> None:
    sandbox = provider.open(env)
    assert sandbox.exec("true", timeout=30).ok
    sandbox.close()
    sandbox.close()
    with pytest.raises(SandboxError):
        sandbox.exec("true", timeout=30)


def test_context_manager_closes(provider: SandboxProvider, env: EnvImage) -> None:
    with provider.open(env) as sandbox:
        assert sandbox.exec("true", timeout=30).ok
    with pytest.raises(SandboxError):
        sandbox.exec("true", timeout=30)


def test_env_is_reused(provider: SandboxProvider, env: EnvImage, tmp_path: Path) -> None:
    again = provider.build_env(env.spec, tmp_path / "unused", tmp_path / "logs")
    assert again.reused and again.ref == env.ref and again.repo_dir == env.repo_dir
    assert env.provider == provider.name == again.provider


def test_failing_install_step_raises_install_error(provider: SandboxProvider,
                                                   tmp_path: Path) -> None:
    repo = make_checkout(tmp_path / "tinycalc")
    step = "echo building; echo boom >&2; exit 7"
    spec = make_spec(repo, base_image_of(provider), ("true", step))
    with pytest.raises(InstallError) as info:
        provider.build_env(spec, repo, tmp_path / "logs")
    err = info.value
    assert err.step == step and err.repo == "tinycalc" and step in str(err)
    assert err.log_path == tmp_path / "logs" / "install-1.log" and err.log_path.is_file()
    assert "boom" in err.log_path.read_text() and "boom" in err.tail
    assert (tmp_path / "logs" / "install-0.log").is_file()


def test_reset_to_an_earlier_commit_and_back(sb: Sandbox) -> None:
    parent = sb.exec("git rev-parse HEAD~1", timeout=30).stdout.strip()
    head = sb.exec("git rev-parse HEAD", timeout=30).stdout.strip()
    sb.write_file(OPS, "broken = True\n")
    sb.reset(commit=parent)
    assert sb.exec("git rev-parse HEAD", timeout=30).stdout.strip() == parent
    assert not sb.exec("test -e NOTES.txt", timeout=30).ok
    assert sb.exec("python -c 'import tinycalc.ops'", timeout=60).ok  # install still works
    sb.reset()
    assert sb.exec("git rev-parse HEAD", timeout=30).stdout.strip() == head
    assert sb.read_file("NOTES.txt") == b"second commit\n"


def test_reset_to_an_unknown_commit_raises(sb: Sandbox) -> None:
    with pytest.raises(SandboxError, match="no commit"):
        sb.reset(commit="0123456789abcdef0123456789abcdef01234567")


ECHO_SERVER = (
    "import json, os, sys\n"
    "tag = sys.argv[1]\n"
    "for line in sys.stdin:\n"
    "    req = json.loads(line)\n"
    "    print(tag, json.dumps({'pid': os.getpid(), 'echo': req.get('x'), 'cwd': os.getcwd()}),"
    " flush=True)\n"
)


def test_spawned_process_answers_and_survives_reset(sb: Sandbox) -> None:
    from repogym.sandboxes.channel import new_tag

    tag = new_tag()
    channel = sb.spawn(["python", "-u", "-c", ECHO_SERVER, tag], tag=tag)
    answer = channel.request({"x": 41}, timeout=60)
    assert answer["echo"] == 41 and answer["cwd"] == sb.repo_dir
    channel.pid = answer["pid"]
    sb.reset()
    assert channel.request({"x": 42}, timeout=60)["echo"] == 42  # spared by reset
    channel.close()
    sb.reset()  # no longer spared
    assert gone(sb, str(answer["pid"]))


def test_spawned_process_that_dies_closes_its_channel(sb: Sandbox) -> None:
    from repogym.sandboxes.channel import ChannelClosed, new_tag

    tag = new_tag()
    channel = sb.spawn(["python", "-c", "import sys; sys.stdin.readline()", tag], tag=tag)
    with pytest.raises(ChannelClosed):
        channel.request({"x": 1}, timeout=60)
    channel.close()
