"""The Go layer: a Go toolchain from the Go module proxy, over the base image.

Debian's ``golang`` is too old for current ``go.mod`` files (bookworm has 1.19), and of the
registries reachable only the Go module proxy serves Go itself: as the module
``golang.org/toolchain`` at ``v0.0.1-go<version>.<os>-<arch>``, the zip that ``go`` fetches
when a ``go.mod`` asks for a newer toolchain. The layer fetches it with the base image's
Python, checks it against the SHA-256 pinned here (the host cannot reach ``sum.golang.org``),
and unpacks it in ``/opt/go``.

Go trusts the base image's CA bundle (``SSL_CERT_FILE``), so a proxy that re-signs TLS is
trusted as the host trusts it; ``GOPROXY`` is the host's, ``GOTOOLCHAIN=local`` keeps a
``go.mod`` asking for a newer Go from downloading one in the middle of a test run.
"""

from __future__ import annotations

import json
import os

from repogym.schemas.records import ImageLayer

GO_VERSION = "1.26.8"
GO_HOME = "/opt/go"
GO_MINIMUM = (1, 22)  # what the local provider needs on the host
SHA256 = {  # of golang.org/toolchain@v0.0.1-go<version>.linux-<arch>.zip on the proxy
    ("1.26.8", "amd64"): "30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7",
    ("1.26.8", "arm64"): "02b36b6787b3ac767668f630e2998df45a3b1f9ffee08d1bf3ef6487cd658d99",
}

_FETCH = r'''
import hashlib, io, json, os, platform, shutil, sys, urllib.request, zipfile

version, home, sums = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
arch = {"x86_64": "amd64", "aarch64": "arm64"}[platform.machine()]
proxy = next((p for p in os.environ.get("GOPROXY", "").split(",")
              if p.startswith("http")), "https://proxy.golang.org").rstrip("/")
name = f"v0.0.1-go{version}.linux-{arch}"
with urllib.request.urlopen(f"{proxy}/golang.org/toolchain/@v/{name}.zip", timeout=900) as r:
    data = r.read()
if hashlib.sha256(data).hexdigest() != sums[arch]:
    sys.exit(f"go{version} ({arch}): the zip does not match the pinned SHA-256")
prefix = f"golang.org/toolchain@{name}/"
tmp = home + ".tmp"
shutil.rmtree(tmp, ignore_errors=True)
with zipfile.ZipFile(io.BytesIO(data)) as zf:
    for info in zf.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        dest = os.path.join(tmp, info.filename[len(prefix):])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with zf.open(info) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)
        os.chmod(dest, (info.external_attr >> 16) & 0o777 or 0o644)
os.rename(tmp, home)
'''


def go_layer(version: str = GO_VERSION) -> ImageLayer:
    """The layer that puts Go ``version`` in ``/opt/go``."""
    sums = {arch: digest for (v, arch), digest in SHA256.items() if v == version}
    script = "\n".join([
        "set -euo pipefail",
        f"python3 - {version} {GO_HOME} '{json.dumps(sums)}' <<'PY'",
        _FETCH.strip(),
        "PY",
        f"rm -rf {GO_HOME}/test {GO_HOME}/api {GO_HOME}/doc",
        f"{GO_HOME}/bin/go version",
    ])
    env = [("PATH", f"{GO_HOME}/bin:$PATH"), ("GOTOOLCHAIN", "local"),
           ("GOFLAGS", "-buildvcs=false"), ("CGO_ENABLED", "0")]
    proxy = os.environ.get("GOPROXY")
    if proxy:
        env.append(("GOPROXY", proxy))
    major, minor = GO_MINIMUM
    return ImageLayer(
        name=f"go-{version}", script=script, env=tuple(env),
        host_check=("go version | awk '{split(substr($3,3),v,\".\"); "
                    f"exit !(v[1]>{major} || (v[1]=={major} && v[2]>={minor}))}}'"))


__all__ = ["GO_HOME", "GO_VERSION", "go_layer"]
