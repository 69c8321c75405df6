"""The slash commands a client can usefully send (``available_commands_update``).

ACP clients offer an agent's commands in their prompt box and send the chosen one as the prompt's
text (``/name input``). agy's language server has no command method: a command sent as a turn would
reach agy's model as plain text. So only what the harness itself carries out is advertised:

* ``/model [name]`` — list agy's models, or pick the model of the next turns (the same choice as
  the ``model`` config option; answered at once, no turn is sent to agy).

agy's own commands (``/clear``, ...) belong to its terminal UI, which no RPC method reaches; they are
not offered (typed in agy's terminal they still work, and the session follows a ``/clear``). Any
other text starting with ``/`` is an ordinary turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    UnstructuredCommandInput,
)


@dataclass(frozen=True)
class Command:
    name: str
    argument: str


MODEL = AvailableCommand(
    name="model",
    description="List agy's models, or pick the model of the next turns",
    input=AvailableCommandInput(root=UnstructuredCommandInput(hint="model name (empty: list them)")),
)


def available() -> AvailableCommandsUpdate:
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[MODEL])


def parse(text: str) -> Command | None:
    """The harness command ``text`` is (one line, ``/name [argument]``), else None (a turn)."""
    line = text.strip()
    if not line.startswith("/") or "\n" in line:
        return None
    name, _, argument = line[1:].partition(" ")
    if name.casefold() == MODEL.name:
        return Command(MODEL.name, argument.strip())
    return None
