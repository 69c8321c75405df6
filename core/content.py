"""The content a human gives to accept an MCP elicitation (agy's ``elicitation.contentJson``): read and
checked against the schema the server asked with (``requestedSchemaJson``), never guessed. Pure.

MCP's form elicitation asks for a flat object of primitive fields (string, number, integer, boolean,
an enum of strings). The content is accepted only as a JSON object that gives every required field,
no field the schema does not name, and each field of its type (and among its enum); anything else is
refused with :class:`~.verdicts.AnswerError`, nothing sent. What reaches agy is the object's canonical
text (sorted keys, no spaces), so the ledger and the card name exactly what was sent.
"""

from __future__ import annotations

import json
from typing import Any

from agy_harness.ports.events import GateOpened

from .kind_cards import schema_of
from .verdicts import AnswerError

MAX_CONTENT = 64 * 1024  # bytes of content text read at most

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
}


def checked_content(gate: GateOpened, text: str) -> str:
    """``text`` as the canonical JSON object an accept of ``gate`` sends; AnswerError when it is not
    one the gate's requested schema takes (module doc)."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_CONTENT:
        raise AnswerError(f"the content is over {MAX_CONTENT // 1024} KiB")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnswerError(f"the content is not JSON ({exc.msg})") from None
    except ValueError:
        raise AnswerError("the content is not JSON") from None
    if not isinstance(value, dict):
        raise AnswerError('the content must be a JSON object ({"field": value, ...})')
    schema = schema_of(gate.request)
    if "unreadable" in schema:
        raise AnswerError("the schema the MCP server asked with cannot be read: answer in agy's terminal")
    raw_properties, raw_required = schema.get("properties"), schema.get("required")
    properties: dict[str, Any] = raw_properties if isinstance(raw_properties, dict) else {}
    required: list[Any] = raw_required if isinstance(raw_required, list) else []
    missing = [name for name in required if isinstance(name, str) and name not in value]
    if missing:
        raise AnswerError(f"the content lacks {', '.join(missing)} (the MCP server requires it)")
    unknown = [name for name in value if name not in properties]
    if unknown:
        raise AnswerError(f"the MCP server does not ask for {', '.join(unknown)}")
    for name, item in value.items():
        _check(name, item, properties[name])
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _check(name: str, item: Any, spec: Any) -> None:
    spec = spec if isinstance(spec, dict) else {}
    kind = spec.get("type")
    allowed = _TYPES.get(kind) if isinstance(kind, str) else None
    if allowed is not None:
        wrong_bool = isinstance(item, bool) and kind != "boolean"
        if not isinstance(item, allowed) or wrong_bool:
            raise AnswerError(f"{name} must be a {kind}")
    enum = spec.get("enum")
    if isinstance(enum, list) and item not in enum:
        raise AnswerError(f"{name} must be one of {', '.join(map(str, enum))}")
