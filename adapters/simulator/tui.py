"""The simulated agy TUI: a tiny terminal program that hosts the Simulator in its own process.

    python -m agy_harness.adapters.simulator.tui [--profile 1.0.10] [--port-file PATH] [--transcript-root DIR]
                                                 [--pace X] [--gate-timeout S]

Like real agy (whose TUI process owns the language server), the RPC listener belongs to this process,
so port discovery scoped to a tmux pane's process subtree finds it. Once listening it writes
``"<port> <cascade_id>"`` to ``--port-file`` (rewritten after ``/clear``).

The screen (plain ANSI, redrawn whole on every change)::

    › the user's turn                  conversation: user turns, assistant text, tool lines,
    ✦ the assistant's reply            numbered gate prompts; a permission prompt shows the
    • run_command: pwd  [waiting]      request whole (every line of the command, its directory),
    ? Allow this command?              as agy's own prompt shows the command it asks about (the
      $ pwd                            exact layout is a guess: agy's TUI is not recorded)
      in /home/agy/...
      1. Yes, run command
      ...
      4. No, cancel
    ──────────────────────────         rule
    > what is being typed              composer (continuation rows indented by two spaces)
    agy 1.0.10 · idle                  footer: idle | working | waiting for approval

Input (raw mode): typed characters, Backspace, Ctrl-U (clear), Enter submits, Ctrl-J a newline,
bracketed paste (``ESC[200~ ... ESC[201~``; pasted newlines stay in the turn). While a gate is WAITING,
Enter answers it: option number(s) (``1`` or ``1,3``; other text is a write-in) for a question,
``1``/``y`` (allow) or ``2``/``n`` (deny) for a permission. ``/clear`` mints a new cascade.
Ctrl-C clears the composer, or quits when it is empty; Ctrl-D on an empty composer quits.
The composer accepts a new turn only while the footer says idle.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import contextlib
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

from agy_harness.core.steps import Step, parse_step, waiting_interaction
from agy_harness.ports.tasks import reap

from .simulator import Simulator
from .tui_render import answer_interaction, gate_lines, render_screen, write_port_file
from .tui_terminal import raw_terminal

__all__ = ["Tui", "answer_interaction", "main", "render_screen", "write_port_file"]

PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"


class Tui:
    def __init__(
        self, sim: Simulator, profile: str, *, port_file: Path | None = None, out_fd: int = 1
    ) -> None:
        self.sim = sim
        self.profile = profile
        self.port_file = port_file
        self.out_fd = out_fd
        self.composer = ""
        self.notice = ""
        self._esc = ""
        self._paste: str | None = None
        self._turn: asyncio.Task[Any] | None = None
        self._busy_action: asyncio.Task[Any] | None = None
        self._redraw_pending = False
        self._last_drawn: list[str] = []
        self._drawn_status: tuple[bool, str] | None = None
        self._done = asyncio.Event()
        self.exit_code = 0  # 130 when quit with Ctrl-C, 128 + N when stopped by signal N
        self._loop = asyncio.get_running_loop()
        # agy's prompt stays open after an answer that did not come from this terminal (over RPC):
        # the gate step it was shown for, its lines, and the steps answered here
        self._prompt: tuple[str, list[str]] | None = None
        self._answered_here: set[str] = set()

    # -- state -----------------------------------------------------------------------------

    def steps(self) -> list[Any]:
        return list(self.sim.steps(self.sim.cascade_id))

    def waiting_gate(self) -> Step | None:
        for raw in reversed(self.steps()):
            step = parse_step(raw)
            if step is not None and waiting_interaction(step) is not None:
                return step
        return None

    def working(self) -> bool:
        if self._turn is not None and not self._turn.done():
            return True
        if self._busy_action is not None and not self._busy_action.done():
            return True
        return sim_running(self.sim)

    def stale_prompt(self) -> list[str]:
        """The prompt left open after its gate was answered elsewhere (older agy: it waits for keys)."""
        gate = self.waiting_gate()
        if gate is not None:
            self._prompt = (str(gate.key), gate_lines(gate))
            return []
        if self._prompt is not None and self._prompt[0] in self._answered_here:
            self._prompt = None
        return self._prompt[1] if self._prompt is not None else []

    def dismiss_prompt(self) -> None:
        self._prompt = None

    def state(self) -> str:
        if self.waiting_gate() is not None or self.stale_prompt():
            return "waiting for approval"
        return "working" if self.working() else "idle"

    # -- drawing ---------------------------------------------------------------------------

    def screen(self, cols: int, rows: int) -> list[str]:
        return render_screen(
            self.steps(),
            self.composer,
            self.state(),
            self.profile,
            cols,
            rows,
            notice=self.notice,
            prompt=self.stale_prompt(),
        )

    def draw(self, *, force: bool = True) -> None:
        self._redraw_pending = False
        self._drawn_status = self._status()  # (what the ticker compares with)
        size = shutil.get_terminal_size((80, 24))
        lines = self.screen(size.columns, size.lines)
        if not force and lines == self._last_drawn:
            return
        self._last_drawn = lines
        data = "\x1b[H\x1b[J" + "\r\n".join(lines)
        with contextlib.suppress(OSError):
            os.write(self.out_fd, data.encode("utf-8", "replace"))

    def request_redraw(self) -> None:
        if not self._redraw_pending:
            self._redraw_pending = True
            self._loop.call_soon(lambda: self.draw(force=False))

    def on_step(self, cascade_id: str, step: dict[str, Any]) -> None:
        parsed = parse_step(step)
        if (
            parsed is not None
            and waiting_interaction(parsed) is not None
            and cascade_id == self.sim.cascade_id
        ):
            self._prompt = (
                str(parsed.key),
                gate_lines(parsed),
            )  # shown: it stays until answered here or dismissed
        # The simulator may call back from another thread: hop onto the loop.
        self._loop.call_soon_threadsafe(self.request_redraw)

    # -- input -----------------------------------------------------------------------------

    def feed(self, data: str) -> None:
        if data == "\x1b":  # a lone Escape key (tmux send-keys Escape): dismiss / skip
            self.escape()
            self.request_redraw()
            return
        for ch in data:
            self._feed_char(ch)
        self.request_redraw()

    def _feed_char(self, ch: str) -> None:
        if self._paste is not None:
            self._paste += ch
            if self._paste.endswith(PASTE_END):
                text = self._paste[: -len(PASTE_END)]
                self._paste = None
                self.composer += text.replace("\r\n", "\n").replace("\r", "\n")
            return
        if self._esc:
            self._esc += ch
            if self._esc == PASTE_START:
                self._esc = ""
                self._paste = ""
            elif len(self._esc) == 2 and ch not in "[O":
                self._esc = ""  # Alt-<key>: ignored
            elif len(self._esc) > 2 and (self._esc[1] == "O" or "\x40" <= ch <= "\x7e"):
                self._esc = ""  # a complete CSI / SS3 sequence (arrows, ...): ignored
            return
        if ch == "\x1b":
            self._esc = ch
        elif ch == "\r":
            self.submit()
        elif ch == "\n":
            self.composer += "\n"
        elif ch in ("\x7f", "\x08"):
            self.composer = self.composer[:-1]
        elif ch == "\x15":
            self.composer = ""
        elif ch == "\x03":
            if self.composer:
                self.composer = ""
            else:
                self._quit(signal.SIGINT)
        elif ch == "\x04":
            if not self.composer:
                self._done.set()
        elif ch == "\t" or ch >= " ":
            self.composer += ch

    def _quit(self, sig: int) -> None:
        self.exit_code = 128 + sig
        self._done.set()

    def escape(self) -> None:
        """Escape: closes a prompt left open; skips a waiting question (agy's skip: no responses)."""
        gate = self.waiting_gate()
        if gate is None:
            self.dismiss_prompt()
            return
        interaction = answer_interaction(gate, "")
        if interaction is None and waiting_interaction(gate) and waiting_interaction(gate)[0] == "question":  # type: ignore[index]
            interaction = {
                "trajectoryId": gate.key.trajectory_id,
                "stepIndex": gate.key.step_index,
                "askQuestion": {"responses": []},
            }
        if interaction is not None:
            self._answered_here.add(str(gate.key))
            self._busy_action = self._loop.create_task(self._answer(interaction))

    def submit(self) -> None:
        text = self.composer.strip()
        if self.waiting_gate() is None and self.stale_prompt():
            # the prompt is still open: what is typed goes to it, not to a new turn
            self.composer = ""
            if not (text.isdigit() or text.lower() in ("y", "n", "yes", "no")):
                self.notice = "typed into the open prompt above; it was not sent as a turn"
            self.dismiss_prompt()
            return
        gate = self.waiting_gate()
        if gate is not None:
            interaction = answer_interaction(gate, text)
            if interaction is None:
                self.notice = "not an answer to the prompt above"
                return
            self.composer = ""
            self.notice = ""
            self._answered_here.add(str(gate.key))
            self._busy_action = self._loop.create_task(self._answer(interaction))
            return
        if not text or self.working():
            return  # the composer only accepts a turn while idle
        self.composer = ""
        self.notice = ""
        if text == "/clear":
            self._busy_action = self._loop.create_task(self._clear())
        else:
            self._turn = self._loop.create_task(self._submit(text))
        self.request_redraw()

    async def _submit(self, text: str) -> None:
        try:
            await self.sim.submit_user_turn(text)
        except Exception as exc:
            self.notice = f"turn failed: {exc}"
        finally:
            self.request_redraw()

    async def _answer(self, interaction: dict[str, Any]) -> None:
        try:
            await sim_interact(self.sim, self.sim.cascade_id, interaction)
        except Exception as exc:
            self.notice = f"answer refused: {exc}"
        finally:
            self.request_redraw()

    async def _clear(self) -> None:
        try:
            cascade_id = await self.sim.clear()
            if self.port_file is not None:
                write_port_file(self.port_file, self.sim.port, cascade_id)
        except Exception as exc:
            self.notice = f"/clear failed: {exc}"
        finally:
            self.request_redraw()

    async def _tick(self) -> None:
        # Run-status changes (a turn ending, an answer sent) raise no step callback: the screen is
        # drawn again when the run status or the cascade changes. All else that changes it asks for a
        # redraw itself (a step callback, a key, SIGWINCH). Before, every tick rendered the whole
        # conversation (three deep copies of its steps) 20 times a second, idle or not: up to ~20 ms of
        # CPU a second for a TUI left open.
        while True:
            await asyncio.sleep(0.05)
            if self._drawn_status != self._status():
                self.draw(force=False)

    def _status(self) -> tuple[bool, str]:
        """What changes the screen without a step callback: whether agy works, the cascade shown."""
        return self.working(), self.sim.cascade_id

    async def run(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")

        def readable() -> None:
            try:
                data = os.read(0, 4096)
            except OSError:
                data = b""
            if not data:
                self._done.set()
                return
            self.feed(decoder.decode(data))

        unsubscribe = self.sim.subscribe(self.on_step)
        self._loop.add_reader(0, readable)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            self._loop.add_signal_handler(sig, self._quit, sig)
        self._loop.add_signal_handler(signal.SIGWINCH, self.request_redraw)
        ticker = self._loop.create_task(self._tick())
        try:
            self.draw()
            await self._done.wait()
        finally:
            ticker.cancel()
            self._loop.remove_reader(0)
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGWINCH):
                self._loop.remove_signal_handler(sig)
            unsubscribe()
            for task in (self._turn, self._busy_action):
                if task is not None and not task.done():
                    task.cancel()
                    await reap(task)


# ---------------------------------------------------------------------------------------------
# The simulator's own paths (the same ones its RPC methods use)


def sim_running(sim: Simulator) -> bool:
    """Whether the simulator's current cascade runs a turn (CASCADE_RUN_STATUS_RUNNING)."""
    return bool(sim.is_running(sim.cascade_id))


async def sim_interact(sim: Simulator, cascade_id: str, interaction: dict[str, Any]) -> None:
    """What ``HandleCascadeUserInteraction`` does, without the HTTP round-trip."""
    await sim.handle_interaction(cascade_id, interaction)


# ---------------------------------------------------------------------------------------------
# The entry point


async def amain(args: argparse.Namespace) -> int:
    port_file = Path(args.port_file) if args.port_file else None
    writer = None
    extra: dict[str, Any] = {}
    if args.pace is not None:
        extra["pace"] = args.pace
    if args.gate_timeout is not None:
        extra["gate_timeout"] = args.gate_timeout
    async with Simulator(profile=args.profile, **extra) as sim:
        if args.transcript_root:
            from .transcript import TranscriptWriter

            writer = TranscriptWriter(Path(args.transcript_root))
            writer.attach(sim)
        try:
            if port_file is not None:
                write_port_file(port_file, sim.port, sim.cascade_id)
            with raw_terminal():
                await Tui(sim, args.profile, port_file=port_file).run()
        finally:
            if writer is not None:
                writer.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="agy-sim-tui", description="The simulated agy TUI (hosts the simulator)."
    )
    parser.add_argument("--profile", default="1.0.10")
    parser.add_argument("--port-file", default=None, help='write "<port> <cascade_id>" here once listening')
    parser.add_argument("--transcript-root", default=None, help="also write transcript JSONL under this root")
    parser.add_argument("--pace", type=float, default=None, help="scale the scripted model's delays")
    parser.add_argument("--gate-timeout", type=float, default=None, help="gates time out after this many s")
    args = parser.parse_args(argv)
    return asyncio.run(amain(args))


if __name__ == "__main__":
    sys.exit(main())
