"""Issue 15: an env image rebuilt with a changed dependency, and the corpus flow's
re-verification retires exactly the tasks it broke.

``depcalc`` computes its totals with ``depfast`` when that package is installed and with
its own fallback (``depcalc/_fallback.py``) when it is not. The first corpus run builds the
image without ``depfast``: synthetic bugs land in the fallback and elsewhere, and become
tasks. Then the image is rebuilt under the same tag with ``depfast`` installed (the
container's site-packages gains it, committed to the same tag: what a rebuild that
resolves a new dependency does). The fallback is no longer called, so a task whose bug lies
only there fails nothing without its fix any more.

The second run of the same corpus finds the image's identity changed, re-verifies the
repository's tasks and retires, as ``retired:no_op``, exactly those whose gold patch
touches only ``_fallback.py``; every other task holds and counts one re-verification. Then
the image is rebuilt once more and re-verified by hand (``repogym dataset reverify``): the
corpus state records the new image, so a third run finds nothing changed, re-verifies
nothing and judges no retired task again.
"""

from __future__ import annotations

import io
import secrets
import tarfile

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.config import Settings
from repogym.corpus.state import StateStore
from repogym.datasets import DatasetStore
from repogym.flows.corpus_flow import RepoJob, corpus_flow, markdown
from repogym.patches import patch_paths
from repogym.schemas.records import RepoSpec
from tests.conftest import commit_files

FALLBACK = "depcalc/_fallback.py"
FILES = {
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "depcalc"\nversion = "0.1"\n\n'
        '[project.optional-dependencies]\ntest = ["pytest"]\n'
        '[tool.setuptools]\npackages = ["depcalc"]\n'),
    "depcalc/__init__.py": "",
    FALLBACK: (
        '"""What depcalc uses when depfast is not installed."""\n\n\n'
        "def fast_total(values):\n    total = 0\n    for v in values:\n        total += v\n"
        "    return total\n\n\n"
        "def fast_max(values):\n    best = None\n    for v in values:\n"
        "        if best is None or v > best:\n            best = v\n    return best\n"),
    "depcalc/stats.py": (
        "try:\n    from depfast import fast_max, fast_total\nexcept ImportError:\n"
        "    from depcalc._fallback import fast_max, fast_total\n\n\n"
        "def total(values):\n    return fast_total(values)\n\n\n"
        "def largest(values):\n    return fast_max(values)\n\n\n"
        "def mean(values):\n    if not values:\n        raise ValueError('mean of nothing')\n"
        "    return total(values) / len(values)\n\n\n"
        "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n"
        "        return hi\n    return x\n\n\n"
        "def scale(values, k):\n    return [v * k for v in values]\n"),
    "tests/test_stats.py": (
        "import pytest\n\nfrom depcalc.stats import clamp, largest, mean, scale, total\n\n\n"
        "def test_total():\n    assert total([1, 2, 3]) == 6\n\n\n"
        "def test_total_empty():\n    assert total([]) == 0\n\n\n"
        "def test_largest():\n    assert largest([3, 9, 4]) == 9\n\n\n"
        "def test_largest_first():\n    assert largest([9, 3]) == 9\n\n\n"
        "def test_largest_empty():\n    assert largest([]) is None\n\n\n"
        "def test_mean():\n    assert mean([2, 4]) == 3\n\n\n"
        "def test_mean_empty():\n    with pytest.raises(ValueError):\n        mean([])\n\n\n"
        "def test_clamp():\n    assert (clamp(-1, 0, 5), clamp(9, 0, 5), clamp(3, 0, 5)) == (0, 5, 3)\n"
        "\n\n"
        "def test_scale():\n    assert scale([1, 2], 3) == [3, 6]\n"),
}
DEPFAST = ("def fast_total(values):\n    return sum(values)\n\n\n"
           "def fast_max(values):\n    return max(values, default=None)\n")


def install_depfast(client, tag: str) -> str:
    """``depfast`` added to the image ``tag``'s site-packages, committed under the same
    tag with the image's own configuration; the new image id."""
    image = client.images.get(tag)
    config = image.attrs["Config"]
    container = client.containers.run(tag, command=["sleep", "infinity"], detach=True,
                                      user="root", network_mode="none")
    try:
        code, out = container.exec_run(
            ["python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
        assert code == 0, out
        site = out.decode().strip()
        data = DEPFAST.encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo("depfast.py")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        assert container.put_archive(site, buf.getvalue())
        repository, _, version = tag.rpartition(":")
        new = container.commit(repository=repository, tag=version, conf={
            key: config[key] for key in ("User", "WorkingDir", "Cmd", "Env", "Labels")
            if config.get(key) is not None})
    finally:
        container.remove(force=True)
    assert new.id != image.id
    return str(new.id)


@pytest.mark.docker
@pytest.mark.slow
def test_a_rebuilt_image_retires_exactly_the_tasks_its_new_dependency_broke(
        tmp_path, base_image, docker_client):
    # a token of its own: this test changes the image under its tag, so no other run may
    # find that image (the commit, hence the tag, is new each time)
    files = {**FILES, "depcalc/BUILD": secrets.token_hex(8) + "\n"}
    commit_files(tmp_path / "depcalc", files)
    settings = Settings(out=tmp_path / "out", base_image=base_image, generators=("procedural",),
                        max_candidates=14, max_combined=2, baseline_runs=1, oracle_runs=1,
                        probes=0, test_timeout=60, workers=2)
    jobs = [RepoJob.of(RepoSpec(source=str(tmp_path / "depcalc")), settings)]
    states, store = StateStore(settings.out), DatasetStore(settings.out)
    tag = ""
    try:
        first = corpus_flow(jobs, settings).by_name()["depcalc"]
        assert first.error is None and first.reverify is None, first.error
        tag = first.summary.image
        state = states.load("depcalc")
        assert state.images == {tag: docker_client.images.get(tag).id}
        tasks = store.rows("tasks", "depcalc")
        broken = {t.instance_id for t in tasks if patch_paths(t.patch) == {FALLBACK}}
        kept = {t.instance_id for t in tasks} - broken
        assert broken and kept, [(t.instance_id, patch_paths(t.patch)) for t in tasks]

        new_id = install_depfast(docker_client, tag)
        second_run = corpus_flow(jobs, settings)
        second = second_run.by_name()["depcalc"]
        assert second.error is None, second.error
        report = second.reverify
        assert report is not None and not report.undecided, report
        assert {r.instance_id for r in report.retired} == broken, report.lines()
        assert {r.retire.value for r in report.retired} == {"no_op"}
        assert set(report.held) == kept
        assert second.summary.judged == 0  # nothing new: only re-verified
        assert {t.instance_id for t in store.rows("tasks", "depcalc")} == kept
        assert {r.instance_id for r in store.rows("retired", "depcalc")} == broken
        assert {r.reason for r in store.rows("retired")} == {"retired:no_op"}
        assert all(t.confidence_record.reverified == 1 for t in store.rows("tasks"))
        assert states.load("depcalc").images == {tag: new_id}
        assert f"{len(kept)} held, {len(broken)} retired" in markdown(second_run)

        # rebuilt once more, and re-verified by hand: the corpus state learns of it
        again_id = install_depfast(docker_client, tag)
        result = CliRunner().invoke(app, ["dataset", "reverify", "--dataset", str(settings.out)])
        assert result.exit_code == 0, result.output
        assert f"{len(kept)} held, 0 retired" in result.stdout, result.stdout
        assert "corpus state: the environments now recorded for depcalc" in result.stdout
        assert states.load("depcalc").images == {tag: again_id}
        assert all(t.confidence_record.reverified == 2 for t in store.rows("tasks"))

        # so the next run finds nothing changed since, re-verifies nothing, and judges no
        # retired task again
        third = corpus_flow(jobs, settings).by_name()["depcalc"]
        assert third.error is None and third.reverify is None, third.error
        # a retired candidate is never judged again; only new combinations of the tasks
        # that remain may be
        assert not set(third.judged_ids) & broken
        assert set(third.summary.per_generator) <= {"combined"}, third.summary.per_generator
        assert states.load("depcalc").images == {tag: again_id}
    finally:
        if tag:
            docker_client.images.remove(tag, force=True)
