"""Who decided a gate: this user (:func:`local_user`), a decision made now (:func:`decider_now`), and
who the decision ledger says decided it when another session of this user answered it
(:func:`recorded_decider`: a human on its board or editor, its rule, its interrupt) -- what a session
that did not answer shows on the gate's withdrawal instead of "answered in agy's terminal" (issue #46
item 5). Sessions on one conversation share the install's ledger; each writes its decision before its
answer goes to agy, so by the time agy shows the gate answered, the ledger names who answered it.
And what agy recorded on a gate's step (:func:`recorded_response`): the answer it took."""

from __future__ import annotations

import asyncio
import getpass
import logging
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from agy_harness.core import steps as S
from agy_harness.core.decision_record import recorded_verdict
from agy_harness.ports.events import Decider, GateOpened
from agy_harness.ports.protocols import DecidedBy, DeciderLookup, DecisionLedger

log = logging.getLogger("agy_harness.ledger")

LOOKUP = 2.0  # seconds a withdrawal waits for the ledger to name another session's decider


def local_user() -> str:
    """The user this harness runs as (its uid's name; the uid when it has none)."""
    try:
        return getpass.getuser()
    except Exception:
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else ""


def decider_now(by: DecidedBy, verdict: str, scope: str) -> Decider:
    """``by``'s decision (``verdict``, ``scope``) as every surface shows it, made now."""
    at = datetime.now(UTC).isoformat(timespec="seconds")
    return Decider(
        kind=by.kind,
        surface=by.surface,
        user=by.user,
        at=at,
        verdict=verdict,
        scope=scope,
        rule_id=by.rule_id,
    )


async def recorded_decider(
    ledger: DecisionLedger | None, gate: GateOpened, read_steps: Callable[[GateOpened], Awaitable[list[Any]]]
) -> Decider | None:
    """Who the ledger says decided ``gate`` when another session did (a human on a surface, a rule,
    an interrupt); None when it names nobody else or cannot say in time -- or when that answer may
    still be on its way (no delivery record says agy took it) and agy recorded the opposite verdict
    (agy's terminal overtook it: ``read_steps`` reads agy's recorded answer)."""
    if not isinstance(ledger, DeciderLookup):
        return None
    gate_id = gate.gate_id
    try:
        async with asyncio.timeout(LOOKUP):
            found = await ledger.decider(gate_id)
            verdict = str(found.get("verdict", "")) if found else ""
            if found and found.get("taken") is not True and verdict in ("allow", "deny"):
                agys, _ = recorded_verdict(gate, await recorded_response(read_steps, gate))
                if agys in ("allow", "deny") and agys != verdict:
                    return None
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # (a timeout too): agy's terminal is what this session knows
        log.info("gate %s: the ledger could not say who decided it (%s)", gate_id, exc or type(exc).__name__)
        return None
    by = found.get("decided_by") if found else None
    if not isinstance(by, dict) or str(by.get("kind", "")) in ("", "agy-terminal", "timeout"):
        return None
    assert found is not None
    return Decider(
        kind=str(by["kind"]),
        surface=str(by.get("surface", "")),
        user=str(by.get("user", "")),
        at=str(found.get("at", "")),
        verdict=str(found.get("verdict", "")),
        scope=str(found.get("scope", "")),
        rule_id=str(by.get("rule_id", "")),
    )


async def recorded_response(
    read_steps: Callable[[GateOpened], Awaitable[list[Any]]], gate: GateOpened
) -> dict[str, Any] | None:
    """The answer agy recorded on ``gate``'s step (its own terminal's, or the one it took), read from
    agy's steps (``read_steps``: from the gate's step on); None when there is none or it could not be
    read."""
    response: dict[str, Any] | None = None
    try:
        for step in map(S.parse_step, await read_steps(gate)):
            if step is not None and (step.key.trajectory_id, step.key.step_index) == (
                gate.trajectory_id,
                gate.step_index,
            ):
                response = S.interaction_response(step)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.info("gate %s: agy's recorded answer could not be read (%s)", gate.gate_id, exc)
    return response
