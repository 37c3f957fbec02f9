"""Mined fixes at old commits judged in the main environment when it already holds what their
commit's recipe installs (:mod:`repogym.shared_envs`), on python-slugify's real history."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.errors import InstallError, SandboxError
from repogym.generators.mined import dependency_fingerprint
from repogym.pipeline import (
    OldCommitEnvs,
    _checkout_at,
    build_env,
    judge_groups,
    judge_mined,
    prepare,
    provider_for,
)
from repogym.schemas.records import (
    Candidate,
    CandidateKind,
    EnvImage,
    EnvSpec,
    Judged,
    RepoSpec,
    Verdict,
)
from repogym.shared_envs import Askers, served_by
from repogym.toolchains.python import (
    DRY_RUN,
    InstallPlan,
    PythonToolchain,
    same_native_sources,
    same_packages,
)
from repogym.toolchains.python_build import c_build_layer

REPOS = Path(__file__).resolve().parents[2] / "shared" / "repos"
CLASSIFIER_COMMIT = "d5643b1"  # "Add Python 3.13 to test matrix and add classifier"
PINNED_COMMIT = "413ac35^"  # before "Bump text_unidecode version": text-unidecode==1.2


def spec(**changes) -> EnvSpec:
    fields = dict(repo="r", commit="a" * 40, base_image="base:1", toolchain="python",
                  install_steps=("pip install -e .",), recipe_version="py-5")
    return EnvSpec(**{**fields, **changes})


def test_only_the_commit_and_the_install_steps_may_differ_between_shared_builds():
    assert spec().same_build(spec(commit="b" * 40, install_steps=("pip install .",)))
    assert not spec().same_build(spec(recipe_version="py-6"))
    assert not spec().same_build(spec(base_image="base:2"))
    assert not spec().same_build(spec(python="python3.12"))


class Untouched:
    """A sandbox the check must not need."""

    def exec(self, *args, **kwargs):
        raise AssertionError("ran a command")


def test_another_build_is_never_asked_about():
    """Another image to build from (the C build layer), recipe or interpreter: no command."""
    python = PythonToolchain()
    for wanted in (spec(commit="b" * 40, layer=c_build_layer()), spec(recipe_version="x")):
        assert not python.env_serves(Untouched(), spec(), Path("."), wanted, timeout=1)


def plan(**changes) -> InstallPlan:
    fields = dict(has_project=True, extras=("test",), requirement_files=("requirements-dev.txt",),
                  groups=(("dev", ("ruff",)),), tox=("hypothesis",), tools=("pytest-mock",),
                  test_tools=("pytest", "pytest-cov"), modules=(("yaml", "pyyaml"),),
                  still_editable="", version=None)
    return InstallPlan(**{**fields, **changes})


def test_the_check_asks_pip_offline_for_everything_the_steps_install():
    check = plan().check()
    dry_run = "python -m pip install -q --dry-run --no-index --no-build-isolation "
    rest = "-r requirements-dev.txt --group dev hypothesis pytest-mock pytest pytest-cov"
    project, check = check.split(" && ", 1)
    assert project == dry_run + "-e '.[test]'"  # the first choice of extras
    # every file, group and requirement -- best effort ones too -- apart from the project;
    # if pip cannot resolve them, each one installed and everything complete but the project
    assert check.startswith(f"{{ {dry_run}{rest} || {{ {dry_run}--no-deps {rest} && python -I -c ")
    assert check.endswith("; }; } && python -c 'import yaml'")
    assert "-U pip" not in check and "--no-deps -e" not in check  # pip, the project: as is
    static = plan(static=("attrs>=22",)).check()
    assert static.startswith(dry_run + "'attrs>=22' && ")  # no build backend needed
    bare = plan(has_project=False, extras=(), modules=(), version="1.2").check()
    assert bare == f"export SETUPTOOLS_SCM_PRETEND_VERSION=1.2; {dry_run}{rest}"


def _dist(site: Path, name: str, version: str, *requires: str, editable_from: Path | None = None,
          ) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    (info / "RECORD").write_text("")
    if editable_from is not None:
        (info / "direct_url.json").write_text(
            f'{{"url": "file://{editable_from}", "dir_info": {{"editable": true}}}}')


def test_a_test_tool_may_require_another_version_of_the_project_itself(tmp_path):
    """pytest requires iniconfig>=1; at iniconfig's old commits the project is 0.2. The steps
    install pytest after the project and put the project back, so an environment with
    pytest and the project (of another version) holds what they would install: checked
    apart, not resolved together (pip: ResolutionImpossible). What either part requires
    must still be there. In a real virtualenv, with pip."""
    venv, tree = tmp_path / "venv", tmp_path / "tree"
    (tree / "proj").mkdir(parents=True)
    (tree / "proj" / "__init__.py").write_text("")
    pyproject = tree / "pyproject.toml"

    # an in-tree build backend that only writes the metadata (all a dry run asks for)
    (tree / "backend.py").write_text(
        "import os, json\n"
        "def prepare_metadata_for_build_editable(directory, config_settings=None):\n"
        "    deps = json.load(open('deps.json'))\n"
        "    os.makedirs(os.path.join(directory, 'proj-0.2.dist-info'))\n"
        "    with open(os.path.join(directory, 'proj-0.2.dist-info', 'METADATA'), 'w') as f:\n"
        "        f.write('Metadata-Version: 2.1\\nName: proj\\nVersion: 0.2\\n'\n"
        "                + ''.join(f'Requires-Dist: {d}\\n' for d in deps))\n"
        "    return 'proj-0.2.dist-info'\n"
        "def build_editable(*args, **kwargs):\n"
        "    raise NotImplementedError\n")
    pyproject.write_text('[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                         'backend-path = ["."]\n')

    def project(*deps: str) -> None:
        (tree / "deps.json").write_text(json.dumps(list(deps)))

    subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    _dist(site, "runner", "9.0", "proj>=1", "helper>=2", "legacy; python_version < '3'")
    _dist(site, "proj", "1.0", editable_from=tree)  # as HEAD installed it
    _dist(site, "helper", "2.1")
    project("helper>=2")
    one_plan = plan(extras=(), requirement_files=(), groups=(), tox=(), tools=(), modules=(),
                    test_tools=("runner",))

    def holds(check: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", check], cwd=tree, capture_output=True, text=True,
                              env={"PATH": f"{venv}/bin:/usr/bin:/bin"})

    together = holds(DRY_RUN + " -e . runner")
    assert together.returncode != 0 and "ResolutionImpossible" in together.stderr
    assert holds(one_plan.check()).returncode == 0, holds(one_plan.check()).stderr
    project("helper>=3")  # the project at this commit needs a newer helper
    assert holds(one_plan.check()).returncode != 0
    project("helper>=2")
    # an image built at this commit: the project is 0.2, pytest's requirement unmet
    shutil.rmtree(site / "proj-1.0.dist-info")
    _dist(site, "proj", "0.2", editable_from=tree)
    assert holds(DRY_RUN + " runner").returncode != 0
    assert holds(one_plan.check()).returncode == 0, holds(one_plan.check()).stdout
    (site / "proj-0.2.dist-info" / "direct_url.json").unlink()  # not this tree's project
    assert "proj>=1 is not met by proj 0.2" in holds(one_plan.check()).stdout
    _dist(site, "other", "1.0", "gone>=1")  # anything installed must be complete
    _dist(site, "proj", "0.2.post1", editable_from=tree)
    shutil.rmtree(site / "proj-0.2.dist-info")
    assert "gone>=1 is not installed" in holds(one_plan.check()).stdout
    shutil.rmtree(site / "other-1.0.dist-info")
    assert holds(one_plan.check()).returncode == 0
    _dist(site, "odd", "1.0", "not a requirement !!")  # unreadable metadata: not met, said
    odd = holds(one_plan.check())
    assert odd.returncode == 1 and "odd requires 'not a requirement !!'" in odd.stdout
    assert "Traceback" not in odd.stderr
    shutil.rmtree(site / "odd-1.0.dist-info")
    shutil.rmtree(site / "helper-2.1.dist-info")  # the runner's helper is gone
    assert holds(one_plan.check()).returncode != 0


def test_the_packages_test_compares_the_trees_of_both_commits(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()

    def commit(*files: str) -> str:
        subprocess.run(["git", "rm", "-rqf", "--ignore-unmatch", "."], cwd=repo, check=True)
        for f in files:
            (repo / f).parent.mkdir(parents=True, exist_ok=True)
            (repo / f).write_text("x = 1\n")
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c",
                        "--allow-empty"], cwd=repo, check=True)
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True,
                              capture_output=True, text=True).stdout.strip()

    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    flat = commit("pkg/__init__.py", "setup.py", "tests/__init__.py")
    same = commit("pkg/__init__.py", "pkg/more.py", "setup.py", "test.py")  # tests moved
    src = commit("src/pkg/__init__.py", "setup.py")
    added = commit("src/pkg/__init__.py", "src/extra.py", "setup.py")

    native = commit("src/pkg/__init__.py", "src/extra.py", "setup.py", "src/pkg/_fast.c")
    moved = commit("src/pkg/__init__.py", "src/extra.py", "setup.py", "src/pkg/_faster.c")

    def same_as(old: str, now: str, test=same_packages) -> bool:
        subprocess.run(["git", "checkout", "-q", now], cwd=repo, check=True)
        return subprocess.run(["bash", "-c", test(old)], cwd=repo).returncode == 0

    assert same_as(flat, same)
    assert not same_as(flat, src)  # an editable install made at flat maps pkg to ./pkg
    assert not same_as(src, added)  # src/extra.py would not be importable
    assert same_as(added, added)
    # a compiled project: its extension modules were built from the env commit's sources
    assert same_as(native, native, same_native_sources)
    assert same_as(native, moved)  # the packages are the same ...
    assert not same_as(native, moved, same_native_sources)  # ... not the C sources
    assert not same_as(added, native, same_native_sources)


def test_what_the_trees_rule_out_is_ruled_out_without_a_sandbox(tmp_path):
    """Other native sources (or packages) than the environment's commit: not served, and
    no sandbox is asked (served_by asks the host's git first)."""
    repo = tmp_path / "r"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]

    def commit(c_source: str) -> str:
        (repo / "pkg").mkdir(exist_ok=True)
        (repo / "pkg" / "__init__.py").write_text("")
        (repo / "pkg" / "_fast.c").write_text(c_source)
        (repo / "setup.py").write_text("from setuptools import setup\nsetup()\n")
        subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-qm", "c"], cwd=repo, check=True)
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True,
                              capture_output=True, text=True).stdout.strip()

    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    old = commit("int f(void) { return 1; }\n")
    new = commit("int f(void) { return 2; }\n")
    python, layer = PythonToolchain(), c_build_layer()
    env, wanted = spec(commit=new, layer=layer), spec(commit=old, layer=layer)
    subprocess.run(["git", "checkout", "-q", old], cwd=repo, check=True)
    assert not python.env_may_serve(env, repo, wanted)
    assert python.env_may_serve(spec(commit=old, layer=layer), repo, wanted)
    assert python.env_may_serve(spec(commit=new), repo, spec(commit=old))  # nothing compiled

    class Provider:
        def identity(self, ref):
            return "sha256:x"

        def open(self, env, limits=None):
            raise AssertionError("a sandbox was opened")

    image = EnvImage(spec=env, provider="docker", ref="env:1", repo_dir="/repo")
    assert served_by(Provider(), image, python, {"old": old}, lambda c: (repo, wanted),
                     None) == set()


@pytest.fixture(scope="module")
def slugify_env(tmp_path_factory, base_image):
    """python-slugify at HEAD, prepared, with its environment image (content-addressed: the
    conformance suite's python subject builds the same one)."""
    return bundle_env(tmp_path_factory.mktemp("slugify"), "un33k+python-slugify", base_image)


def bundle_env(root: Path, bundle: str, base_image: str):
    """A bundle of ../shared/repos cloned into ``root``, prepared, with its env image."""
    source = root / bundle.split("+")[1]
    subprocess.run(["git", "clone", "-q", str(REPOS / f"{bundle}.bundle"), str(source)],
                   check=True)
    settings = Settings(out=root / "out", base_image=base_image)
    prepared = prepare(RepoSpec(source=str(source)), settings)
    provider = provider_for(settings)
    return settings, prepared, provider, build_env(provider, prepared, settings)


def rev(prepared, name: str) -> str:
    return subprocess.run(["git", "rev-parse", name], cwd=prepared.checkout.path, check=True,
                          capture_output=True, text=True).stdout.strip()


class NoSandboxes:
    """A provider whose sandboxes cannot be opened (the answers must come from the cache)."""

    def __init__(self, provider) -> None:
        self.provider = provider

    def identity(self, ref: str) -> str | None:
        return self.provider.identity(ref)

    def open(self, env, limits=None):
        raise SandboxError("no sandbox in this test")


@pytest.mark.docker
@pytest.mark.slow
def test_the_main_environment_serves_old_commits_whose_dependencies_it_holds(slugify_env):
    """A commit whose setup.py differs from HEAD's in classifiers only is served; one that
    pins an older text-unidecode than the image holds is not. The answers are kept."""
    settings, prepared, provider, env = slugify_env
    repo = prepared.checkout.path
    commits = {"classifiers": rev(prepared, CLASSIFIER_COMMIT),
               "pinned": rev(prepared, PINNED_COMMIT)}
    head = dependency_fingerprint(repo, prepared.checkout.commit)
    assert all(dependency_fingerprint(repo, c) != head for c in commits.values())

    def checkout_at(commit: str):
        return _checkout_at(prepared, commit, settings)

    assert served_by(provider, env, prepared.toolchain, commits, checkout_at,
                     settings.cache_dir) == {"classifiers"}
    assert served_by(NoSandboxes(provider), env, prepared.toolchain, commits, checkout_at,
                     settings.cache_dir) == {"classifiers"}
    # nothing kept, the sandbox broken: nothing is served (each is built, as before)
    assert served_by(NoSandboxes(provider), env, prepared.toolchain, commits, checkout_at,
                     None) == set()


@pytest.mark.docker
@pytest.mark.slow
def test_a_served_fix_is_judged_with_the_main_environment_s_candidates(slugify_env):
    """judge_mined hands the served commit's fix to the main environment's batch: one batch,
    no image built for it."""
    settings, prepared, provider, env = slugify_env
    at = rev(prepared, CLASSIFIER_COMMIT)

    def mined(base: str, n: int) -> Candidate:
        return Candidate(kind=CandidateKind.mined, repo=prepared.checkout.name, base_commit=base,
                         bug_patch="", gold_patch=f"patch {n}\n", generator="mined",
                         provenance={"commit": base})

    cands = [mined(prepared.checkout.commit, 1), mined(at, 2)]
    batches: list[tuple[str, list[str]]] = []

    def judge(provider, image: EnvImage, prepared, base, todo, *rest) -> list[Judged]:
        batches.append((image.ref, [c.instance_id for c in todo]))
        return [Judged(candidate=c, verdict=Verdict(instance_id=c.instance_id, status="accept"),
                       statement="", image=image.ref) for c in todo]

    judged = judge_mined(provider, env, prepared, None, cands, settings, judge=judge)
    assert batches == [(env.ref, [c.instance_id for c in cands])]
    assert [j.image for j in judged] == [env.ref, env.ref]


def fix(base: str, n: int = 0) -> Candidate:
    return Candidate(kind=CandidateKind.mined, repo="r", base_commit=base, bug_patch="",
                     gold_patch=f"patch {n}\n", generator="mined", provenance={"commit": base})


def image(ref: str) -> EnvImage:
    return EnvImage(provider="docker", ref=ref, repo_dir="/repo")


def accepted_in(img: EnvImage, group: list[Candidate]) -> list[Judged]:
    return [Judged(candidate=c, verdict=Verdict(instance_id=c.instance_id, status="accept"),
                   statement="", image=img.ref) for c in group]


def test_an_image_built_for_a_later_commit_serves_an_earlier_one_it_satisfies():
    """The last images built are asked before building; one that serves is used, and a
    commit that gets no environment is judged without one, never in another's."""
    built: list[str] = []
    asked: list[tuple[str, str]] = []

    def build(commit: str) -> EnvImage:
        if commit == "bad":
            raise InstallError(repo="r", step="pip install -e .", log_path=None, tail="")
        built.append(commit)
        return image(f"env-{commit}")

    def serves(img: EnvImage, commit: str) -> bool:
        asked.append((img.ref, commit))
        return (img.ref, commit) == ("env-c3", "c2")

    retired: list[str] = []
    envs = OldCommitEnvs("main", build=build, serves=serves,
                         retire=lambda img: retired.append(img.ref))
    assert envs.place([fix("c3")]).ref == "env-c3"
    assert envs.place([fix("c2")]).ref == "env-c3"  # served: not built
    assert envs.place([fix("c1")]).ref == "env-c1"
    failed = envs.place([fix("bad"), fix("bad", 1)])
    assert [j.verdict.status for j in failed] == ["infra_error"] * 2
    assert {j.image for j in failed} == {"main"}
    assert built == ["c3", "c1"]
    # the last two images built, newest first; none asked about its own commit
    assert asked == [("env-c3", "c2"), ("env-c3", "c1"), ("env-c1", "bad"), ("env-c3", "bad")]
    assert retired == []
    assert envs.place([fix("c0")]).ref == "env-c0"
    assert retired == ["env-c3"]  # no longer asked: its sandbox can go


class Counted:
    """A provider and toolchain that count the sandboxes opened and closed."""

    def __init__(self) -> None:
        self.opened, self.closed = 0, 0

    def identity(self, ref: str) -> str:
        return f"sha256:{ref}"

    def open(self, env, limits=None):
        self.opened += 1
        counter = self

        class Box:
            def reset(self, commit: str) -> None:
                pass

            def close(self) -> None:
                counter.closed += 1

        return Box()


class ServesAll(PythonToolchain):
    def env_may_serve(self, env, repo, wanted) -> bool:
        return True

    def env_serves(self, sandbox, env, repo, wanted, *, timeout) -> bool:
        return True


def test_one_sandbox_per_image_answers_every_question_put_to_it():
    """Asked about one commit at a time (an image built for a later commit, about each
    earlier one), an image opens one sandbox, kept until the askers are closed."""
    provider, python = Counted(), ServesAll()
    img = EnvImage(spec=spec(), provider="docker", ref="env:1", repo_dir="/repo")
    askers = Askers(provider, python)

    def ask(commit: str) -> set[str]:
        return served_by(provider, img, python, {commit: commit},
                         lambda c: (Path("."), spec(commit=c)), None, askers)

    assert ask("b" * 40) == {"b" * 40} and ask("c" * 40) == {"c" * 40}
    assert (provider.opened, provider.closed) == (1, 0)
    askers.close()
    assert provider.closed == 1
    served_by(provider, img, python, {"d" * 40: "d" * 40},
              lambda c: (Path("."), spec(commit=c)), None)
    assert (provider.opened, provider.closed) == (2, 2)  # without askers: closed on return


def test_old_commit_environments_are_built_while_the_judge_works():
    """The main group is judged while the first other group's image builds (the judge of
    the main group waits for the build to start: done one after the other, it would wait
    forever, so the wait is bounded and the test fails in seconds)."""
    building = threading.Event()
    order: list[str] = []

    def build(commit: str) -> EnvImage:
        building.set()
        order.append(f"build {commit}")
        return image(f"env-{commit}")

    def judged_in(img: EnvImage, group: list[Candidate]) -> list[Judged]:
        if img.ref == "main":
            assert building.wait(timeout=10), "no build while the main group was judged"
        order.append(f"judge {img.ref}")
        return accepted_in(img, group)

    groups = {"fa": [fix("a")], "main": [fix("h"), fix("h", 1)], "fb": [fix("b")]}
    envs = OldCommitEnvs("main", build=build, serves=lambda img, commit: False)
    judged = judge_groups(groups, "main", image("main"), judged_in, envs)
    assert [j.candidate.base_commit for j in judged] == ["a", "h", "h", "b"]  # groups' order
    assert [j.image for j in judged] == ["env-a", "main", "main", "env-b"]
    assert order.index("judge main") < order.index("judge env-a")
    # one after the other where the provider allows one sandbox per env at a time
    order.clear()
    envs = OldCommitEnvs("main", build=build, serves=lambda img, commit: False)
    judge_groups(groups, "main", image("main"), lambda img, g: order.append(f"judge {img.ref}")
                 or accepted_in(img, g), envs, ahead=False)
    assert order == ["judge main", "build a", "judge env-a", "build b", "judge env-b"]


@pytest.mark.docker
@pytest.mark.slow
def test_an_old_commit_is_judged_in_the_image_of_a_later_one_that_serves_it(slugify_env):
    """Two old commits that pin text-unidecode==1.2 (which the main image does not hold)
    and differ in setup.py's classifiers: one image is built, for the later one, and both
    fixes are judged in it."""
    settings, prepared, provider, env = slugify_env
    later, earlier = rev(prepared, PINNED_COMMIT), rev(prepared, "cab1c96^")
    repo = prepared.checkout.path
    assert dependency_fingerprint(repo, later) != dependency_fingerprint(repo, earlier)
    batches: list[tuple[str, list[str]]] = []

    def judge(provider, img: EnvImage, prepared, base, todo, *rest) -> list[Judged]:
        batches.append((img.ref, [c.base_commit for c in todo]))
        return accepted_in(img, todo)

    judged = judge_mined(provider, env, prepared, None, [fix(later), fix(earlier, 1)], settings,
                         judge=judge)
    assert [b[1] for b in batches] == [[later], [earlier]]
    assert batches[0][0] == batches[1][0] != env.ref
    assert {j.image for j in judged} == {batches[0][0]}


@pytest.mark.docker
@pytest.mark.slow
def test_an_old_commit_of_a_test_tool_s_own_dependency_is_served(tmp_path, base_image):
    """iniconfig, which pytest requires (``iniconfig>=2``): at its commit "add black" the
    project is 0.x, so pip cannot resolve the project and pytest together, while the
    steps would build just what HEAD's environment holds (pytest, then the project put
    back). The main environment serves it."""
    settings, prepared, provider, env = bundle_env(tmp_path, "pytest-dev+iniconfig", base_image)
    old = rev(prepared, "d04a354")  # "add black"
    sandbox = provider.open(env)
    try:
        sandbox.reset(old)
        together = sandbox.exec(f"{DRY_RUN} -e . pytest", timeout=120)
        assert not together.ok and "conflicting dependencies" in together.stdout + together.stderr
    finally:
        sandbox.close()
    assert served_by(provider, env, prepared.toolchain, {"old": old},
                     lambda c: _checkout_at(prepared, c, settings), None) == {"old"}
