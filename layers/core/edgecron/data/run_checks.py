"""Where the scan's check of recent runs stands, per App. Runs whose message is sent when they are
created have no `wake` entry; the scan reads each App's runs created since its mark (a query of
the App's partition of the Task Runs table) and gives any still unfinished the entry it would have had. The mark moves only
after a batch is handled, so a tick that stops early re-reads that batch (every write is conditional)."""

from __future__ import annotations

from collections.abc import Iterator

from edgecron.data.models import RUNS_CHECKED_MONTH, AppModel, RunsCheckedModel

PAGE = 100  # Apps per batch read of their marks


def app_pages() -> Iterator[list[tuple[str, int]]]:
    """(app_id, created_at) of every App, 100 at a time (the scan reads the two attributes only)."""
    page: list[tuple[str, int]] = []
    for app in AppModel.scan(attributes_to_get=["app_id", "created_at"]):
        page.append((app.app_id, int(app.created_at)))
        if len(page) == PAGE:
            yield page
            page = []
    if page:
        yield page


def checked_keys(app_ids: list[str]) -> dict[str, str]:
    """The marks of these Apps (at most 100), one consistent batch read; an App without one is left out."""
    keys = [(app_id, RUNS_CHECKED_MONTH) for app_id in app_ids]
    return {
        item.app_id: str(item.checked_key) for item in RunsCheckedModel.batch_get(keys, consistent_read=True)
    }


def set_checked_key(app_id: str, key: str) -> None:
    """A plain put: each scan sets only keys it has handled, so two overlapping ticks can at worst
    move the mark back, and the runs after it are checked again (every write of the check is
    conditional)."""
    RunsCheckedModel(app_id=app_id, month=RUNS_CHECKED_MONTH, checked_key=key).save()
