"""Settings: embedded defaults, overridable by ``REPOGYM_*`` environment variables or flags."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_BASE_IMAGE = "repogym/base:bookworm"


class Settings(BaseSettings):
    """Every knob of a run. ``REPOGYM_OUT=/data repogym run ...`` sets ``out``, etc."""

    model_config = SettingsConfigDict(env_prefix="REPOGYM_", extra="ignore")

    out: Path = Path("repogym-data")
    provider: str = "docker"
    base_image: str = DEFAULT_BASE_IMAGE
    baseline_runs: int = Field(3, ge=1)
    oracle_runs: int = Field(3, ge=1)
    # 0: no reward hacks tried; otherwise the whole probe set runs once per env image (and
    # verifier version), and each task is checked only for what differs per task
    probes: int = Field(2, ge=0)
    workers: int = Field(1, ge=1)  # sandboxes judging one repo's candidates in parallel
    warm_runner: bool = True  # judge's test runs in a warm forking process (docker)
    max_candidates: int = Field(20, ge=0)
    max_combined: int = Field(5, ge=0)  # combinations of accepted bugs per run
    # the llm_* generators produce nothing unless a model is configured (REPOGYM_LLM_MODEL)
    generators: tuple[str, ...] = ("procedural", "mined", "llm_rewrite", "llm_modify")
    mine_last: int | None = Field(200, gt=0)  # mine the last N first-parent commits
    mine_since: str | None = None  # ... or those since a date
    mine_range: str | None = None  # ... or a revision range "A..B"
    max_mined: int = Field(20, ge=0)
    # corpus runs re-verify a repository's tasks whose environment changed under its ref
    # (an image rebuilt with newer dependencies): repogym.datasets.reverify.changed_images
    reverify_changed: bool = True
    seed: int = 0
    test_timeout: float = Field(600.0, gt=0)  # one whole test run, at most
    # one test, at most (each test's own limit comes from its baseline time: repogym.limits)
    per_test_timeout: float = Field(60.0, gt=0)
    install_timeout: float = Field(1200.0, gt=0)  # one install step
    memory_mb: int = 2048
    cpus: float = 1.0
    pids: int = 256
    # disk a sandbox may take beyond its image (docker: the container is stopped past it)
    disk_mb: int = Field(4096, gt=0)
    # disk an environment build may write (the install, its dependencies and caches);
    # docker: the build is stopped past it, and the repository is reported as failing
    build_disk_mb: int = Field(16384, gt=0)
    # the review queue's database (SQLAlchemy URL); None = SQLite at <out>/review.sqlite
    review_db_url: str | None = None
    # how long a reviewer's claim on a queued task lasts (renewed by claiming again)
    review_claim_minutes: float = 30.0
    # the share of newly queued tasks that need two reviewers (chosen by id hash, at import)
    review_double_fraction: float = 0.0
    # the CLI's reviewer token (from ``repogym review reviewer add``); required once a
    # reviewer is added or the database is shared (repogym.datasets.review.auth)
    review_token: str | None = None
    # where the local provider keeps the environments it builds (content-addressed, so one
    # folder serves several datasets, as the Docker engine's images do); None: in the cache
    local_envs: Path | None = None

    @property
    def cache_dir(self) -> Path:
        return self.out / ".cache"

    @property
    def local_envs_dir(self) -> Path:
        return self.local_envs or self.cache_dir / "local-envs"

    @property
    def logs_dir(self) -> Path:
        return self.out / "logs"
