"""``audit verify``'s checker against tampering: a changed byte and a truncated tail are each detected
in every one of 1,000 random trials, every possible deleted record and every possible pair of swapped
records (all 14 and all 91 of them: 1,000 random trials drew the same few again and again), and the
report names the record and how it is broken. The ledger is written once by the real file ledger (its
writer thread, its checkpoints, its key); each trial mutates a copy of its bytes. The real public key
checks every signature, each distinct (signature, message) once (:class:`Remembered`)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from agy_harness.adapters.store import ledger_verify as V
from agy_harness.adapters.store.ledger_file import CHECKPOINTS, LEDGER, FileLedger, load_keys
from agy_harness.adapters.store.ledger_read import read_file
from agy_harness.ports.protocols import LedgerEntry

TRIALS = 1000
RECORDS = 14


class Remembered:
    """The real public key, its verdict on each (signature, message) remembered across the trials:
    Ed25519 verification is deterministic, so re-checking a record no trial touched gives the verdict
    the first check gave (2,000 trials x 14 signatures: seconds of CPU). A signature or a record a
    trial changed is a new (signature, message): the real key checks it."""

    def __init__(self, public: Ed25519PublicKey) -> None:
        self._public = public
        self._verdicts: dict[tuple[bytes, bytes], Exception | None] = {}

    def verify(self, signature: bytes, data: bytes) -> None:
        key = (bytes(signature), bytes(data))
        if key not in self._verdicts:
            try:
                self._public.verify(signature, data)
                self._verdicts[key] = None
            except (InvalidSignature, ValueError, TypeError) as exc:
                self._verdicts[key] = exc
        refused = self._verdicts[key]
        if refused is not None:
            raise type(refused)(*refused.args)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes, object]:
    directory = tmp_path_factory.mktemp("ledger") / "ledger"
    ledger = FileLedger(directory)
    for i in range(RECORDS):
        kind = ("decision", "delivery", "outcome")[i % 3]
        body = {"gate_id": f"gate-{i}", "shown": f"run_command: rm -rf build/{i} — é ✓", "n": i}
        ledger.record_now(LedgerEntry(type=kind, body=body))  # type: ignore[arg-type]
    ledger.close()
    _, public = load_keys(directory, create=False)
    assert public is not None
    return read_file(directory, LEDGER), read_file(directory, CHECKPOINTS), Remembered(public)


def check(data: bytes, checkpoints: bytes, public: object) -> V.Report:
    return V.verify(data, checkpoints, public)  # type: ignore[arg-type]


def test_the_ledger_as_written_verifies(written: tuple[bytes, bytes, object]) -> None:
    data, checkpoints, public = written
    report = check(data, checkpoints, public)
    assert report.ok, report.problems
    assert (report.records, report.signed_seq, report.notes) == (RECORDS, RECORDS, [])


def test_a_changed_byte_is_detected_in_every_trial(written: tuple[bytes, bytes, object]) -> None:
    data, checkpoints, public = written
    rng = random.Random(36)
    lines = data.split(b"\n")
    for _ in range(TRIALS):
        at = rng.randrange(len(data))
        new = bytes([(data[at] + rng.randrange(1, 256)) % 256])
        report = check(data[:at] + new + data[at + 1 :], checkpoints, public)
        assert not report.ok, (at, new)
        line = data[:at].count(b"\n") + 1
        if data[at : at + 1] == b"\n" or new == b"\n":
            continue  # lines split or joined: named by line, or as a cut-off tail
        seq = line if line <= len(lines) else None
        assert any(f"record {seq} (line {line})" in p or f"line {line} " in p for p in report.problems), (
            at,
            report.problems,
        )


def test_a_deleted_record_is_detected_in_every_trial(written: tuple[bytes, bytes, object]) -> None:
    data, checkpoints, public = written
    lines = data.split(b"\n")[:-1]
    assert len(lines) == RECORDS
    for gone in range(len(lines)):
        kept = lines[:gone] + lines[gone + 1 :]
        report = check(b"".join(line + b"\n" for line in kept), checkpoints, public)
        seq = gone + 1
        if seq == len(lines):
            assert any("truncated tail" in p and f"{seq}..{seq}" in p for p in report.problems), (
                report.problems
            )
        else:
            assert f"record {seq} is missing (deleted): the ledger holds records up to {len(lines)}" in (
                report.problems
            )


def test_two_swapped_records_are_detected_in_every_trial(written: tuple[bytes, bytes, object]) -> None:
    data, checkpoints, public = written
    lines = data.split(b"\n")[:-1]
    pairs = list(itertools.combinations(range(len(lines)), 2))
    assert len(pairs) == RECORDS * (RECORDS - 1) // 2
    for i, j in pairs:
        swapped = list(lines)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        report = check(b"".join(line + b"\n" for line in swapped), checkpoints, public)
        expected = f"records {i + 1} and {j + 1} are swapped: record {i + 1} is on line {j + 1}, record {j + 1} on line {i + 1}"
        assert expected in report.problems, report.problems


def test_a_truncated_tail_is_detected_in_every_trial(written: tuple[bytes, bytes, object]) -> None:
    data, checkpoints, public = written
    rng = random.Random(39)
    for _ in range(TRIALS):
        cut = rng.randrange(len(data))  # at least one byte is cut off
        report = check(data[:cut], checkpoints, public)
        complete = data[:cut].count(b"\n")
        assert (
            f"truncated tail: the ledger ends at record {complete}, but a signed checkpoint covers record {RECORDS}: records {complete + 1}..{RECORDS} were cut off"
            in (report.problems)
        ), (cut, report.problems)


def test_a_torn_final_line_from_a_kill_is_not_a_problem(written: tuple[bytes, bytes, object]) -> None:
    """What a kill mid-write leaves: the record in flight torn, its checkpoint never written."""
    data, checkpoints, public = written
    cps = checkpoints.split(b"\n")[:-1]
    before_last = b"".join(line + b"\n" for line in cps[:-1])
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[1]
    torn = data[: len(data) - len(last) - 1] + last[: len(last) // 2]
    report = check(torn, before_last, public)
    assert report.ok, report.problems
    assert report.notes and "torn final line" in report.notes[0]
    # the whole record written but its checkpoint not: the newest record is unsigned, still fine
    report = check(data, before_last, public)
    assert report.ok and "has no checkpoint yet" in report.notes[0]


def test_forged_checkpoints_and_a_missing_key_are_problems(
    written: tuple[bytes, bytes, object], tmp_path: Path
) -> None:
    data, checkpoints, public = written
    forged = checkpoints.replace(b'"sequence":3', b'"sequence":4', 1)
    assert any("bad signature" in p for p in check(data, forged, public).problems)
    assert any("public key is missing" in p for p in check(data, checkpoints, None).problems)
    assert any("covered by no signed checkpoint" in p for p in check(data, b"", public).problems)
