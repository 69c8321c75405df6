"""A tool call's arguments, the same from either projection of its step.

The poll carries ``toolCall.argumentsJson`` (what the model sent); the stream strips it, so the
arguments are recovered from ``generic.args`` or, through ``metadata.argumentsOrder``, from the
step's typed body (proto int64 fields back to numbers, ``file://`` URIs back to paths).
``ask_question``'s arguments come from its typed body in both. Pure.
"""

from __future__ import annotations

import logging
import re
from typing import Any
from urllib.parse import unquote, urlparse

from . import safejson
from .steps import DISPLAY_ARGUMENT_KEYS, Step, as_dict, as_list, as_str

log = logging.getLogger("agy_harness.core.steps")


def _json_object(text: str, clean: bool = False) -> dict[str, Any] | None:
    """The JSON object ``text`` holds (another value is wrapped as ``{"value": ...}``), fresh;
    ``clean``: made safe to encode (``safejson.clean``). None when ``text`` is not JSON."""
    try:
        value = safejson.loads_clean(text) if clean else safejson.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else {"value": value}


#: Words in the argument names of proto int64 fields (``WaitMsBeforeAsync``), which proto-JSON renders
#: as strings ("2000"): recovered from a typed body they become the number the model sent, so the
#: poll (argumentsJson) and the stream (typed body) give the same arguments.
_INT64_WORDS = frozenset(
    {
        "Ms",
        "Millis",
        "Seconds",
        "Bytes",
        "Count",
        "Line",
        "Lines",
        "Index",
        "Size",
        "Limit",
        "Offset",
        "Depth",
        "Timeout",
    }
)
_CAMEL_WORD = re.compile(r"[A-Z][a-z]*|[a-z]+")
_INTEGER = re.compile(r"-?\d+")


def _from_body(name: str, body: dict[str, Any]) -> tuple[bool, Any]:
    field = _body_field(name, tuple(body))
    if field is None:
        return False, None
    key, exact = field
    value = body[key]
    # ``AbsolutePath`` is a path; its typed body field ``absolutePathUri`` is a file:// URI.
    if not exact and key.lower().endswith("uri") and isinstance(value, str) and value.startswith("file://"):
        value = file_uri_path(value)
    return True, value


def file_uri_path(uri: str) -> str:
    """The path of a ``file://`` URI: ``unquote(urlparse(uri).path)``, without urlparse where the URI
    is a plain ``file:///path`` (no host, query or fragment)."""
    rest = uri[7:]
    if rest.startswith("/") and rest.isprintable() and "?" not in rest and "#" not in rest:
        return unquote(rest)  # (urlparse drops tabs and line breaks: not printable)
    return unquote(urlparse(uri).path)


def _body_field(name: str, keys: tuple[str, ...]) -> tuple[str, bool] | None:
    """The typed body's field for argument ``name``: the key equal to it but for case, else the
    shortest that starts with it; and whether it was equal. Memoised: a step type has one set of
    keys, and this is on the hot path of every streamed tool step (never grows without bound)."""
    memo = (name, keys)
    if memo in _FIELDS:
        return _FIELDS[memo]
    lowered = name.lower()
    found: tuple[str, bool] | None = None
    for key in keys:
        if key.lower() == lowered:
            found = key, True
            break
    else:
        prefixed = sorted((k for k in keys if k.lower().startswith(lowered)), key=len)
        found = (prefixed[0], False) if prefixed else None
    if len(_FIELDS) < 1024:
        _FIELDS[memo] = found
    return found


_FIELDS: dict[tuple[str, tuple[str, ...]], tuple[str, bool] | None] = {}


def _as_sent(name: str, value: Any) -> Any:
    if isinstance(value, str) and _is_int64_name(name) and _INTEGER.fullmatch(value):
        return int(value)
    return value


def _is_int64_name(name: str) -> bool:
    known = _INT64_NAMES.get(name)
    if known is None:
        known = bool(_INT64_WORDS & set(_CAMEL_WORD.findall(name)))
        if len(_INT64_NAMES) < 1024:
            _INT64_NAMES[name] = known
    return known


_INT64_NAMES: dict[str, bool] = {}


def _ask_question_arguments(step: Step) -> dict[str, Any] | None:
    """ask_question's arguments as both projections carry them: the typed body's questions and option
    texts. (The poll's argumentsJson also has ``is_multi_select``, which the stream strips: it is
    dropped so the committed tool_call is the same whichever projection committed it; the gate
    still gets the flags, see ``multi_select_flags``.)"""
    questions = step.body.get("questions")
    if step.type != "ASK_QUESTION" or not isinstance(questions, list):
        return None
    return {
        "questions": [
            {
                "question": as_str(q.get("question")),
                "options": [as_str(as_dict(o).get("text")) for o in as_list(q.get("options"))],
            }
            for q in map(as_dict, questions)
        ]
    }


def tool_arguments(step: Step) -> dict[str, Any]:
    """The tool call's arguments, the same from either projection, safe to encode (``safejson.clean``).

    ``toolCall.argumentsJson``, else ``generic.args``, else recovered via ``metadata.argumentsOrder``
    (ask_question: from its typed body in both projections).
    """
    args = _ask_question_arguments(step)  # fresh, and made of as_str texts: clean already
    return args if args is not None else _sent_arguments(step, clean=True)


def _sent_arguments(step: Step, clean: bool = False) -> dict[str, Any]:
    """The arguments as the model sent them (display keys left out), a fresh dict; ``clean``: made
    safe to encode (``safejson.clean``)."""
    args: dict[str, Any] | None = None
    arguments_json = step.tool_call.get("argumentsJson")
    if isinstance(arguments_json, str) and arguments_json:
        args = _json_object(arguments_json, clean)
        if args is not None:  # freshly parsed: ours to trim
            for key in DISPLAY_ARGUMENT_KEYS:
                args.pop(key, None)
            return args
        log.warning("step %s: toolCall.argumentsJson is not JSON; recovering from the body", step.key)
    if isinstance(as_dict(step.raw.get("generic")).get("args"), dict):
        args = dict(step.raw["generic"]["args"])
    else:
        args = {}
        body = step.body
        for name in as_list(step.metadata.get("argumentsOrder")):
            if not isinstance(name, str) or name in DISPLAY_ARGUMENT_KEYS:
                continue
            found, value = _from_body(name, body)
            if found:
                args[name] = _as_sent(name, value)
    args = {k: v for k, v in args.items() if k not in DISPLAY_ARGUMENT_KEYS}
    return safejson.clean(args) if clean else args


def multi_select_flags(step: Step) -> list[bool]:
    """Per-question ``is_multi_select`` from ``toolCall.argumentsJson`` (poll projection only)."""
    args = _sent_arguments(step) if step.tool_call.get("argumentsJson") else {}
    return [bool(as_dict(q).get("is_multi_select")) for q in as_list(args.get("questions"))]
