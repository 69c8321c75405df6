"""The real-omnigent fixture itself: the venv is omnigent 0.19.1 on Python 3.12, the server answers on
127.0.0.1, a session created the way `omnigent agy` does accepts an item and stores exactly that."""

from __future__ import annotations

import subprocess

import httpx

from tests.real_omnigent import OMNIGENT_VERSION, create_session, find_python312, omnigent_venv


def test_the_venv_runs_omnigent_0_19_1_on_python_3_12(omnigent_server: str) -> None:
    python = omnigent_venv() / "bin" / "python"
    out = subprocess.run(
        [
            str(python),
            "-c",
            "import sys, importlib.metadata as m; print(sys.version_info[:2] >= (3, 12), m.version('omnigent'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["True", OMNIGENT_VERSION]
    assert (
        subprocess.run(
            [find_python312(), "-c", "import sys; assert sys.version_info[:2] == (3, 12)"]
        ).returncode
        == 0
    )


def test_the_server_listens_on_loopback_and_stores_an_item(omnigent_server: str) -> None:
    assert omnigent_server.startswith("http://127.0.0.1:")
    assert httpx.get(f"{omnigent_server}/health").json() == {"status": "ok"}
    sid = create_session(omnigent_server)
    item = {
        "type": "external_conversation_item",
        "data": {
            "item_type": "message",
            "item_data": {"role": "user", "content": [{"type": "input_text", "text": "hello"}]},
            "source_id": "fixture-check/0",
        },
    }
    assert httpx.post(f"{omnigent_server}/v1/sessions/{sid}/events", json=item).status_code == 202
    items = httpx.get(f"{omnigent_server}/v1/sessions/{sid}/items").json()["data"]
    assert [(i["type"], i["role"], i["content"][0]["text"]) for i in items] == [("message", "user", "hello")]
