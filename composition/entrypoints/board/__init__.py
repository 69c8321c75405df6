"""``agy-harness board``: a local web board of every agy session, with one-click answers.

:mod:`.fleet` finds every agy and conversation; :mod:`.live` follows one live through the session
API; :mod:`.hub` keeps the board (states, who is followed, notifications); :mod:`.cards` decides what
a gate card shows; :mod:`.guard` and :mod:`.app` are the HTTP side; :mod:`.command` is the CLI hook.
Only :func:`add_board_command` is imported by the CLI; the web stack (Starlette, the ``board`` extra)
is imported when the command runs.
"""

from .command import add_board_command

__all__ = ["add_board_command"]
