"""A Docker engine that looks remote: a TCP (optionally TLS) proxy to the local socket.

There is no second machine in CI, so :class:`EngineProxy` listens on ``127.0.0.1:<port>``
and forwards every connection, byte for byte, to ``/var/run/docker.sock``. A client made
with ``DOCKER_HOST=tcp://127.0.0.1:<port>`` then talks HTTP over TCP exactly as it would
to a remote engine (hijacked exec streams included), and the proxy counts what went
through it: connections, bytes each way, and the request lines it saw (``POST
/v1.41/containers/create`` ...), sniffed from the client's side of the stream.

With ``tls=`` the proxy terminates TLS and requires a client certificate signed by the
same CA, as ``dockerd --tlsverify`` does (:func:`make_tls_material` writes ``ca.pem``,
``cert.pem`` and ``key.pem`` the way ``DOCKER_CERT_PATH`` expects them).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
import socket
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path

ENGINE_SOCKET = "/var/run/docker.sock"
REQUEST_LINE = re.compile(rb"(GET|POST|PUT|DELETE|HEAD) (/[^ \r\n]{1,2048}) HTTP/1\.[01]\r\n")
CARRY = 4096  # bytes of the previous chunk kept, so a request line split across reads is seen


@dataclass
class Traffic:
    """What went through the proxy."""

    connections: int = 0
    bytes_up: int = 0  # client -> engine
    bytes_down: int = 0  # engine -> client
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path)

    def paths(self, method: str, pattern: str) -> list[str]:
        """The request paths of ``method`` matching the regex ``pattern``."""
        return [p for m, p in self.requests if m == method and re.search(pattern, p)]


class EngineProxy:
    """``tcp://127.0.0.1:<port>`` forwarding to a unix socket; see the module docstring."""

    def __init__(self, target: str = ENGINE_SOCKET, tls: ssl.SSLContext | None = None) -> None:
        self.target, self.tls = target, tls
        self.traffic = Traffic()
        self._lock = threading.Lock()
        self._live: list[socket.socket] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="engine-proxy").start()

    @property
    def url(self) -> str:
        """The ``DOCKER_HOST`` value that reaches the engine through this proxy."""
        return f"tcp://127.0.0.1:{self.port}"

    def close(self) -> None:
        """Stop listening and cut every open connection (the engine 'goes away')."""
        self._closed = True
        try:  # wakes the accepting thread: closing alone would leave its accept() running
            self._server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._server.close()
        with self._lock:
            live, self._live = self._live, []
        for sock in live:
            _shut(sock)

    def __enter__(self) -> "EngineProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            if self.tls is not None:
                client = self.tls.wrap_socket(client, server_side=True)
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.target)
        except (OSError, ssl.SSLError):
            _shut(client)
            return
        with self._lock:
            self.traffic.connections += 1
            self._live += [client, upstream]
        down = threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True)
        down.start()
        self._pump(client, upstream, True)
        down.join()
        _shut(client)
        _shut(upstream)

    def _pump(self, src: socket.socket, dst: socket.socket, up: bool) -> None:
        carry = b""
        try:
            while data := src.recv(65536):
                dst.sendall(data)
                with self._lock:
                    if up:
                        self.traffic.bytes_up += len(data)
                    else:
                        self.traffic.bytes_down += len(data)
                if up:
                    carry = self._sniff(carry + data)
        except OSError:
            pass
        finally:
            _half_close(dst)

    def _sniff(self, buf: bytes) -> bytes:
        found = [(m.group(1).decode(), m.group(2).decode("latin-1"))
                 for m in REQUEST_LINE.finditer(buf)]
        with self._lock:
            self.traffic.requests += found
        if found:  # everything up to the last request line has been seen
            last = list(REQUEST_LINE.finditer(buf))[-1]
            buf = buf[last.end():]
        return buf[-CARRY:]


def _half_close(sock: socket.socket) -> None:
    """Tell the other side this direction is done (TLS cannot half-close: close it)."""
    try:
        if isinstance(sock, ssl.SSLSocket):
            _shut(sock)
        else:
            sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


# -- TLS, as dockerd --tlsverify and DOCKER_CERT_PATH expect it ----------------------------


def make_tls_material(cert_dir: Path) -> ssl.SSLContext:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, in ``cert_dir``.

    ``cert_dir`` gets ``ca.pem``, ``cert.pem`` and ``key.pem`` (the client's, as
    ``DOCKER_CERT_PATH`` wants them); returns the server's context, which requires a
    client certificate signed by the CA.
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    now = dt.datetime.now(dt.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())

    def issue(subject: str, key: ec.EllipticCurvePrivateKey, *, ca: bool = False,
              usage: x509.ObjectIdentifier | None = None,
              san: x509.GeneralName | None = None) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(name(subject))
                   .issuer_name(name("repogym-test-ca")).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5))
                   .not_valid_after(now + dt.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if usage is not None:
            builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        if san is not None:
            builder = builder.add_extension(x509.SubjectAlternativeName([san]), critical=False)
        return builder.sign(ca_key, hashes.SHA256())

    def pem(obj: object) -> bytes:
        if isinstance(obj, x509.Certificate):
            return obj.public_bytes(serialization.Encoding.PEM)
        assert isinstance(obj, ec.EllipticCurvePrivateKey)
        return obj.private_bytes(serialization.Encoding.PEM,
                                 serialization.PrivateFormat.TraditionalOpenSSL,
                                 serialization.NoEncryption())

    server_key, client_key = ec.generate_private_key(ec.SECP256R1()), \
        ec.generate_private_key(ec.SECP256R1())
    ca_cert = issue("repogym-test-ca", ca_key, ca=True)
    server_cert = issue("127.0.0.1", server_key, usage=ExtendedKeyUsageOID.SERVER_AUTH,
                        san=x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    client_cert = issue("repogym-client", client_key, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    cert_dir.mkdir(parents=True, exist_ok=True)
    (cert_dir / "ca.pem").write_bytes(pem(ca_cert))
    (cert_dir / "cert.pem").write_bytes(pem(client_cert))
    (cert_dir / "key.pem").write_bytes(pem(client_key))
    (cert_dir / "server-cert.pem").write_bytes(pem(server_cert))
    (cert_dir / "server-key.pem").write_bytes(pem(server_key))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert_dir / "server-cert.pem", cert_dir / "server-key.pem")
    ctx.load_verify_locations(cert_dir / "ca.pem")
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
