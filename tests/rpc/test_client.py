"""RpcClient against a real TLS stub server (hypercorn; the client speaks HTTP/1.1)."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from agy_harness.adapters.rpc.client import CSRF_HEADER, RpcClient, check_loopback, error_from_response
from agy_harness.adapters.rpc.codec import FLAG_COMPRESSED, FLAG_END_STREAM, EnvelopeDecoder, encode_envelope
from agy_harness.adapters.rpc.errors import (
    CompressedFrameRefused,
    NonLoopbackError,
    RpcBadResponse,
    RpcError,
    RpcInputNotRegistered,
    RpcMethodNotFound,
    RpcTimeout,
    RpcUnreachable,
    StreamBroken,
)
from agy_harness.ports.errors import MethodMissing

from .stub import Reply, Request, StubServer, const


@pytest.mark.parametrize(
    "url",
    [
        "https://10.0.0.1:1234",
        "https://example.com",
        "https://127.0.0.1.example.com:443",
        "https://[2001:db8::1]:80",
        "ftp://127.0.0.1:21",
        "https://0.0.0.0:8080",
        "not a url",
    ],
)
async def test_non_loopback_refused_before_any_byte(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: attempts.append(a))

    async def record(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(asyncio.get_running_loop(), "create_connection", record)
    with pytest.raises(NonLoopbackError):
        RpcClient(url)
    client = RpcClient("https://127.0.0.1:1")
    with pytest.raises(NonLoopbackError):
        client.rebind(url)
    assert client.base_url == "https://127.0.0.1:1"
    await client.aclose()
    assert attempts == []


@pytest.mark.parametrize(
    "url", ["https://localhost:1", "https://127.0.0.1:1", "https://127.8.9.10:1", "https://[::1]:1",
            "https://[::ffff:127.0.0.1]:1", "http://LOCALHOST:2"],
)  # fmt: skip
def test_loopback_accepted(url: str) -> None:
    assert check_loopback(url).port in (1, 2)


async def test_unary_call_uses_http11_and_connect_headers(stub: StubServer) -> None:
    stub.routes["Heartbeat"] = const(200, b'{"ok": true}')
    async with RpcClient(stub.base_url, csrf_token="tok") as client:
        assert await client.call("Heartbeat", {"a": 1}) == {"ok": True}
        assert client.http_version == "HTTP/1.1"
    (req,) = stub.requests
    assert req.http_version == "1.1"  # what the reference speaks to agy; see client.py for why
    assert req.headers["content-type"] == "application/json"
    assert req.headers["connect-protocol-version"] == "1"
    assert req.headers[CSRF_HEADER] == "tok"
    assert json.loads(req.body) == {"a": 1}


async def test_no_csrf_header_without_token(stub: StubServer) -> None:
    stub.routes["Heartbeat"] = const(200, b"{}")
    async with RpcClient(stub.base_url) as client:
        assert await client.call("Heartbeat", {}) == {}
    assert CSRF_HEADER not in stub.requests[0].headers


async def test_connection_is_pooled(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    dials: list[object] = []
    loop = asyncio.get_running_loop()
    real = loop.create_connection

    async def counting(*args: Any, **kwargs: Any) -> Any:
        dials.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(loop, "create_connection", counting)
    stub.routes["Heartbeat"] = const(200, b"{}")
    async with RpcClient(stub.base_url) as client:
        for _ in range(8):
            await client.call("Heartbeat", {})
    assert len(dials) == 1  # sequential calls reuse one keep-alive connection
    assert len(stub.requests) == 8


@pytest.mark.parametrize(
    ("status", "body", "cls", "code", "message"),
    [
        (404, b'{"code":"unimplemented","message":"no such method"}', RpcMethodNotFound, "unimplemented",
         "no such method"),
        (404, b"404 page not found", RpcMethodNotFound, "unimplemented", "404 page not found"),
        (500, b'{"code":"unknown","message":"input not registered for step 7"}', RpcInputNotRegistered,
         "unknown", "input not registered for step 7"),
        (500, b'{"code":"internal","message":"trajectory not found"}', RpcError, "internal",
         "trajectory not found"),
        (503, b"<html>busy</html>", RpcError, "unavailable", "<html>busy</html>"),
        (500, b"[1,2]", RpcError, "unknown", "[1,2]"),
    ],
)  # fmt: skip
async def test_error_mapping(
    stub: StubServer, status: int, body: bytes, cls: type[RpcError], code: str, message: str
) -> None:
    stub.routes["M"] = const(status, body)
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(RpcError) as info:
            await client.call("M", {})
    err = info.value
    assert type(err) is cls
    assert (err.method, err.status, err.code, err.message) == ("M", status, code, message)
    assert isinstance(err, MethodMissing) == (status == 404)  # the vocabulary's type: demote


@pytest.mark.parametrize("body", [b"[1]", b'"x"', b"{broken", b"null"])
async def test_non_object_success_is_an_error(stub: StubServer, body: bytes) -> None:
    stub.routes["M"] = const(200, body)
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(RpcBadResponse) as info:
            await client.call("M", {})
    assert info.value.status == 200


async def test_connection_refused_is_unreachable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with RpcClient(f"https://127.0.0.1:{port}") as client:
        with pytest.raises(RpcUnreachable) as info:
            await client.call("Heartbeat", {}, timeout=2)
    assert info.value.status == 0


async def test_timeout_is_typed(stub: StubServer) -> None:
    async def slow(_req: Request) -> Reply:
        await asyncio.sleep(5)
        return Reply()

    stub.routes["Slow"] = slow
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(RpcTimeout):
            await client.call("Slow", {}, timeout=0.2)


async def test_plain_http_listener_fails_over_tls() -> None:
    plain = StubServer(tls=False)
    async with plain.running(), RpcClient(f"https://127.0.0.1:{plain.port}") as client:
        with pytest.raises(RpcUnreachable):
            await client.call("Heartbeat", {}, timeout=2)


async def test_rebind_switches_port(stub: StubServer) -> None:
    other = StubServer({"Heartbeat": const(200, b'{"who":"other"}')})
    stub.routes["Heartbeat"] = const(200, b'{"who":"first"}')
    async with other.running(), RpcClient(stub.base_url) as client:
        assert await client.call("Heartbeat", {}) == {"who": "first"}
        client.rebind(other.base_url, csrf_token="new")
        assert await client.call("Heartbeat", {}) == {"who": "other"}
    assert other.requests[0].headers[CSRF_HEADER] == "new"


def test_error_from_response_handles_garbage() -> None:
    err = error_from_response("M", 502, b"\xff\xfe")
    assert err.code == "unavailable" and err.status == 502


# ----------------------------------------------------------------------------------------- stream


def streamer(*chunks: bytes, delay: float = 0.0) -> Reply:
    async def gen() -> AsyncIterator[bytes]:
        for chunk in chunks:
            if delay:
                await asyncio.sleep(delay)
            yield chunk

    return Reply(200, gen(), "application/connect+json")


def route_stream(stub: StubServer, *chunks: bytes) -> None:
    async def handler(_req: Request) -> Reply:
        return streamer(*chunks)

    stub.routes["S"] = handler


async def collect(client: RpcClient) -> list[object]:
    return [f.payload if f.bad is None else f.bad.value async for f in client.stream("S", {"id": "c"})]


async def test_stream_frames_then_clean_trailer(stub: StubServer) -> None:
    a, b = encode_envelope({"update": {"n": 1}}), encode_envelope({"update": {"n": 2}})
    route_stream(stub, a[:3], a[3:] + b[:7], b[7:] + encode_envelope({}, FLAG_END_STREAM))
    async with RpcClient(stub.base_url, csrf_token="t") as client:
        assert await collect(client) == [{"update": {"n": 1}}, {"update": {"n": 2}}]
        assert client.http_version == "HTTP/1.1"
    req = stub.requests[0]
    assert req.headers["content-type"] == "application/connect+json"
    assert req.headers[CSRF_HEADER] == "t"
    (frame,) = EnvelopeDecoder().feed(req.body)
    assert frame.payload == {"id": "c"}


async def test_stream_bad_frame_is_yielded_and_stream_continues(stub: StubServer) -> None:
    bad = b"\x00\x00\x00\x00\x03{x}"
    route_stream(stub, bad + b"\x00\x00\x00\x00\x02[]", encode_envelope({"ok": 1}),
                 encode_envelope({}, FLAG_END_STREAM))  # fmt: skip
    async with RpcClient(stub.base_url) as client:
        assert await collect(client) == ["invalid_json", "not_an_object", {"ok": 1}]


async def test_stream_trailer_error_raises(stub: StubServer) -> None:
    err = {"error": {"code": "not_found", "message": "trajectory not found"}}
    route_stream(stub, encode_envelope({"ok": 1}), encode_envelope(err, FLAG_END_STREAM))
    seen: list[object] = []
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(RpcError) as info:
            async for f in client.stream("S", {}):
                seen.append(f.payload)
    assert seen == [{"ok": 1}]
    assert (info.value.code, info.value.message) == ("not_found", "trajectory not found")
    assert not isinstance(info.value, StreamBroken)


async def test_stream_eof_without_trailer_is_broken(stub: StubServer) -> None:
    route_stream(stub, encode_envelope({"ok": 1}))
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(StreamBroken, match="without a trailer"):
            await collect(client)


async def test_stream_eof_mid_frame_is_broken(stub: StubServer) -> None:
    route_stream(stub, encode_envelope({"ok": 1}) + encode_envelope({"cut": "here"})[:-3])
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(StreamBroken, match="inside a frame"):
            await collect(client)


async def test_stream_compressed_frame_refused(stub: StubServer) -> None:
    route_stream(stub, b"\x01\x00\x00\x00\x02{}", encode_envelope({}, FLAG_END_STREAM))
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(CompressedFrameRefused):
            await collect(client)
    assert FLAG_COMPRESSED == 1


async def test_stream_http_404_is_method_not_found(stub: StubServer) -> None:
    async with RpcClient(stub.base_url) as client:
        with pytest.raises(RpcMethodNotFound):
            await collect(client)


async def test_stream_connection_dropped_mid_body_is_broken(tmp_path: Path) -> None:
    """A raw TLS HTTP/1.1 server that sends one frame of a chunked body and then drops the connection."""
    cert = trustme.CA().issue_cert("127.0.0.1")
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(ctx)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        frame = encode_envelope({"ok": 1})
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/connect+json\r\n"
            b"transfer-encoding: chunked\r\n\r\n" + f"{len(frame):x}\r\n".encode() + frame + b"\r\n"
        )
        await writer.drain()
        writer.transport.abort()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=ctx)
    port = server.sockets[0].getsockname()[1]
    seen: list[object] = []
    try:
        async with RpcClient(f"https://127.0.0.1:{port}") as client:
            with pytest.raises(StreamBroken):
                async for frame in client.stream("S", {}):
                    seen.append(frame.payload)
    finally:
        server.close()
        await server.wait_closed()
    assert seen == [{"ok": 1}]


async def test_stream_has_no_read_deadline(stub: StubServer) -> None:
    async def handler(_req: Request) -> Reply:
        return streamer(encode_envelope({"late": 1}), encode_envelope({}, FLAG_END_STREAM), delay=0.4)

    stub.routes["S"] = handler
    async with RpcClient(stub.base_url, timeout=0.1) as client:
        assert await collect(client) == [{"late": 1}]


async def test_a_broken_stream_or_a_timeout_drops_the_pool(stub: StubServer) -> None:
    route_stream(stub, encode_envelope({"ok": 1}))

    async def slow(_req: Request) -> Reply:
        await asyncio.sleep(5)
        return Reply()

    stub.routes["Slow"] = slow
    stub.routes["Heartbeat"] = const(200, b"{}")
    async with RpcClient(stub.base_url) as client:
        assert await client.call("Heartbeat", {}) == {}
        assert client.pool_resets == 0
        with pytest.raises(StreamBroken):
            await collect(client)
        assert client.pool_resets == 1 and client._retired == []  # the old pool is closed, not leaked
        with pytest.raises(RpcTimeout):
            await client.call("Slow", {}, timeout=0.2)
        assert client.pool_resets == 2
        assert await client.call("Heartbeat", {}) == {}  # a fresh connection works


async def test_a_retired_pool_waits_for_its_in_flight_calls(stub: StubServer) -> None:
    release = asyncio.Event()

    async def held(_req: Request) -> Reply:
        await release.wait()
        return Reply(200, b'{"done": true}')

    stub.routes["Held"] = held
    async with RpcClient(stub.base_url) as client:
        call = asyncio.create_task(client.call("Held", {}))
        while not stub.requests:
            await asyncio.sleep(0.01)
        client.reset_pool()
        release.set()
        assert await call == {"done": True}  # not cut by the reset
        assert client._retired == []


async def test_a_closed_client_opens_no_connection(stub: StubServer) -> None:
    """A call after ``aclose`` (a background read that outlived its session) is refused: it opened a
    new connection pool that nobody closed ("Unclosed client session" at exit)."""
    stub.routes["Heartbeat"] = const(200, b"{}")
    route_stream(stub, encode_envelope({"ok": 1}), encode_envelope({}, FLAG_END_STREAM))
    client = RpcClient(stub.base_url)
    assert await client.call("Heartbeat", {}) == {}
    await client.aclose()
    with pytest.raises(RpcUnreachable, match="closed"):
        await client.call("Heartbeat", {})
    with pytest.raises(RpcUnreachable, match="closed"):
        await collect(client)
    with pytest.raises(RpcUnreachable, match="closed"):
        await client.stream_opens("StreamAgentStateUpdates", {})
    assert client._pool is None and client._retired == []
    assert len(stub.requests) == 1  # only the call before aclose reached agy
