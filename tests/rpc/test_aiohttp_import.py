"""aiohttp as the RPC client imports it (adapters/rpc/aiohttp_import.py): the two default TLS contexts
aiohttp builds at its import hold no CA certificate until one is used (before: the whole system bundle
parsed twice, ~60 ms of CPU at every start of a command that reaches agy), and once used they verify
as aiohttp's defaults always did: a self-signed server is refused by the verified default and reached
by the unverified one. In a process of its own: its first import of aiohttp is the subject."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r"""
import asyncio, json, ssl
import agy_harness.adapters.rpc.client  # noqa: F401  (imports aiohttp the way every command does)
import aiohttp
import aiohttp.connector as connector
from agy_harness.adapters.simulator.tls import server_context

verified, unverified = connector._SSL_CONTEXT_VERIFIED, connector._SSL_CONTEXT_UNVERIFIED
said = {
    "at_import": [c.cert_store_stats()["x509_ca"] for c in (verified, unverified)],
    "modes": [verified.verify_mode == ssl.CERT_REQUIRED, verified.check_hostname,
              unverified.verify_mode == ssl.CERT_NONE, unverified.check_hostname],
    "restored": [getattr(ssl.SSLContext, name).__qualname__
                 for name in ("load_default_certs", "set_default_verify_paths")],
    "system": ssl.create_default_context().cert_store_stats()["x509_ca"],
}


async def serve(reader, writer):
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_context(["http/1.1"]))
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    async with aiohttp.ClientSession() as session:
        try:
            async with session.get(url) as response:  # aiohttp's verified default
                said["verified_default"] = f"reached: {response.status}"
        except aiohttp.ClientConnectorCertificateError as exc:
            said["verified_default"] = "refused: " + type(exc.certificate_error).__name__
        async with session.get(url, ssl=False) as response:  # its unverified default
            said["unverified_default"] = f"reached: {response.status} {await response.text()}"
    server.close()
    await server.wait_closed()


asyncio.run(main())
said["after_use"] = [c.cert_store_stats()["x509_ca"] for c in (verified, unverified)]
print(json.dumps(said))
"""


def test_aiohttp_loads_no_ca_certificate_until_its_default_contexts_are_used() -> None:
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    said = json.loads(run.stdout)
    assert said["system"] > 0  # (a machine without CA certificates would check nothing here)
    assert said["at_import"] == [0, 0], said  # before: both held the system's bundle
    assert said["modes"] == [True, True, True, False], said
    assert said["restored"] == ["SSLContext.load_default_certs", "_SSLContext.set_default_verify_paths"]
    assert said["verified_default"] == "refused: SSLCertVerificationError", said
    assert said["unverified_default"] == "reached: 200 ok", said
    assert said["after_use"] == [said["system"], said["system"]], said  # loaded, as aiohttp made them
