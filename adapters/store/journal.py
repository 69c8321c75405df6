"""The cursor journal's records: what changed in a cursor since the last record, as one JSON line.

A record is ``{"c": [...], "s": {...}, "l": {...}, "ld": [...]}`` (each key only when non-empty):

* ``c``: step keys newly committed (added to the set; re-adding is harmless);
* ``s``: top-level state fields whose value changed (everything but ``live``), whole;
* ``l``: per live reply (step key), the fields that changed. A string that grew by appending (the
  streamed text and thinking) is written as ``{"<field>@": offset, "<field>+": suffix}`` and read
  back as ``old[:offset] + suffix``, so a reply of N bytes costs O(N) over all its deltas, not
  O(N²); any other change is the whole value under the field's own name;
* ``ld``: live replies that are gone (settled).

Applying a record is idempotent, so replaying a journal over the state it produced changes nothing.
No I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring_ascii
from typing import Any

from agy_harness.core.safejson import clean, make_encoder

Record = dict[str, Any]
_esc: Callable[[str], str] = encode_basestring_ascii
_ABSENT: Any = object()  # a field the old state lacks (None is a value)


def _entry_diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, value in new.items():
        before = old.get(field)
        if before == value and field in old:
            continue
        if isinstance(value, str) and isinstance(before, str) and value.startswith(before):
            out[f"{field}@"] = len(before)
            out[f"{field}+"] = value[len(before) :]
        else:
            out[field] = value
    return out


def diff(old: dict[str, Any], new: dict[str, Any], added: Iterable[str]) -> Record:
    """The record that turns state ``old`` into ``new`` (neither holds ``committed``) plus ``added`` keys."""
    rec: Record = {}
    committed = list(added)
    if committed:
        rec["c"] = committed
    prior = old.get
    changed = {k: v for k, v in new.items() if prior(k, _ABSENT) != v and k != "live"}
    if changed:
        rec["s"] = changed
    old_live: dict[str, Any] = old.get("live") or {}
    new_live: dict[str, Any] = new.get("live") or {}
    if not (old_live or new_live):  # no reply streaming (an attach): nothing more to compare
        return rec
    live: dict[str, Any] = {}
    for key, entry in new_live.items():
        before = old_live.get(key)
        if before is entry:
            continue
        d = _entry_diff(before if isinstance(before, dict) else {}, entry if isinstance(entry, dict) else {})
        if d or key not in old_live:
            live[key] = d
    if live:
        rec["l"] = live
    gone = [k for k in old_live if k not in new_live]
    if gone:
        rec["ld"] = gone
    return rec


def is_durable_change(rec: Record) -> bool:
    """True when the record holds more than streamed text: committed keys, state fields, settled replies."""
    return bool(rec.get("c") or rec.get("s") or rec.get("ld"))


def line(old: dict[str, Any], new: dict[str, Any], added: list[str]) -> tuple[bytes, bool]:
    """``encode(diff(old, new, added))`` (b"" when nothing changed) and whether the record is a durable
    change. The common record -- committed keys and changed fields, no reply streaming: every step of
    an attach -- is written straight from the values instead of being built as a dict and handed to
    the JSON encoder (that was 40% of a record's cost, paid once per delivery)."""
    if not (old.get("live") or new.get("live")):
        prior = old.get
        changed = [(k, v) for k, v in new.items() if prior(k, _ABSENT) != v and k != "live"]
        if not changed and not added:
            return b"", False
        try:
            return _plain_line(added, changed), True
        except (TypeError, ValueError, RecursionError):
            pass  # a value of another kind (not a str key, a deep field): the general way
    rec = diff(old, new, added)
    return (encode(rec) if rec else b""), is_durable_change(rec)


def _plain_line(added: list[str], changed: list[tuple[str, Any]]) -> bytes:
    parts = []
    if added:
        parts.append('"c":[' + ",".join(map(_esc, added)) + "]")
    if changed:
        fields = []
        for k, v in changed:
            kind = type(v)
            if kind is str:
                fields.append(_esc(k) + ":" + _esc(v))
            elif kind is int:
                fields.append(_esc(k) + ":" + int.__repr__(v))
            elif v is None:
                fields.append(_esc(k) + ":null")
            else:
                fields.append(_esc(k) + ":" + _compact(v))
        parts.append('"s":{' + ",".join(fields) + "}")
    return ("{" + ",".join(parts) + "}\n").encode("ascii")


def apply(committed: dict[str, None], state: dict[str, Any], rec: Record) -> None:
    """Apply one record in place (idempotent). ``committed`` is an insertion-ordered set."""
    for key in rec.get("c") or ():
        committed[str(key)] = None
    for key, value in (rec.get("s") or {}).items():
        state[key] = value
    live = state.setdefault("live", {})
    for key in rec.get("ld") or ():
        live.pop(key, None)
    for key, d in (rec.get("l") or {}).items():
        entry = dict(live.get(key) or {})
        for field, value in d.items():
            if field.endswith("@"):
                continue
            if field.endswith("+"):
                name = field[:-1]
                offset = int(d.get(f"{name}@", 0))
                entry[name] = str(entry.get(name, ""))[:offset] + str(value)
            else:
                entry[field] = value
        live[key] = entry


def dumps(value: Any) -> bytes:
    """Compact ASCII JSON that never fails on content: ASCII escapes carry any str (a lone surrogate
    too); what the encoder still refuses (over-deep nesting) goes through ``safejson.clean`` first."""
    try:
        return _compact(value).encode("ascii")
    except (ValueError, RecursionError):
        return json.dumps(clean(value), separators=(",", ":")).encode("ascii")


#: ``json.dumps(value, separators=(",", ":"))``'s text from json's C encoder, made once
#: (``JSONEncoder.encode`` makes one per call: that was half of what encoding a record cost)
_compact = make_encoder(False, ",", ":", ensure_ascii=True)


def encode(rec: Record) -> bytes:
    """One journal line."""
    return dumps(rec) + b"\n"
