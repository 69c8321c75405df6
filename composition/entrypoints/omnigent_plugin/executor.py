"""The omnigent :class:`Executor` for ``harness: agy-harness``: agy runs the agent and its tools.

One :class:`~.conversation.AgyConversation` (one agy-harness session) per omnigent conversation,
opened on its first turn and kept across turns. omnigent's Stop reaches :meth:`interrupt_session`
(agy's cancel; a parked gate is denied; a turn agy cannot leave, waiting on a gate only its terminal
answers, goes on: :meth:`interrupt_turn`); a message typed while a turn runs reaches
:meth:`enqueue_session_message` (agy queues it as the next turn, and the omnigent turn lasts until it
is done). The model comes from omnigent's model setting (``HARNESS_AGY_HARNESS_MODEL``, or a
per-turn override) resolved against agy's model catalog (an id or a label).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from .compat import (
    EnqueuedContent,
    Executor,
    ExecutorConfig,
    ExecutorError,
    ExecutorEvent,
    Message,
    ToolSpec,
)
from .conversation import AgyConversation, Interrupted, ModelNotFound
from .settings import AgySettings, SettingsError
from .sink import CardAsker

log = logging.getLogger("agy_harness.omnigent_plugin")


def session_key(messages: list[Message]) -> str:
    for message in messages:
        sid = message.get("session_id")
        if sid:
            return str(sid)
    return "default"


def latest_user_text(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(
                str(b.get("text")) for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
            )
        return "" if content is None else json.dumps(content)
    return ""


class AgyExecutor(Executor):
    def __init__(self, settings: AgySettings | None = None) -> None:
        self._settings = settings
        self._conversations: dict[str, AgyConversation] = {}
        # installed by omnigent's ExecutorAdapter (unused: gates go through _gate_asker)
        self._elicitation_handler: Any = None
        # installed by AgyExecutorAdapter: puts a gate to the current omnigent turn
        self._gate_asker: CardAsker | None = None
        # set by AgyExecutorAdapter from the turn: omnigent's server and session (for the mirror)
        self.mirror_target: tuple[str, str] | None = None

    def supports_streaming(self) -> bool:
        return True

    def handles_tools_internally(self) -> bool:
        return True

    def supports_live_message_queue(self) -> bool:
        return True

    async def _conversation(self, key: str) -> AgyConversation:
        conv = self._conversations.get(key)
        if conv is None:
            settings = self._settings or AgySettings.from_env()
            conv = AgyConversation(settings)
            await conv.open()
            self._conversations[key] = conv
        return conv

    async def run_turn(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        system_prompt: str,
        config: ExecutorConfig | None = None,
    ) -> AsyncIterator[ExecutorEvent]:
        del tools, system_prompt  # agy runs its own tools under its own rules (docs/omnigent.md)
        key = session_key(messages)
        try:
            conv = await self._conversation(key)
        except (SettingsError, OSError, RuntimeError, LookupError) as exc:
            yield ExecutorError(message=f"agy-harness: cannot bind agy: {exc}", undelivered=True)
            return
        except Exception as exc:
            log.exception("binding agy failed")
            yield ExecutorError(
                message=f"agy-harness: cannot bind agy ({type(exc).__name__}: {exc})", undelivered=True
            )
            return
        if self.mirror_target is not None:
            conv.enable_mirror(*self.mirror_target)
        wanted = (config.model if config is not None else None) or conv.settings.model
        if wanted:
            try:
                await conv.pin_model(wanted)
            except ModelNotFound as exc:
                yield ExecutorError(message=str(exc), undelivered=True, preserve_session=True)
                return
            except Exception as exc:
                yield ExecutorError(
                    message=f"agy-harness: cannot read agy's models: {exc}",
                    undelivered=True,
                    preserve_session=True,
                )
                return
        asker = self._gate_asker
        if asker is None:
            yield ExecutorError(
                message="agy-harness: no gate bridge installed (internal error)", undelivered=True
            )
            return
        async for event in conv.turn(latest_user_text(messages), asker):
            yield event

    async def interrupt_session(self, session_key: str) -> bool:
        return await self.interrupt_turn(session_key) != "none"

    async def interrupt_turn(self, session_key: str) -> Interrupted:
        """omnigent's Stop (or the interrupt its runner sends before a Reject): see
        :meth:`AgyConversation.interrupt` (``held``: agy still waits, the turn must go on)."""
        conv = self._conversations.get(session_key)
        return await conv.interrupt() if conv is not None else "none"

    async def enqueue_session_message(self, session_key: str, content: EnqueuedContent) -> bool:
        conv = self._conversations.get(session_key)
        if conv is None:
            return False
        text = content if isinstance(content, str) else json.dumps(content)
        return await conv.steer(text)

    async def close_session(self, session_key: str) -> None:
        conv = self._conversations.pop(session_key, None)
        if conv is not None:
            await conv.close()

    async def close(self) -> None:
        for key in list(self._conversations):
            await self.close_session(key)
