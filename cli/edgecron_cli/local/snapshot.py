"""Persist the local stack's state across restarts: DynamoDB items, secrets, KMS keys, custom resource ids.

DynamoDB is EdgeCron's source of truth, so it is all that is kept: queue messages are not, and the scan
rebuilds them from the tables after a restore. The snapshot is written every few seconds; the journal
(journal.py) holds every DynamoDB write since, so a start restores the snapshot and then replays the
journal, and each snapshot compacts the journal (`save`).
"""

from __future__ import annotations

import base64
import json
import logging
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from edgecron_cli.local import journal
from edgecron_cli.local.moto_process import MotoCallError, MotoProcess
from edgecron_cli.local.provision import Provisioned, kms_alias_name
from edgecron_cli.local.template import Template

log = logging.getLogger("edgecron_cli.local")

FORMAT_VERSION = 1


@dataclass
class Snapshot:
    """Keyed by logical id, so a snapshot survives a change of name prefix or moto port."""

    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    custom_resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    kms_keys: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def item_count(self) -> int:
        return sum(len(items) for items in self.tables.values())


def read_snapshot(path: Path) -> Snapshot | None:
    if not path.exists():
        return None
    document = json.loads(path.read_text(encoding="utf-8"))
    if document.get("version") != FORMAT_VERSION:
        raise ValueError(f"{path}: unsupported snapshot version {document.get('version')!r}")
    return Snapshot(
        tables=document["tables"],
        secrets=document.get("secrets", {}),
        custom_resources=document.get("custom_resources", {}),
        kms_keys=document.get("kms_keys", {}),
    )


def write_snapshot(path: Path, snapshot: Snapshot) -> None:
    """Write atomically (temporary file, then rename), so a crash never leaves half a snapshot."""
    document = {
        "version": FORMAT_VERSION,
        "saved_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "tables": snapshot.tables,
        "secrets": snapshot.secrets,
        "custom_resources": snapshot.custom_resources,
        "kms_keys": snapshot.kms_keys,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
    os.replace(temporary, path)


def take_snapshot(
    provisioned: Provisioned, custom_resources: dict[str, dict[str, Any]], moto: MotoProcess
) -> Snapshot:
    """Read every table of the template from moto; collect secret values and KMS key material."""
    tables = {
        logical_id: moto.table_items(table_name) for logical_id, table_name in provisioned.tables.items()
    }
    return Snapshot(
        tables=tables,
        secrets={logical_id: secret.value for logical_id, secret in provisioned.secrets.items()},
        custom_resources=dict(custom_resources),
        kms_keys={
            logical_id: {
                "key_id": key.key_id,
                "material": base64.b64encode(moto.kms_key_material(key.key_id)).decode("ascii"),
            }
            for logical_id, key in provisioned.kms_keys.items()
        },
    )


def restore_kms_keys(
    snapshot: Snapshot, template: Template, kms: Any, name_prefix: str, moto: MotoProcess
) -> None:
    """Bring back the template's KMS keys with their ids and material, before provisioning looks for them."""
    for logical_id, saved in snapshot.kms_keys.items():
        if logical_id not in template.kms_keys:
            continue
        moto.import_kms_key(saved["key_id"], base64.b64decode(saved["material"]), description=logical_id)
        kms.create_alias(AliasName=kms_alias_name(name_prefix, logical_id), TargetKeyId=saved["key_id"])


def restore_tables(provisioned: Provisioned, snapshot: Snapshot, moto: MotoProcess) -> None:
    """Put every saved item back; tables the template no longer has are skipped with a warning."""
    for logical_id, items in snapshot.tables.items():
        table_name = provisioned.tables.get(logical_id)
        if table_name is None:
            log.warning(
                "snapshot: table %s is no longer in the template; %d items dropped", logical_id, len(items)
            )
            continue
        try:
            moto.put_items(table_name, items)
        except MotoCallError as exc:  # moto refused them, e.g. the table's key schema changed since
            if not exc.refused:
                raise
            log.warning("snapshot: items of %s could not be restored: %s", logical_id, exc)


def save(
    path: Path,
    journal_dir: Path,
    provisioned: Provisioned,
    custom_resources: dict[str, dict[str, Any]],
    moto: MotoProcess,
) -> None:
    """Write a snapshot and compact the journal into it: a new journal segment starts first, so the
    segments before it hold only writes the snapshot (read after) holds too; they go once it is on disk."""
    segment = moto.rotate_journal()
    write_snapshot(path, take_snapshot(provisioned, custom_resources, moto))
    if segment is not None:
        journal.discard_before(journal_dir, segment)


def replay_journal(moto: MotoProcess) -> int:
    """Apply the writes journaled since the last snapshot (after `restore_tables`); how many items."""
    applied = moto.replay_journal()
    if applied:
        log.info("replayed %d journaled writes", applied)
    return applied
