"""The Java layer: a JDK from Debian's packages and Maven from Maven Central, over the base
image.

The JDK is Debian bookworm's ``openjdk-17-jdk-headless`` (bookworm has no other; a project
whose build needs an older javac gets what :mod:`~repogym.toolchains.java.maven` can adapt,
no more). Maven is *not* Debian's: bookworm's 3.8.7 fails the ``requireMavenVersion [3.9,)``
rule of current parent POMs (Apache Commons', among others), so the layer fetches the
Apache Maven distribution from Maven Central (``org.apache.maven:apache-maven:<version>:
bin.tar.gz``, the archive Apache publishes there) with the base image's Python, checks it
against the SHA-512 pinned here and unpacks it in ``/opt/maven``.

Java does not read the base image's PEM bundle (the host's CAs, a proxy that re-signs TLS
among them): Debian's ``ca-certificates-java`` builds the JKS trust store only from the
certificate files under ``/etc/ssl/certs``, and the host's bundle replaced the bundle file
alone. The layer adds every certificate of the bundle to the JKS, so Maven trusts Maven
Central as the host does.
"""

from __future__ import annotations

from repogym.schemas.records import ImageLayer

JDK_PACKAGE = "openjdk-17-jdk-headless"
JAVA_MINIMUM = 17  # what the local provider needs on the host
MAVEN_VERSION = "3.9.16"
MAVEN_MINIMUM = (3, 6)
MAVEN_HOME = "/opt/maven"
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
SHA512 = {  # of apache-maven-<version>-bin.tar.gz on Maven Central
    "3.9.16": "831a8591fe20c8243b1dbe7d71e3244f31d1665b0804b2e825e38cbbe5ce0cafb8338851f907807355"
              "68773e0a6cd07bbec107cda0b896b008b861075358b6f6",
}
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
JKS = "/etc/ssl/certs/java/cacerts"

_FETCH = r'''
import hashlib, io, os, shutil, sys, tarfile, urllib.request

version, home, central, want = sys.argv[1:5]
url = f"{central}/org/apache/maven/apache-maven/{version}/apache-maven-{version}-bin.tar.gz"
with urllib.request.urlopen(url, timeout=900) as r:
    data = r.read()
if hashlib.sha512(data).hexdigest() != want:
    sys.exit(f"apache-maven {version}: the archive does not match the pinned SHA-512")
tmp = home + ".tmp"
shutil.rmtree(tmp, ignore_errors=True)
with tarfile.open(fileobj=io.BytesIO(data)) as tar:
    if hasattr(tarfile, "tar_filter"):
        tar.extractall(tmp, filter="tar")
    else:
        tar.extractall(tmp)
os.rename(os.path.join(tmp, f"apache-maven-{version}"), home)
os.rmdir(tmp)
'''

_TRUST = r'''
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;

public class Trust {
    public static void main(String[] args) throws Exception {
        char[] password = "changeit".toCharArray();
        KeyStore store = KeyStore.getInstance("JKS");
        try (FileInputStream in = new FileInputStream(args[0])) {
            store.load(in, password);
        }
        int added = 0;
        try (FileInputStream in = new FileInputStream(args[1])) {
            for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                if (store.getCertificateAlias(c) == null) {
                    store.setCertificateEntry("repogym-bundle-" + added++, c);
                }
            }
        }
        try (FileOutputStream out = new FileOutputStream(args[0])) {
            store.store(out, password);
        }
        System.out.println("trust store: " + added + " certificates added from " + args[1]);
    }
}
'''


def java_layer(maven: str = MAVEN_VERSION) -> ImageLayer:
    """The layer with Debian's JDK 17 and Maven ``maven`` in ``/opt/maven``."""
    script = "\n".join([
        "set -euo pipefail",
        "export DEBIAN_FRONTEND=noninteractive",
        "apt-get update -qq",
        f"apt-get install -y -qq --no-install-recommends {JDK_PACKAGE} >/dev/null",
        "rm -rf /var/lib/apt/lists/*",
        f"python3 - {maven} {MAVEN_HOME} {MAVEN_CENTRAL} {SHA512[maven]} <<'PY'",
        _FETCH.strip(),
        "PY",
        "mkdir -p /tmp/repogym-trust && cat > /tmp/repogym-trust/Trust.java <<'JAVA'",
        _TRUST.strip(),
        "JAVA",
        f"java /tmp/repogym-trust/Trust.java {JKS} {CA_BUNDLE}",
        "rm -rf /tmp/repogym-trust",
        "java -version",
        f"{MAVEN_HOME}/bin/mvn -v",
    ])
    major, minor = MAVEN_MINIMUM
    return ImageLayer(
        name=f"jdk17-maven-{maven}", script=script,
        env=(("PATH", f"{MAVEN_HOME}/bin:$PATH"),),
        host_check=(
            "java -version 2>&1 | awk -F'\"' '/version/ {split($2,v,\".\"); "
            f"exit !(v[1]>={JAVA_MINIMUM})}}' && "
            "mvn -v 2>/dev/null | awk '/^Apache Maven/ {split($3,v,\".\"); "
            f"ok=(v[1]>{major} || (v[1]=={major} && v[2]>={minor}))}} END {{exit !ok}}'"))


__all__ = ["MAVEN_HOME", "MAVEN_VERSION", "java_layer"]
