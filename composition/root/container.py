"""The composition root: one declarative container that builds everything a session runs on.

Every entry point that runs a session (``open_session``, ``agy-harness demo``/``attach``, the
omnigent plugin, the ACP agent, the benchmarks) builds from :class:`AgyContainer`, and ``replay``
takes its reconciler from it. ``doctor`` and ``record`` only read agy: they bind through it
(:func:`bind_endpoint`) and read with its ``client``; they build no harness. The graph, top to bottom::

    config ─ discovery (Resolver) ─┐  bind(): the async part, done once per session
                                   ├─ client (RpcClient) ─ cascade_id ─ capabilities (probed)
    version_gate  = choose_adapters(capabilities)            ← the version gate: ONE provider
    step_sources  = Selector(version_gate.read)   stream? + poll + transcript?
    turn_senders  = Selector(version_gate.turns)  rpc? + tmux?
    subagent_source = subagent_source(step_sources)  streamed when the conversation is, else polled
    snapshot (the poll), interaction_delivery, interrupter, directory, model_catalog, claims,
    conversation, clock, bus, cursor_store, sink, options
    harness       = Harness(all of the above)           nothing is wired into it after it is built

A new entry point is a few lines over this root::

    from dependency_injector import providers
    from agy_harness.composition.root.container import make_container
    from agy_harness.composition.root.session import session_from

    container = make_container(port=port, cascade_id=cascade, sink=my_sink)  # open_session's keywords
    async with session_from(container) as session:      # bind, build the harness, start, stop
        await session.send("hello")

Anything can be replaced before ``session_from`` by overriding its provider, e.g.
``container.cursor_store.override(providers.Object(store))``,
``container.client.override(providers.Object(shared_client))`` (a client you give is not closed for
you), or ``container.capabilities.override(providers.Object(Capabilities(...)))`` to force what the
version gate picks. To ask agy what it can do without running a harness::

    container = make_container(port=port)
    await bind(container)
    caps, choice = container.capabilities(), container.version_gate()

:func:`bind` is the only asynchronous step: it finds agy's port (unless ``base_url`` was given), the
conversation (unless ``cascade_id`` was given: the most recent one) and probes the capabilities
(unless ``capabilities`` was overridden). Everything after it is synchronous and lazy: a provider is
built only when something needs it, once per container (one container per session).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agy_harness.ports.errors import NoConversation

from . import lazy_adapters as L
from .dependency_injection import containers, providers
from .lazy_adapters import default_ledger as default_ledger  # (entry points import it from here)
from .lazy_adapters import default_tmux_server as default_tmux_server
from .lazy_adapters import pane_process as pane_process
from .version_gate import Capabilities, choose_adapters, detect_capabilities
from .version_gate import subagent_source as subagent_source_for

if TYPE_CHECKING:  # the adapters and the harness are imported when a provider first builds one
    from agy_harness.adapters.rpc.actions import PlanModelResolver, RpcCascadeDirectory
    from agy_harness.ports.policy import GatePolicy
    from agy_harness.ports.protocols import (
        CascadeSummary,
        Cursor,
        CursorStore,
        DecisionLedger,
        EventSink,
        ModelCatalog,
    )

    from ..service.bus import SessionBus
    from ..service.harness import HarnessOptions


def _shown_models(sink: EventSink, catalog: ModelCatalog) -> EventSink:
    """The sink, handed agy's model catalog when it shows model display names (the omnigent sink,
    the terminal): it was made by the entry point before agy was bound."""
    from agy_harness.ports.protocols import ShowsModelNames

    if isinstance(sink, ShowsModelNames):
        sink.bind_model_catalog(catalog)
    return sink


def _model_resolver(
    snapshot: Any, catalog: Any, choice: Callable[[], str | None] | None, bus: SessionBus
) -> PlanModelResolver:
    """The turn's model resolver, following the conversation's model changes from the events the
    session delivers (a turn reads no conversation)."""
    from agy_harness.adapters.rpc.actions import PlanModelResolver

    resolver = PlanModelResolver(snapshot, catalog, choice)
    bus.on_delivered(resolver.observe)
    return resolver


def _given(value: Any) -> bool:
    return value is not None


def _same(value: Any) -> Any:
    return value


class AgyContainer(containers.DeclarativeContainer):
    """Providers for one session on one agy; see the module docstring for how to use it."""

    config = providers.Configuration()

    # -- given by the entry point (override these) -----------------------------------------
    sink = providers.Singleton(L.queue_sink)
    cursor_store: providers.Object[CursorStore | None] = providers.Object(None)
    options: providers.Object[HarnessOptions | None] = providers.Object(None)
    tmux_server: providers.Object[Any] = providers.Object(None)  # a libtmux.Server, None: the default
    #: the decision ledger (issue 36): this install's file ledger, made when a session first records
    ledger = providers.Singleton(L.default_ledger)

    # -- agy: where it listens, the conversation, what it can do (filled in by bind()) -----
    discovery = providers.Singleton(
        L.resolver,
        config.cascade_id,
        port=config.port,
        pids=config.pids,
        pane_pid=config.pane_pid,
        csrf_token=config.csrf_token,
    )
    client = providers.Singleton(L.rpc_client, config.base_url, csrf_token=config.csrf_token)
    cascade_id = providers.Callable(_same, config.cascade_id)
    capabilities = providers.Dependency(instance_of=Capabilities)

    # -- the version gate: what this agy's capabilities select -----------------------------
    version_gate = providers.Callable(
        choose_adapters, capabilities, tmux=providers.Callable(_given, config.tmux_target)
    )

    # -- the adapters ----------------------------------------------------------------------
    poll = providers.Singleton(L.poll_source, client, interval=config.poll_interval.as_float())
    snapshot = providers.Callable(_same, poll)
    # the bound conversation: the harness's, and what the stream's idle watchdog asks (a silent
    # stream is a dead one only while agy should be producing: a turn runs and no gate waits)
    conversation = providers.Singleton(L.conversation, cascade_id, cursor_store)
    stream = providers.Singleton(
        L.stream_source,
        client,
        idle_timeout=config.stream_idle_timeout.as_float(),
        is_running=conversation.provided.producing,
    )
    transcript = providers.Singleton(L.transcript_tail, capabilities)
    step_sources = providers.Selector(
        version_gate.provided.read,
        stream_poll=providers.List(stream, poll),
        stream_poll_transcript=providers.List(stream, poll, transcript),
        poll=providers.List(poll),
        poll_transcript=providers.List(poll, transcript),
    )
    # a sub-agent's own live source, by the version gate's rule: streamed when the conversation is
    subagent_stream = providers.Factory(L.stream_source, client)
    subagent_source = providers.Callable(subagent_source_for, step_sources, subagent_stream.provider)
    model_catalog = providers.Singleton(L.model_catalog, client)
    #: a () -> model id the user chose (ACP, the plugin), or None
    model_choice: providers.Object[Callable[[], str | None] | None] = providers.Object(None)
    bus = providers.Singleton(L.session_bus)  # what the session's roles tell each other
    model_resolver = providers.Singleton(_model_resolver, snapshot, model_catalog, model_choice, bus)
    rpc_turns = providers.Singleton(L.rpc_turns, client, model_resolver)
    tmux_turns = providers.Singleton(
        L.tmux_sender, config.tmux_target, server=tmux_server, step_reader=snapshot
    )
    turn_senders = providers.Selector(
        version_gate.provided.turns,
        rpc_tmux=providers.List(rpc_turns, tmux_turns),
        rpc=providers.List(rpc_turns),
        tmux=providers.List(tmux_turns),
        none=providers.List(),
    )
    interaction_delivery = providers.Singleton(L.interaction_delivery, client)
    tui_keys = providers.Singleton(L.tui_keys, config.tmux_target, tmux_server)
    tui_screen = providers.Singleton(L.tui_screen, config.tmux_target, tmux_server)
    interrupter = providers.Singleton(L.interrupter, client)
    directory = providers.Singleton(L.directory, client)
    starter = providers.Singleton(L.starter, client)  # a new conversation (the ACP agent)
    # the other sessions' conversations, in a private per-user directory (never our /clear)
    claims = providers.Singleton(L.claims)
    # the rules that answer gates (``make_container(policy=...)`` or an override replaces them)
    policy = providers.Singleton(L.session_rules, config.workspace)

    # -- the harness: its roles share one clock and one bus ----------------------------------
    clock = providers.Singleton(L.loop_clock)
    harness = providers.Singleton(
        L.harness,
        cascade_id=cascade_id,
        conversation=conversation,
        sources=step_sources,
        snapshot=snapshot,
        sink=providers.Callable(_shown_models, sink, model_catalog),
        delivery=interaction_delivery,
        turn_senders=turn_senders,
        interrupter=interrupter,
        directory=directory,
        cursor_store=cursor_store,
        options=options,
        tui=tui_keys,
        screen=tui_screen,
        claims=claims,
        clock=clock,
        bus=bus,
        subagent_source=subagent_source,
        ledger=ledger,
        policy=policy,
    )

    # -- offline: recorded steps in, events out (``agy-harness replay``) --------------------
    reconciler = providers.Factory(L.reconciler)


def make_container(
    *,
    base_url: str | None = None,
    port: int | None = None,
    cascade_id: str | None = None,
    pids: Sequence[int] | None = None,
    pane_pid: int | None = None,
    tmux_target: str | None = None,
    tmux_server: Any = None,
    csrf_token: str | None = None,
    sink: EventSink | None = None,
    cursor_store: CursorStore | None = None,
    transcript_root: Path | None = None,
    version_text: str | None = None,
    poll_interval: float = 0.25,
    stream_idle_timeout: float = 20.0,
    options: HarnessOptions | None = None,
    ledger: DecisionLedger | Literal["default"] | None = "default",
    policy: GatePolicy | None = None,
    workspace: str | None = None,
) -> AgyContainer:
    """A container configured from :func:`~agy_harness.composition.root.session.open_session`'s keywords."""
    container = AgyContainer()
    container.config.from_dict(
        {
            "base_url": base_url,
            "port": port,
            "cascade_id": cascade_id,
            "pids": pids,
            "pane_pid": pane_pid,
            "tmux_target": tmux_target,
            "csrf_token": csrf_token,
            "transcript_root": transcript_root,
            "version_text": version_text,
            "poll_interval": poll_interval,
            "stream_idle_timeout": stream_idle_timeout,
            "workspace": workspace,
        }
    )
    if sink is not None:
        container.sink.override(providers.Object(sink))
    container.cursor_store.override(providers.Object(cursor_store))
    container.options.override(providers.Object(options))
    container.tmux_server.override(providers.Object(tmux_server))
    if ledger != "default":  # a ledger of the caller's, or None: decisions recorded nowhere
        container.ledger.override(providers.Object(ledger))
    if policy is not None:
        container.policy.override(providers.Object(policy))
    return container


def newest_root(summaries: Sequence[CascadeSummary]) -> str | None:
    """The most recently used root conversation (sub-agents are not conversations of their own)."""
    roots = [s for s in summaries if not s.parent_id]
    if not roots:
        return None
    return max(roots, key=lambda s: (s.last_modified_time, s.last_user_input_time)).cascade_id


async def latest_cascade(directory: RpcCascadeDirectory) -> str:
    """:func:`newest_root` of agy's listing; NoConversation when agy has none yet."""
    newest = newest_root(await directory.list_cascades())
    if newest is None:
        raise NoConversation("agy has no conversation yet; name one (cascade_id, --cascade)")
    return newest


def resuming_from(cursor: Cursor | None) -> CursorStore:
    """A cursor store (in memory) that holds ``cursor``: for an entry point that read the history
    itself (ACP's session/load), so that its session resumes where that read ended."""
    from agy_harness.adapters.store.cursor_file import MemoryCursorStore

    store = MemoryCursorStore()
    if cursor is not None:
        store.save(cursor)
    return store


async def bind_endpoint(container: AgyContainer, *, version: bool = True) -> bool:
    """Find agy's port unless ``base_url`` was given; True when it was discovered (then agy can be
    followed across restarts through ``container.discovery()``). The bound agy's version is asked
    too (``config.version_text``), unless it was given or ``version`` is False."""
    config = container.config
    if config.base_url() is not None:  # given: still verified, as a discovered port is
        if not container.client.overridden:
            from agy_harness.adapters.rpc.discovery import verify_endpoint

            await verify_endpoint(config.base_url(), config.cascade_id(), config.csrf_token())
        return False
    binding = await container.discovery().resolve()
    if version and config.version_text() is None:  # the bound agy's, not whichever agy is first on the PATH
        from .version_gate import bound_agy_version

        config.version_text.from_value(await bound_agy_version(binding.pid))
    config.base_url.from_value(binding.base_url)
    config.csrf_token.from_value(binding.csrf_token or config.csrf_token())
    config.pid.from_value(binding.pid)  # the bound agy's process (None when unknown)
    return True


async def bind_conversation(container: AgyContainer) -> None:
    """The conversation unless ``cascade_id`` was given (the most recent one), and the capabilities
    unless ``capabilities`` was overridden (the version gate's probe)."""
    config = container.config
    if config.cascade_id() is None:
        config.cascade_id.from_value(await latest_cascade(container.directory()))
    if not container.capabilities.overridden:
        caps = await detect_capabilities(
            container.client(),
            config.cascade_id(),
            version_text=config.version_text(),
            transcript_root=config.transcript_root(),
        )
        container.capabilities.override(providers.Object(caps))


async def bind(container: AgyContainer) -> bool:
    """Both binding steps (for an entry point that only asks agy things: close ``container.client()``
    when done). Returns what :func:`bind_endpoint` returns."""
    discovered = await bind_endpoint(container)
    await bind_conversation(container)
    return discovered
