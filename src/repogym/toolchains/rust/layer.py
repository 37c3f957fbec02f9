"""The Rust layer: ``rustc`` and ``cargo`` from Debian, over the base image.

rustup's servers (static.rust-lang.org) are out of reach, and Debian's own ``rustc`` is
too old in bookworm (1.63) for current editions. But Debian ships, for every release it
supports, ``rustc-web`` and ``cargo-web``: the toolchain its Firefox and Thunderbird
security updates are built with, kept recent in the ``-security`` suite (1.85 in
bookworm's main, 1.96 in bookworm-security as of 2026) and built for that very release,
so nothing of the base image is replaced (no packages from a newer release mixed in).
The layer adds the base image's own ``<codename>-security`` suite, installs the two
(with ``gcc`` and the C library headers, the linker they need; the base image's CA
bundle -- the host's -- kept as it was) and checks that the
``rustc`` it got is at least :data:`RUST_MINIMUM`; where a release has no ``-web``
packages it takes plain ``rustc`` and ``cargo``, under the same check.

The version is whatever the suite holds when the layer is built (Debian keeps one), and
the layer image is built once per content and then reused: ``rustc --version`` in its
build log says which one an environment got. apt checks the packages' signatures.

The local provider runs the host's toolchain instead (``host_check``: ``cargo`` at least
:data:`RUST_MINIMUM`).
"""

from __future__ import annotations

from repogym.schemas.records import ImageLayer

RUST_MINIMUM = (1, 80)  # what the layer and the local provider need: edition 2021, MSRV-era crates
LAYER_NAME = "rust-debian"

_SCRIPT = r"""set -euo pipefail
. /etc/os-release
if [ "${ID:-}" != debian ] || [ -z "${VERSION_CODENAME:-}" ]; then
  echo "the Rust layer installs Debian's rustc: the base image is ${PRETTY_NAME:-not Debian}" >&2
  exit 1
fi
echo "deb http://deb.debian.org/debian-security ${VERSION_CODENAME}-security main" \
  > /etc/apt/sources.list.d/repogym-rust-security.list
export DEBIAN_FRONTEND=noninteractive
ca=/etc/ssl/certs/ca-certificates.crt
cp -p "$ca" /tmp/repogym-ca.crt  # the host's bundle: apt's triggers would rebuild Debian's
apt-get update -qq
if apt-cache show cargo-web >/dev/null 2>&1; then pkgs="cargo-web rustc-web"
else pkgs="cargo rustc"; fi
apt-get install -y -qq --no-install-recommends $pkgs gcc libc6-dev >/dev/null
rm -rf /var/lib/apt/lists/*
cp -p /tmp/repogym-ca.crt "$ca" && rm -f /tmp/repogym-ca.crt
rustc --version && cargo --version
"""


def version_check(command: str, minimum: tuple[int, int] = RUST_MINIMUM) -> str:
    """A shell test that ``<command> --version`` says at least ``minimum``."""
    major, minor = minimum
    return (f"{command} --version | awk '{{split($2,v,\".\"); "
            f"exit !(v[1]>{major} || (v[1]=={major} && v[2]>={minor}))}}'")


def rust_layer() -> ImageLayer:
    """The layer that puts Debian's newest ``rustc``/``cargo`` of the base's release in
    ``/usr/bin``."""
    major, minor = RUST_MINIMUM
    check = (f"{version_check('rustc')} || {{ echo \"rustc $(rustc --version) is older than "
             f"{major}.{minor}\" >&2; exit 1; }}")
    return ImageLayer(name=LAYER_NAME, script=_SCRIPT + check + "\n",
                      env=(("CARGO_TERM_COLOR", "never"),),
                      host_check=version_check("cargo"))


__all__ = ["LAYER_NAME", "RUST_MINIMUM", "rust_layer", "version_check"]
