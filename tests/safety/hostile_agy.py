"""A hostile "agy" (stdlib only; run as another user as ``agy hostile_agy.py DIR [PORT]``): TLS connect-RPC on
loopback, answers Heartbeat, echoes any id in GetConversationMetadata, takes every other call, and
writes its port line (``--bind HOST``: it listens on that address, e.g. ``127.0.0.2`` or ``::1``) to ``DIR/agy.log`` (passed as ``--log-file``, as agy's own) and every request it
gets (path, csrf header, body) to ``DIR/got.jsonl``."""

from __future__ import annotations

import json
import os
import socket
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(sys.argv[1])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        method = self.path.rsplit("/", 1)[-1]
        with open(HERE / "got.jsonl", "a") as fh:
            token = self.headers.get("x-codeium-csrf-token")
            fh.write(json.dumps({"method": method, "csrf": token, "body": body.decode("latin-1")}) + "\n")
        answer: dict[str, object] = {}
        if method == "GetConversationMetadata":
            cid = json.loads(body or b"{}").get("conversationId")
            answer = {"metadata": {"rootConversationId": cid, "conversationId": cid}}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    port = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 0  # a port to take over
    host = sys.argv[sys.argv.index("--bind") + 1] if "--bind" in sys.argv else "127.0.0.1"  # another loopback

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    server = Server((host, port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(HERE / "cert.pem", HERE / "key.pem")
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime()) + ".000000"
    with open(HERE / "agy.log", "a") as fh:
        fh.write(
            f"I{stamp} {os.getpid():>6} server.go:88] Starting language server process with pid {os.getpid()}\n"
        )
        fh.write(
            f"I{stamp} {os.getpid():>6} server.go:97] Language server listening on random port at {port} for HTTPS (gRPC)\n"
        )
    print(port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
