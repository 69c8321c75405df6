"""The simulator's self-signed TLS material: one CA and one leaf for 127.0.0.1/localhost per process."""

from __future__ import annotations

import atexit
import shutil
import ssl
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TlsFiles:
    cert: Path  # leaf + chain (PEM)
    key: Path
    ca: Path  # the CA certificate (PEM), for clients that want to verify


_lock = threading.Lock()
_files: TlsFiles | None = None


def tls_files() -> TlsFiles:
    """Made once per process (trustme, ECDSA: milliseconds), removed at exit."""
    global _files
    with _lock:
        if _files is None:
            import trustme

            ca = trustme.CA(organization_name="agy simulator")
            leaf = ca.issue_cert("127.0.0.1", "localhost", common_name="127.0.0.1")
            root = Path(tempfile.mkdtemp(prefix="agy-sim-tls-"))
            atexit.register(shutil.rmtree, root, True)
            cert, key, ca_path = root / "cert.pem", root / "key.pem", root / "ca.pem"
            cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
            key.write_bytes(leaf.private_key_pem.bytes())
            ca_path.write_bytes(ca.cert_pem.bytes())
            _files = TlsFiles(cert, key, ca_path)
        return _files


def client_context() -> ssl.SSLContext:
    """An SSL context that trusts the simulator's CA (an alternative to ``verify=False``)."""
    ctx = ssl.create_default_context(cafile=str(tls_files().ca))
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    return ctx
