"""Where agy writes a conversation's transcript.

``<data root>/brain/<cascadeId>/.system_generated/logs/`` holds ``transcript.jsonl`` (agy >= 1.2.4,
:mod:`.modern`) or ``transcript_full.jsonl`` (older agy, e.g. 1.0.10, :mod:`.format`). The data root
is ``~/.gemini/antigravity-cli`` or ``~/.gemini/antigravity`` depending on the build (issue #13's
evidence; peer tools read both). The current file is preferred when both exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .format import TRANSCRIPT_NAME as LEGACY_NAME
from .modern import TRANSCRIPT_NAME as CURRENT_NAME

DEFAULT_ROOTS: tuple[Path, ...] = (
    Path.home() / ".gemini" / "antigravity-cli",
    Path.home() / ".gemini" / "antigravity",
)
NAMES = (CURRENT_NAME, LEGACY_NAME)


def logs_dir(root: Path, cascade_id: str) -> Path:
    return Path(root) / "brain" / cascade_id / ".system_generated" / "logs"


def candidates(roots: Sequence[Path], cascade_id: str) -> list[Path]:
    """Every place the transcript of ``cascade_id`` may be, in the order they are preferred."""
    return [logs_dir(root, cascade_id) / name for root in roots for name in NAMES]


def find_transcript(roots: Sequence[Path], cascade_id: str) -> Path | None:
    """The transcript agy wrote for ``cascade_id``, or None when there is none yet."""
    for path in candidates(roots, cascade_id):
        if path.is_file():
            return path
    return None
