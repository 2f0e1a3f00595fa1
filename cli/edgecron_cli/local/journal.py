"""The local stack's journal: what every DynamoDB write did, on disk before moto answers the write.

The snapshot (snapshot.py) is written every few seconds; what the API acknowledged since would be lost
if the stack died in between (`kill -9`, an out-of-memory kill, a crash). So moto's process appends to
the journal, under the gate and before it answers, the item as it is after each DynamoDB write that
succeeded (PutItem, UpdateItem, DeleteItem, BatchWriteItem, TransactWriteItems): its table, its key and
its attributes, or none when it was deleted. On start the stack restores the snapshot, then replays the
journal in order: the last image of each item is what moto held when it died.

The journal is a series of segment files (`journal/000001.jsonl`, ...), one JSON line per item written.
A snapshot compacts it: the stack asks moto to start a new segment, takes the snapshot, and once the
snapshot is on disk deletes the segments before the new one. Replaying images is idempotent, so a
snapshot taken while handlers write, or segments that outlive a snapshot (a crash between the two
steps), replay to the same state.

Each line is written with one `write` to a file opened for appending, so it is in the operating system
before moto answers: it survives the death of any of the stack's processes. It reaches the disk when the
system flushes it, unless `EDGECRON_LOCAL_JOURNAL_FSYNC=1` asks for an `fdatasync` after every write
(then it also survives a power cut, at a few milliseconds per write).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("edgecron_cli.local")

DIRECTORY = "journal"
SUFFIX = ".jsonl"
FSYNC_VARIABLE = "EDGECRON_LOCAL_JOURNAL_FSYNC"
DYNAMODB_PREFIX = "DynamoDB_20120810."
WRITE_ACTIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})

Key = dict[str, Any]  # attribute name -> DynamoDB JSON value
Written = tuple[str, Key]  # (table name, key) of one item a write touched


def segments(directory: Path) -> list[tuple[int, Path]]:
    """The journal's segment files, oldest first."""
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        if path.suffix == SUFFIX and path.stem.isdigit():
            found.append((int(path.stem), path))
    return sorted(found)


def items_written(action: str, request: dict[str, Any], key_names: Any) -> list[Written]:
    """The (table, key) of every item a successful write of `action` with this request body changed.
    `key_names(table)` gives a table's key attribute names (for the items a Put names in full)."""
    written: list[Written] = []

    def put(table: str, item: dict[str, Any]) -> None:
        written.append((table, {name: item[name] for name in key_names(table) if name in item}))

    if action == "PutItem":
        put(_table(request["TableName"]), request["Item"])
    elif action in ("UpdateItem", "DeleteItem"):
        written.append((_table(request["TableName"]), request["Key"]))
    elif action == "BatchWriteItem":
        for table, requests in request.get("RequestItems", {}).items():
            for entry in requests:
                if "PutRequest" in entry:
                    put(_table(table), entry["PutRequest"]["Item"])
                elif "DeleteRequest" in entry:
                    written.append((_table(table), entry["DeleteRequest"]["Key"]))
    elif action == "TransactWriteItems":
        for entry in request.get("TransactItems", []):
            if "Put" in entry:
                put(_table(entry["Put"]["TableName"]), entry["Put"]["Item"])
            for kind in ("Update", "Delete"):
                if kind in entry:
                    written.append((_table(entry[kind]["TableName"]), entry[kind]["Key"]))
    return written


def _table(name: str) -> str:
    """A table's name from its name or ARN."""
    return name.rpartition(":table/")[2] if ":table/" in name else name


class Journal:
    """Appends item images to the current segment; `rotate` starts a new one. Called under moto's gate,
    so lines are in the order moto applied the writes."""

    def __init__(self, directory: Path, fsync: bool = False) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        existing = segments(directory)
        self._number = existing[-1][0] + 1 if existing else 1
        self._fsync = fsync
        self._lock = threading.Lock()
        self._fd = self._open(self._number)
        self.lines = 0

    @property
    def number(self) -> int:
        return self._number

    def _open(self, number: int) -> int:
        path = self.directory / f"{number:06d}{SUFFIX}"
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def append(self, images: list[tuple[str, Key, dict[str, Any] | None]]) -> None:
        """One line per (table, key, item after the write or None), in one write."""
        if not images:
            return
        data = "".join(
            json.dumps({"t": table, "k": key, "i": item}, separators=(",", ":")) + "\n"
            for table, key, item in images
        ).encode("utf-8")
        with self._lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            if self._fsync:
                os.fdatasync(self._fd)
            self.lines += len(images)

    def rotate(self) -> int:
        """Start a new segment; the number of the new one (every earlier one holds only writes that
        were answered before this call)."""
        with self._lock:
            os.close(self._fd)
            self._number += 1
            self._fd = self._open(self._number)
            return self._number

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)


def discard_before(directory: Path, number: int) -> int:
    """Delete the segments older than `number` (a snapshot now holds what they held); how many."""
    removed = 0
    for found, path in segments(directory):
        if found < number:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def read_images(directory: Path, before: int) -> list[tuple[str, Key, dict[str, Any] | None]]:
    """Every image of the segments older than `before`, in the order they were written. A line cut
    short (the system stopped mid-write) ends its segment: nothing after it was answered."""
    images: list[tuple[str, Key, dict[str, Any] | None]] = []
    for number, path in segments(directory):
        if number >= before:
            continue
        with path.open("rb") as stream:
            for line in stream:
                try:
                    entry = json.loads(line)
                except ValueError:
                    log.warning("journal %s ends with a line cut short; it is ignored", path.name)
                    break
                images.append((entry["t"], entry["k"], entry["i"]))
    return images
