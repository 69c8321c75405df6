"""Poison-proof JSON: agy's bodies, frames and steps read (and events written) without surprises.

``json.loads`` raises ``RecursionError`` on values nested ~1,000 levels deep and ``ValueError`` on
integers over 4,300 digits; ``json.dumps`` / UTF-8 encoding fail on lone surrogates (``"\\ud800"``
is valid JSON). One such step used to fail a whole poll response or stream frame, forever. Here:

* :func:`loads` reads any JSON document. When the plain parse hits a nesting or digit limit, the
  document is re-read with every container deeper than :data:`MAX_PARSE_DEPTH` and every integer
  longer than :data:`MAX_DIGITS` replaced by a marker string, so the rest (the other steps of the
  snapshot, the other fields of the step) is kept. Anything that is not JSON raises ``ValueError``
  (never RecursionError).
* :func:`clean` makes a parsed value safe to carry and encode: lone surrogates become U+FFFD, and
  containers nested deeper than :data:`MAX_VALUE_DEPTH` become a marker string. The mapper applies
  it to everything it copies from a step into an event, so every sink and the cursor store can
  encode every event, and both projections of a step give the same content.

Pure stdlib.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

MAX_PARSE_DEPTH = 200
MAX_DIGITS = 4000
MAX_VALUE_DEPTH = 64

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?', re.S)
_SURROGATE = re.compile("[\ud800-\udfff]")


def deep_marker(depth: int) -> str:
    return f"…(truncated: nested deeper than {depth} levels)"


def _number_marker(digits: int) -> str:
    return f"…(a number of {digits} digits)"


def _defuse(text: str) -> str:
    """``text`` with over-deep containers and over-long integers replaced by marker strings."""
    out: list[str] = []
    pos = 0
    depth = 0
    skip_from = -1  # the index where a cut container started, while skipping it
    skip_depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first in "[{":
            depth += 1
            if skip_from < 0 and depth > MAX_PARSE_DEPTH:
                skip_from, skip_depth = match.start(), depth
        elif first in "]}":
            if skip_from >= 0 and depth == skip_depth:
                out.append(text[pos:skip_from])
                out.append(json.dumps(deep_marker(MAX_PARSE_DEPTH)))
                pos = match.end()
                skip_from = -1
            depth -= 1
        elif skip_from < 0 and first != '"':
            digits = len(token.lstrip("-").split(".")[0].split("e")[0].split("E")[0])
            if digits > MAX_DIGITS:
                out.append(text[pos : match.start()])
                out.append(json.dumps(_number_marker(digits)))
                pos = match.end()
    out.append(text[pos:])
    return "".join(out)


#: json.loads's own C scanner, without its Python layers (``scan_once`` is set in JSONDecoder's
#: __init__, not declared on the class)
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads(data: str | bytes | bytearray) -> Any:
    """Parse one JSON document; over-deep or over-long parts become markers. Raises ValueError
    (UnicodeDecodeError and JSONDecodeError included) for what is not JSON, nothing else."""
    # the scanner straight: a third of json.loads's cost on a short text. Bytes are read as UTF-8
    # first (a stream frame, a body); whatever json.loads would read otherwise (a BOM, UTF-16/32,
    # surrogates) fails the strict decode or the scanner, and json.loads below reads it as before
    try:
        text = data if isinstance(data, str) else data.decode("utf-8")
        value, end = _scan(text, 0)
    except (StopIteration, ValueError, RecursionError):
        pass  # not a document the scanner takes whole: json.loads below says what it is
    else:
        if end == len(text):
            return value
    try:
        return json.loads(data)
    except RecursionError:
        pass
    except ValueError as exc:
        if "digits" not in str(exc):  # not JSON at all
            raise
    text = data if isinstance(data, str) else bytes(data).decode("utf-8")
    try:
        return json.loads(_defuse(text))
    except RecursionError as exc:
        raise ValueError(f"JSON nested too deeply: {exc}") from None


#: how much of a text :func:`has_surrogate` encodes at a time (a bounded copy, not the whole text's)
_CHUNK = 1 << 20


def has_surrogate(text: str) -> bool:
    """``text`` holds a surrogate code point (U+D800 to U+DFFF), the one thing UTF-8 cannot encode:
    the UTF-8 encoder finds it, in slices, 3 to 25 times faster than a scan by ``[\\ud800-\\udfff]``
    (measured on 4 MiB texts: 1-10 ms against 20-34 ms)."""
    if text.isascii():
        return False
    try:
        for at in range(0, len(text), _CHUNK):
            text[at : at + _CHUNK].encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def clean_text(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (they cannot be encoded as UTF-8)."""
    if not has_surrogate(text):
        return text
    return _SURROGATE.sub("\ufffd", text)


def clean(value: Any) -> Any:
    """``value`` safe to encode anywhere (see module doc): a copy of its containers; strings and
    scalars are returned as they are when already clean."""
    return _clean(value, MAX_VALUE_DEPTH)


_PLAIN = frozenset({int, float, bool, type(None)})


def _clean(value: Any, left: int) -> Any:
    kind = type(value)
    if kind is str:
        return value if value.isascii() else clean_text(value)
    if kind is dict or (kind is not list and isinstance(value, dict)):
        if left <= 0:
            return deep_marker(MAX_VALUE_DEPTH)
        # plain leaves inline: most values of a step are short strings and numbers
        return {
            (k if type(k) is str and k.isascii() else clean_text(str(k))): (
                v if type(v) in _PLAIN or (type(v) is str and v.isascii()) else _clean(v, left - 1)
            )
            for k, v in value.items()
        }
    if kind is list or isinstance(value, list | tuple):
        if left <= 0:
            return deep_marker(MAX_VALUE_DEPTH)
        return [
            v if type(v) in _PLAIN or (type(v) is str and v.isascii()) else _clean(v, left - 1) for v in value
        ]
    if isinstance(value, str):
        return clean_text(value)
    return value


# A JSON text that can hold no lone surrogate: none as a character, none as an escape (\ud800 to
# \udfff; a false alarm, e.g. an escaped backslash before "ud800", only costs the slow path).
_MAYBE_SURROGATE = re.compile("[\ud800-\udfff]|\\\\u[dD][89a-fA-F]")


def _shallow(value: Any, left: int) -> bool:
    """No container in ``value`` nested deeper than ``left`` levels (what :func:`clean` keeps whole)."""
    if left <= 0:
        return False
    for v in value.values() if type(value) is dict else value:
        if (type(v) is dict or type(v) is list) and not _shallow(v, left - 1):
            return False
    return True


def _fits(text: str, value: Any) -> bool:
    """``value``, whose JSON text is ``text``, is nested at most :data:`MAX_VALUE_DEPTH` deep."""
    if text.count("[") + text.count("{") <= MAX_VALUE_DEPTH:  # in C; brackets in strings count too
        return True
    return type(value) not in (dict, list) or _shallow(value, MAX_VALUE_DEPTH)


def needs_no_cleaning(text: str, value: Any) -> bool:
    """``value``, whose ``json.dumps(..., ensure_ascii=False)`` is ``text``, is its own
    :func:`clean`: no lone surrogate, nothing nested past :data:`MAX_VALUE_DEPTH`."""
    return not has_surrogate(text) and _fits(text, value)


def loads_clean(text: str) -> Any:
    """``clean(loads(text))``, without the copy when the text can hold nothing to clean (the common
    case: a tool call's ``argumentsJson``). Raises ValueError like :func:`loads`."""
    value = loads(text)
    plain = text.isascii() and "\\u" not in text  # (two C scans, cheaper than the regex)
    if type(value) in (dict, list) and (plain or not _MAYBE_SURROGATE.search(text)) and _fits(text, value):
        return value  # freshly parsed: nobody else holds it
    return clean(value)


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def make_encoder(
    sort_keys: bool, item_separator: str, key_separator: str, *, ensure_ascii: bool = False
) -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=..., sort_keys=..., separators=...)``, the same text, from
    json's C encoder made once (json.dumps builds a JSONEncoder and a C encoder on every call: half
    its cost on a tool step's body). No cycle check: a cycle raises RecursionError instead of
    ValueError (every caller here takes both)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # (an interpreter without json's C speedups)
        encoder = json.JSONEncoder(
            ensure_ascii=ensure_ascii, sort_keys=sort_keys, separators=(item_separator, key_separator)
        )
        return encoder.encode
    chunks = make(
        None,
        _not_json,
        json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring,
        None,
        key_separator,
        item_separator,
        sort_keys,
        False,
        True,
    )
    join = "".join

    def encode(value: Any) -> str:
        return join(chunks(value, 0))

    return encode


encode = make_encoder(False, ", ", ": ")  # json.dumps(value, ensure_ascii=False)
encode_sorted = make_encoder(True, ", ", ": ")  # ... sort_keys=True
#: the canonical text a digest is taken of: sorted keys, no spaces, not ASCII-escaped
canonical = make_encoder(True, ",", ":")


def dumps(value: Any, *, sort_keys: bool = False) -> str:
    """``json.dumps(clean(value), ensure_ascii=False, sort_keys=sort_keys)``, without the copy when
    ``value`` needs no cleaning (nothing nested too deep, no lone surrogate)."""
    try:
        text = encode_sorted(value) if sort_keys else encode(value)
    except (TypeError, ValueError, RecursionError):  # odd keys, a cycle, very deep: the careful way
        return json.dumps(clean(value), ensure_ascii=False, sort_keys=sort_keys)
    if needs_no_cleaning(text, value):
        return text
    return json.dumps(clean(value), ensure_ascii=False, sort_keys=sort_keys)
