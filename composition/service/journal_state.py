"""What the cursor journal writes of the mapper state on each delivery (:func:`journal_state`, used by
:class:`~.emitter.Emitter`): the state's own values, not a dump per delivery."""

from __future__ import annotations

from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from agy_harness.core.mapper_state import LiveText
from agy_harness.core.reconciler import MapperState


def journal_state(st: MapperState) -> dict[str, Any]:
    """``st.model_dump(mode="json")`` without ``committed``, as the journal diffs it, made from the
    state's own values (a dump per delivery was most of what the journal cost an attach: 10,000
    deliveries). Every field but ``committed``, ``gates`` and ``live`` holds a str, an int or None
    (:data:`_PLAIN_FIELDS` checks it once, from the model's annotations), shared as they are; ``gates``
    and ``live`` are copied (the journal keeps the last state it wrote to diff the next one against).
    Should a field of another type appear, every delivery goes through ``model_dump`` instead."""
    if not _PLAIN_FIELDS:
        return st.model_dump(mode="json", exclude={"committed"})
    state = dict(vars(st))
    del state["committed"]
    gates, live = state["gates"], state["live"]
    state["gates"] = dict(gates) if gates else {}
    state["live"] = {k: dict(v) for k, v in live.items()} if live else {}  # LiveText: str/int fields
    return state


def _plain(annotation: Any) -> bool:
    """Whether a field of this type dumps to itself: str, int, None, a Literal of those, or a union of them."""
    if annotation in (str, int, type(None)):
        return True
    if get_origin(annotation) is Literal:
        return all(type(a) in (str, int) for a in get_args(annotation))
    if get_origin(annotation) in (Union, UnionType):
        return all(_plain(a) for a in get_args(annotation))
    return False


_PLAIN_FIELDS = all(
    _plain(f.annotation)
    for name, f in MapperState.model_fields.items()
    if name not in ("committed", "gates", "live")
) and all(_plain(f.annotation) for f in LiveText.model_fields.values())
