"""The ``pure`` mark stays true: a test under it that opens a connection or starts a process fails
(tests/conftest.py). This module is one of them."""

from __future__ import annotations

import socket
import subprocess

import pytest


def test_a_pure_test_opens_no_connection_and_starts_no_process(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("pure") is not None
    with pytest.raises(AssertionError, match="a pure test does no I/O"):
        socket.create_connection(("127.0.0.1", 9), timeout=0.1)
    with pytest.raises(AssertionError, match="a pure test does no I/O"):
        subprocess.run(["true"], check=False)
