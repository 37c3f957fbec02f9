"""The base image and env image names."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from repogym.config import DEFAULT_BASE_IMAGE
from repogym.errors import ImageBuildError
from repogym.sandboxes.images import ensure_base_image, env_image_tag
from repogym.schemas.records import EnvSpec


def spec(repo: str) -> EnvSpec:
    return EnvSpec(repo=repo, commit="c" * 40, base_image="b", toolchain="python",
                   install_steps=("pip install -e .",), recipe_version="1")


def test_env_image_tag_is_a_valid_docker_reference() -> None:
    s = spec("Pallets__Flask.git")
    assert env_image_tag(s) == f"repogym-env/pallets-flask-git:{s.digest()}"
    assert env_image_tag(spec("--")).startswith("repogym-env/repo:")


def test_env_image_tag_follows_the_recipe() -> None:
    a, b = spec("x"), spec("x").model_copy(update={"recipe_version": "2"})
    assert env_image_tag(a) != env_image_tag(b)
    assert env_image_tag(a) == env_image_tag(spec("x"))


@pytest.mark.docker
def test_second_ensure_is_a_no_op(docker_client: Any, base_image: str) -> None:
    assert ensure_base_image(base_image, client=docker_client) is False


@pytest.mark.docker
def test_base_image_is_labelled(docker_client: Any, base_image: str) -> None:
    image = docker_client.images.get(base_image)
    if base_image == DEFAULT_BASE_IMAGE:
        assert image.labels.get("repogym") == "base"
        env = dict(e.split("=", 1) for e in image.attrs["Config"]["Env"])
        assert env["LANG"] == "C.UTF-8" and env["PIP_DISABLE_PIP_VERSION_CHECK"] == "1"
        assert env["PIP_CERT"] == env["SSL_CERT_FILE"] == env["REQUESTS_CA_BUNDLE"]


@pytest.mark.docker
def test_base_image_has_user_and_reaches_pypi(docker_client: Any, base_image: str) -> None:
    script = ("id repogym && command -v git pkill patch && "
              "python3 -m pip download -q --no-deps -d /tmp/d iniconfig && ls /tmp/d")
    out = docker_client.containers.run(base_image, ["bash", "-c", script], remove=True,
                                       labels={"repogym": "sandbox"})
    text = out.decode()
    assert "uid=1000(repogym)" in text and "iniconfig" in text


@pytest.mark.docker
def test_unpullable_image_is_an_image_build_error(docker_client: Any) -> None:
    with pytest.raises(ImageBuildError, match="could not be pulled"):
        ensure_base_image("repogym-test.invalid/nope:1", client=docker_client)


@pytest.mark.docker
@pytest.mark.skipif(shutil.which("debootstrap") is None, reason="needs debootstrap")
def test_failed_build_keeps_its_log_and_the_old_image(docker_client: Any, base_image: str) -> None:
    before = docker_client.images.get(DEFAULT_BASE_IMAGE).id if base_image == DEFAULT_BASE_IMAGE \
        else None
    with pytest.raises(ImageBuildError, match="debootstrap") as info:
        ensure_base_image(DEFAULT_BASE_IMAGE, client=docker_client, force=True,
                          mirror="http://127.0.0.1:9/debian")
    log_path = Path(str(info.value).rsplit("log: ", 1)[1].rstrip(")"))
    assert log_path.is_file() and "debootstrap" in log_path.read_text()
    log_path.unlink()
    if before is not None:
        assert docker_client.images.get(DEFAULT_BASE_IMAGE).id == before
