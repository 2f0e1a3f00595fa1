"""DynamoDB on-demand capacity, computed from item sizes the way AWS bills it.

Why not the ConsumedCapacity moto returns: moto answers a constant 1.0 (writes) or 0.5 (reads) per call,
whatever the item size, and leaves out global secondary indexes, whose writes are billed like table writes
(an index with an ALL projection is rewritten by every update of its items; a KEYS_ONLY one only when
an item enters, leaves or moves in it). The rules below are the ones in the DynamoDB developer guide ("Item sizes and formats",
"Read/write capacity units", "Provisioned throughput considerations for GSIs")."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4096
STORAGE_OVERHEAD_BYTES = 100  # per item, per table and per index entry (storage billing only)

Item = Mapping[str, Any]  # an item in DynamoDB's wire format: {"name": {"S": "value"}, ...}


def number_size(text: str) -> int:
    """About one byte per two significant digits, plus one (leading and trailing zeros are free)."""
    mantissa = text.strip().lstrip("+-").lower().split("e")[0].replace(".", "")
    significant = mantissa.strip("0") or "0"
    return (len(significant) + 1) // 2 + 1


def _binary_size(value: Any) -> int:
    if isinstance(value, bytes | bytearray):
        return len(value)
    return len(base64.b64decode(str(value)))


def value_size(value: Any) -> int:
    """Size of one attribute value in wire format; anything else is sized as its JSON text."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return len(json.dumps(value, default=str).encode())
    ((kind, inner),) = value.items()
    match kind:
        case "S":
            return len(str(inner).encode())
        case "N":
            return number_size(str(inner))
        case "B":
            return _binary_size(inner)
        case "BOOL" | "NULL":
            return 1
        case "SS":
            return sum(len(str(v).encode()) for v in inner)
        case "NS":
            return sum(number_size(str(v)) for v in inner)
        case "BS":
            return sum(_binary_size(v) for v in inner)
        case "L":
            return 3 + sum(1 + value_size(v) for v in inner)
        case "M":
            return 3 + sum(1 + len(str(k).encode()) + value_size(v) for k, v in inner.items())
    return len(json.dumps(value, default=str).encode())


def item_size(item: Item | None) -> int:
    """Attribute names count as well as values."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def write_units(size: int) -> int:
    return max(1, math.ceil(size / WRITE_UNIT_BYTES))


def read_units(size: int, consistent: bool) -> float:
    """Strongly consistent: 1 unit per 4 KB; eventually consistent (and every GSI read): half."""
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    return float(units) if consistent else units / 2


@dataclass(frozen=True)
class IndexSchema:
    name: str
    keys: tuple[str, ...]
    projection: str  # ALL | KEYS_ONLY | INCLUDE
    non_key: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableSchema:
    logical_id: str
    name: str
    keys: tuple[str, ...]
    indexes: tuple[IndexSchema, ...] = field(default_factory=tuple)

    def key_of(self, item: Item) -> dict[str, Any]:
        return {k: item[k] for k in self.keys if k in item}

    def entry(self, index: IndexSchema, item: Item | None) -> dict[str, Any] | None:
        """The item's entry in a (sparse) index, or None when it lacks an index key attribute."""
        if not item or any(k not in item for k in index.keys):
            return None
        if index.projection == "ALL":
            return dict(item)
        wanted = (
            set(self.keys)
            | set(index.keys)
            | (set(index.non_key) if index.projection == "INCLUDE" else set())
        )
        return {k: v for k, v in item.items() if k in wanted}


def schemas_from_template(
    tables: Mapping[str, Mapping[str, Any]], names: Mapping[str, str]
) -> dict[str, TableSchema]:
    """Table schemas by physical name, from template.yaml's AWS::DynamoDB::Table properties."""
    out: dict[str, TableSchema] = {}
    for logical_id, props in tables.items():
        indexes = tuple(
            IndexSchema(
                name=str(gsi["IndexName"]),
                keys=tuple(str(k["AttributeName"]) for k in gsi["KeySchema"]),
                projection=str(gsi.get("Projection", {}).get("ProjectionType", "ALL")),
                non_key=tuple(gsi.get("Projection", {}).get("NonKeyAttributes", []) or []),
            )
            for gsi in props.get("GlobalSecondaryIndexes") or []
        )
        name = names.get(logical_id, logical_id)
        out[name] = TableSchema(
            logical_id=logical_id,
            name=name,
            keys=tuple(str(k["AttributeName"]) for k in props["KeySchema"]),
            indexes=indexes,
        )
    return out


@dataclass
class WriteCost:
    """Write units of one item change, split into the table and its indexes, and the storage it adds."""

    table: int = 0
    indexes: dict[str, int] = field(default_factory=dict)
    stored_bytes: int = 0  # net change of billed storage (items + index entries + overheads)

    @property
    def total(self) -> int:
        return self.table + sum(self.indexes.values())


def _stored(size: int, present: bool) -> int:
    return size + STORAGE_OVERHEAD_BYTES if present else 0


def change_cost(schema: TableSchema, old: Item | None, new: Item | None) -> WriteCost:
    """A successful put, update or delete: the table pays for the larger of the old and new item; each
    index pays one write when an entry appears, disappears or changes, two when its key changes."""
    old_size, new_size = item_size(old), item_size(new)
    cost = WriteCost(table=write_units(max(old_size, new_size)))
    cost.stored_bytes = _stored(new_size, new is not None) - _stored(old_size, old is not None)
    for index in schema.indexes:
        before, after = schema.entry(index, old), schema.entry(index, new)
        b_size, a_size = item_size(before), item_size(after)
        cost.stored_bytes += _stored(a_size, after is not None) - _stored(b_size, before is not None)
        units = 0
        if before is None and after is not None:
            units = write_units(a_size)
        elif before is not None and after is None:
            units = write_units(b_size)
        elif before is not None and after is not None:
            if any(before[k] != after[k] for k in index.keys):
                units = write_units(b_size) + write_units(a_size)
            elif before != after:
                units = write_units(max(b_size, a_size))
        if units:
            cost.indexes[index.name] = units
    return cost


def failed_condition_cost(old: Item | None) -> WriteCost:
    """A conditional write that fails still consumes the write units of the existing item (min 1)."""
    return WriteCost(table=write_units(item_size(old)))
