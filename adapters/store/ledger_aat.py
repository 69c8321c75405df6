"""The decision ledger as an Agent Audit Trail (IETF draft-sharif-agent-audit-trail, draft -04 as the
``aat-verify`` 0.1.0 reference verifier checks it), with its public keystore.

One trail for the whole ledger (one AAT "session": its ``session_id`` is derived from the ledger's
Ed25519 key): a genesis ``lifecycle``/``session_start`` record, one AAT record per ledger record (a
``decision`` as ``decision``/``pre_execution``, agy taking it as ``lifecycle``/``answer_delivered``,
what ran as ``tool_response``/``post_execution``), each carrying ``action_detail.ledger`` =
``{sequence, hash}`` of the ledger record it renders, and a closing ``lifecycle``/``session_end`` record
carrying the ledger's newest signed checkpoint (Ed25519, its public key) so a trail that was cut short
no longer matches it. Records are chained (``prev_hash`` = SHA-256 over the RFC 8785 canonical JSON of
the previous record) and each is signed ES256 (ECDSA P-256, the draft's signature; ``aat-verify``
knows no Ed25519) with this install's export key, whose thumbprint (RFC 7638) is ``signer_kid``; the
keystore maps it to the public key. ``trust_level`` is the integer 1 (``aat-verify`` 0.1.0 compares the
level as a number: the draft's "L1" text crashes it): the harness records for itself, one key signing.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)

from agy_harness.adapters.private_state import create_file, open_dir, read_own_file

from . import ledger_chain as C

ES256_KEY = "es256.key"
AGENT_ID = "urn:agy-harness:agy"
TRUST_LEVEL = 1
_OUTCOME = {
    "allow": "success",
    "choose": "success",
    "deny": "denied",
    "refuse": "denied",
    "timeout": "timeout",
}


def export_key(directory: Path) -> ec.EllipticCurvePrivateKey:
    """This install's ES256 export key (made on first export), 0600 in the ledger's directory."""
    with open_dir(directory) as fd:
        raw = read_own_file(ES256_KEY, dir_fd=fd, limit=8192)
        if raw is None:
            key = ec.generate_private_key(ec.SECP256R1())
            pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
            with contextlib.suppress(FileExistsError):
                create_file(ES256_KEY, pem, dir_fd=fd)
            raw = read_own_file(ES256_KEY, dir_fd=fd, limit=8192)
        assert raw is not None
        loaded = load_pem_private_key(raw, password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{directory / ES256_KEY} is not an ES256 key")
        return loaded


def _xy(public: ec.EllipticCurvePublicKey) -> dict[str, str]:
    nums = public.public_numbers()
    return {"x": C.b64u(nums.x.to_bytes(32, "big")), "y": C.b64u(nums.y.to_bytes(32, "big"))}


def thumbprint(public: ec.EllipticCurvePublicKey) -> str:
    """RFC 7638 JWK thumbprint of the P-256 key (the draft's ``signer_kid``)."""
    return C.b64u(hashlib.sha256(C.canonical({"crv": "P-256", "kty": "EC", **_xy(public)})).digest())


def keystore(key: ec.EllipticCurvePrivateKey) -> dict[str, Any]:
    return {thumbprint(key.public_key()): {"alg": "ES256", "jwk_x_y": _xy(key.public_key())}}


def _uuid(seed: str) -> str:
    """A version-4-shaped UUID derived from ``seed`` (the same record, the same id)."""
    return str(uuid.UUID(bytes=hashlib.sha256(seed.encode()).digest()[:16], version=4))


def _sign(record: dict[str, Any], key: ec.EllipticCurvePrivateKey, kid: str) -> dict[str, Any]:
    record = {**record, "sig_alg": "ES256", "signer_kid": kid}
    digest = hashlib.sha256(C.canonical(record)).digest()
    der = key.sign(digest, ec.ECDSA(utils.Prehashed(hashes.SHA256())))
    r, s = utils.decode_dss_signature(der)
    return {**record, "signature": C.b64u(r.to_bytes(32, "big") + s.to_bytes(32, "big"))}


def _detail(kind: str, body: dict[str, Any], ledger: dict[str, Any]) -> tuple[str, str, str, dict[str, Any]]:
    """(action_type, record_phase, outcome, action_detail) of a ledger record."""
    if kind == "decision":
        detail = {k: v for k, v in body.items() if k != "verdict"}
        detail.update(decision_type=body.get("verdict", "unknown"), ledger=ledger)
        return "decision", "pre_execution", _OUTCOME.get(str(body.get("verdict")), "failure"), detail
    if kind == "delivery":
        detail = {**body, "event": "answer_delivered", "ledger": ledger}
        return "lifecycle", "post_execution", "success" if body.get("taken") else "failure", detail
    detail = {
        **body,
        "tool_name": body.get("tool", ""),
        "response_hash": body.get("output_sha256", ""),
        "ledger": ledger,
    }
    return "tool_response", "post_execution", "failure" if body.get("error") else "success", detail


def trail(
    records: list[dict[str, Any]],
    checkpoint: dict[str, Any] | None,
    ledger_key: str,
    version: str,
    key: ec.EllipticCurvePrivateKey,
) -> Iterator[dict[str, Any]]:
    """The AAT records of the ledger's ``records`` (each a parsed, verified ledger record)."""
    kid = thumbprint(key.public_key())
    session = _uuid("agy-harness ledger " + ledger_key)
    genesis_id = _uuid(session + " start")
    prev: str | None = None
    first = records[0]["time"] if records else "1970-01-01T00:00:00.000Z"
    ids: dict[int, str] = {}

    def emit(fields: dict[str, Any]) -> dict[str, Any]:
        nonlocal prev
        base = {
            "agent_id": AGENT_ID,
            "agent_version": version,
            "session_id": session,
            "trust_level": TRUST_LEVEL,
            "prev_hash": prev,
        }
        record = _sign({**base, **fields}, key, kid)
        prev = C.sha256_hex(C.canonical(record))
        return record

    yield emit(
        {
            "record_id": genesis_id,
            "timestamp": first,
            "action_type": "lifecycle",
            "action_detail": {"event": "session_start", "recorder": "agy-harness", "ledger_key": ledger_key},
            "outcome": "success",
            "record_phase": "concurrent",
            "parent_record_id": None,
        }
    )
    for rec in records:
        seq, body = int(rec["seq"]), dict(rec.get("body") or {})
        record_id = ids[seq] = _uuid(f"{session} {rec['hash']}")
        action, phase, outcome, detail = _detail(
            str(rec["type"]), body, {"sequence": seq, "hash": rec["hash"]}
        )
        parent = ids.get(int(body["decision"])) if isinstance(body.get("decision"), int) else None
        fields = {
            "record_id": record_id,
            "timestamp": rec["time"],
            "action_type": action,
            "action_detail": detail,
            "outcome": outcome,
            "record_phase": phase,
            "parent_record_id": parent or genesis_id,
        }
        by = body.get("decided_by")
        if rec["type"] == "decision" and isinstance(by, dict) and by.get("kind") == "human":
            fields["human_override"] = {"operator_id": by.get("user", ""), "surface": by.get("surface", "")}
        yield emit(fields)
    end = {"event": "session_end", "record_count": len(records) + 2}
    if checkpoint is not None:
        end["ledger_checkpoint"] = checkpoint
    yield emit(
        {
            "record_id": _uuid(session + " end " + str(prev)),
            "timestamp": records[-1]["time"] if records else first,
            "action_type": "lifecycle",
            "action_detail": end,
            "outcome": "success",
            "record_phase": "post_execution",
            "parent_record_id": genesis_id,
        }
    )
