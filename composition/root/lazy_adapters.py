"""The adapters and roles the container (:mod:`.container`) builds, each imported only when a provider
first builds one: importing the container loads none of them, so a command builds only what it uses
(``replay`` takes just the reconciler, ``doctor`` and ``record`` the RPC client but no harness, and a
session that needs no tmux, transcript, ledger or rules never loads those). Also the tmux lookups an
entry point asks before it builds a container."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agy_harness.adapters.rpc.actions import (
        ModelResolver,
        RpcCascadeDirectory,
        RpcCascadeStarter,
        RpcInteractionDelivery,
        RpcInterrupter,
        RpcModelCatalog,
        RpcTurnSender,
    )
    from agy_harness.adapters.rpc.client import RpcClient
    from agy_harness.adapters.rpc.discovery import Resolver
    from agy_harness.adapters.rpc.sources import RpcPollSource, RpcStreamSource
    from agy_harness.adapters.sinks.queue import QueueSink
    from agy_harness.adapters.store.claims import ClaimRegistry
    from agy_harness.core.reconciler import Reconciler
    from agy_harness.ports.policy import GatePolicy
    from agy_harness.ports.protocols import CursorStore, DecisionLedger, StepSnapshot, StepSource, TurnSender

    from ..service.bus import SessionBus
    from ..service.clock import LoopClock
    from ..service.conversation import Conversation
    from ..service.harness import Harness
    from .version_gate import Capabilities


# -- agy over RPC ------------------------------------------------------------------------------


def rpc_client(base_url: str, *, csrf_token: str | None = None) -> RpcClient:
    from agy_harness.adapters.rpc.client import RpcClient

    return RpcClient(base_url, csrf_token=csrf_token)


def resolver(
    cascade_id: str | None,
    *,
    port: int | None = None,
    pids: Sequence[int] | None = None,
    pane_pid: int | None = None,
    csrf_token: str | None = None,
) -> Resolver:
    from agy_harness.adapters.rpc.discovery import Resolver

    return Resolver(cascade_id, port=port, pids=pids, pane_pid=pane_pid, csrf_token=csrf_token)


def poll_source(client: RpcClient, *, interval: float) -> RpcPollSource:
    from agy_harness.adapters.rpc.sources import RpcPollSource

    return RpcPollSource(client, interval=interval)


def stream_source(
    client: RpcClient, *, idle_timeout: float = 20.0, is_running: Callable[[], bool] | None = None
) -> RpcStreamSource:
    from agy_harness.adapters.rpc.sources import RpcStreamSource

    return RpcStreamSource(client, idle_timeout=idle_timeout, is_running=is_running)


def model_catalog(client: RpcClient) -> RpcModelCatalog:
    from agy_harness.adapters.rpc.actions import RpcModelCatalog

    return RpcModelCatalog(client)


def rpc_turns(client: RpcClient, resolve_model: ModelResolver) -> RpcTurnSender:
    from agy_harness.adapters.rpc.actions import RpcTurnSender

    return RpcTurnSender(client, resolve_model)


def interaction_delivery(client: RpcClient) -> RpcInteractionDelivery:
    from agy_harness.adapters.rpc.actions import RpcInteractionDelivery

    return RpcInteractionDelivery(client)


def interrupter(client: RpcClient) -> RpcInterrupter:
    from agy_harness.adapters.rpc.actions import RpcInterrupter

    return RpcInterrupter(client)


def directory(client: RpcClient) -> RpcCascadeDirectory:
    from agy_harness.adapters.rpc.actions import RpcCascadeDirectory

    return RpcCascadeDirectory(client)


def starter(client: RpcClient) -> RpcCascadeStarter:
    from agy_harness.adapters.rpc.actions import RpcCascadeStarter

    return RpcCascadeStarter(client)


# -- the session's own parts -----------------------------------------------------------------


def queue_sink() -> QueueSink:
    from agy_harness.adapters.sinks.queue import QueueSink

    return QueueSink()


def claims() -> ClaimRegistry:
    from agy_harness.adapters.store.claims import ClaimRegistry

    return ClaimRegistry()


def conversation(cascade_id: str, cursor_store: CursorStore | None) -> Conversation:
    from ..service.conversation import Conversation

    return Conversation(cascade_id, cursor_store)


def session_bus() -> SessionBus:
    from ..service.bus import SessionBus

    return SessionBus()


def loop_clock() -> LoopClock:
    from ..service.clock import LoopClock

    return LoopClock()


def harness(**parts: Any) -> Harness:
    """The harness over the parts the container built (its keywords: see the container's ``harness``)."""
    from ..service.harness import Harness

    return Harness(**parts)


def reconciler(cascade_id: str) -> Reconciler:
    """Recorded steps in, events out (``agy-harness replay``): no agy, no RPC."""
    from agy_harness.core.reconciler import Reconciler

    return Reconciler(cascade_id)


# -- what only some sessions need --------------------------------------------------------------


def transcript_tail(caps: Capabilities) -> StepSource:
    from agy_harness.adapters.transcript.tail import TranscriptTailSource

    assert caps.transcript_root is not None  # selected only when the version gate found one
    return TranscriptTailSource(caps.transcript_root)


def tmux_sender(target: str, server: Any, step_reader: StepSnapshot) -> TurnSender:
    from agy_harness.adapters.tmux.sender import TmuxTurnSender

    return TmuxTurnSender(target, server=server, step_reader=step_reader)


def tui_keys(target: str | None, server: Any) -> Any:
    """agy's pane, to close its prompt after an RPC answer and to type "allow always" (None: unknown)."""
    if not target:
        return None
    from agy_harness.adapters.tmux.keys import TmuxKeys

    return TmuxKeys(target, server)


def tui_screen(target: str | None, server: Any) -> Any:
    """agy's pane, read to tell our terminal's /clear from another client's conversation (None: unknown)."""
    if not target:
        return None
    from agy_harness.adapters.tmux.pane_screen import TmuxScreen

    return TmuxScreen(target, server)


def default_ledger() -> DecisionLedger:
    """This install's file ledger (this process's one writer for it)."""
    from agy_harness.adapters.store.ledger_file import shared_ledger

    return shared_ledger()


def session_rules(workspace: str | None) -> GatePolicy:
    """The rules that answer gates for the human, read once for the session from their tiers
    (:mod:`agy_harness.adapters.policy.files`; the project tier is ``workspace``, default the current
    directory). Files that fail turn the rules off: everything is asked, and the session says why."""
    from agy_harness.adapters.policy.files import load_policy

    return load_policy(Path(workspace) if workspace else None)


def pane_process(tmux_target: str) -> int:
    """The process running in agy's tmux pane ``tmux_target`` (``pane_pid=`` narrows discovery to
    it); raises when there is no such pane."""
    from agy_harness.adapters.tmux import find_pane_pid

    return find_pane_pid(tmux_target)


def default_tmux_server() -> Any:
    """The user's default tmux server named by its socket (a libtmux.Server), whatever ``TMUX`` this
    process inherited: where an entry point starts agy for the user (``tmux attach`` reaches it)."""
    from agy_harness.adapters.tmux.plumbing import default_server

    return default_server()
