"""The Node.js layer: the runtime and npm from the npm registry, over the base image.

Debian's ``nodejs`` is too old for current projects (bookworm has 18), and no registry of
binaries but npm's is reachable. The npm registry serves Node.js itself as
``node-linux-<arch>`` (the official binary, as a package) and npm as ``npm``: the layer
fetches both with the base image's Python, checks each tarball against the registry's
``integrity`` (SHA-512), and unpacks them in ``/opt/node``. Package managers a project
pins (pnpm, yarn) come later, per environment, into its venv's ``bin``.

The base image's CA bundle (the host's) is handed to Node through
``NODE_EXTRA_CA_CERTS``, so a proxy that re-signs TLS is trusted as the host trusts it.
"""

from __future__ import annotations

from repogym.schemas.records import ImageLayer

NODE_VERSION = "20.20.2"
NPM_VERSION = "10.9.9"
NODE_HOME = "/opt/node"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"

_FETCH = r'''
import base64, hashlib, io, json, os, platform, shutil, sys, tarfile, urllib.request

REGISTRY = os.environ.get("npm_config_registry", "https://registry.npmjs.org").rstrip("/")
ARCH = {"x86_64": "x64", "aarch64": "arm64"}[platform.machine()]


def fetch(name, version):
    with urllib.request.urlopen(f"{REGISTRY}/{name}/{version}", timeout=120) as r:
        dist = json.load(r)["dist"]
    with urllib.request.urlopen(dist["tarball"], timeout=900) as r:
        data = r.read()
    algo, _, want = dist["integrity"].partition("-")
    if base64.b64encode(hashlib.new(algo, data).digest()).decode() != want:
        sys.exit(f"{name}@{version}: the tarball does not match the registry's integrity")
    return data


def unpack(data, dest):
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        if hasattr(tarfile, "tar_filter"):  # Python 3.11.4+
            tar.extractall(tmp, filter="tar")
        else:
            tar.extractall(tmp)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    os.rename(os.path.join(tmp, "package"), dest)
    shutil.rmtree(tmp)


unpack(fetch(f"node-linux-{ARCH}", sys.argv[1]), sys.argv[3])
unpack(fetch("npm", sys.argv[2]), os.path.join(sys.argv[3], "lib", "node_modules", "npm"))
'''


def node_layer(node: str = NODE_VERSION, npm: str = NPM_VERSION) -> ImageLayer:
    """The layer that puts Node.js ``node`` and npm ``npm`` in ``/opt/node``."""
    script = "\n".join([
        "set -euo pipefail",
        f"python3 - {node} {npm} {NODE_HOME} <<'PY'",
        _FETCH.strip(),
        "PY",
        f"ln -sf ../lib/node_modules/npm/bin/npm-cli.js {NODE_HOME}/bin/npm",
        f"ln -sf ../lib/node_modules/npm/bin/npx-cli.js {NODE_HOME}/bin/npx",
        f"rm -rf {NODE_HOME}/include {NODE_HOME}/share",
        f"export PATH={NODE_HOME}/bin:$PATH; node --version && npm --version",
    ])
    return ImageLayer(
        name=f"node-{node}", script=script,
        env=(("PATH", f"{NODE_HOME}/bin:$PATH"), ("NODE_EXTRA_CA_CERTS", CA_BUNDLE),
             ("npm_config_update_notifier", "false"), ("npm_config_fund", "false"),
             ("npm_config_audit", "false")),
        host_check=f"node -e 'process.exit(+process.versions.node.split(\".\")[0] >= "
                   f"{node.split('.')[0]} ? 0 : 1)' && npm --version")


__all__ = ["NODE_HOME", "NODE_VERSION", "NPM_VERSION", "node_layer"]
