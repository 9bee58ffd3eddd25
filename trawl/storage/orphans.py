"""Orphan blobs: blobs no item row names and no attempt can still name.

A commit stores its blobs, then writes the item's row. An attempt killed between the two leaves
a blob no row names; its retry may store other bytes (a backup URL's stream, say), so nothing
ever names that blob. To tell such a blob from one a running attempt has just stored, a commit
announces its blobs in the catalog before it stores them (an intent, released once the row names
them: :meth:`~trawl.storage.catalog.Catalog.intend_blobs`).

A blob is an orphan when no asset row names it; it may be reclaimed once it is old, i.e. stored
at least ``older_than`` ago (``storage.abandon_uploads_after``, longer than any commit attempt)
and not announced since. The removal itself checks again under the catalog's lock on intents
(:meth:`~trawl.storage.catalog.Catalog.reclaim_blob`), so a commit that meets the blob just then
either keeps it or stores it anew. Two ways reclaim:

- the workers' clean-up (:func:`reclaim_announced`): the blobs named by intents that grew old
  unreleased, which is every blob an attempt of this version left behind, at the cost of a
  query, not a listing of the store;
- ``trawl fsck --repair``: every blob of the store (:func:`trawl.storage.fsck.check` lists them),
  so also orphans of older versions and of items the catalog forgot.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from trawl.storage.blobs import BlobStat, BlobStore
from trawl.storage.catalog import Catalog


def reclaimable(catalog: Catalog, orphans: Iterable[BlobStat], older_than: timedelta,
                now: datetime | None = None) -> list[BlobStat]:
    """Those of ``orphans`` (blobs no row names) stored at least ``older_than`` ago and not
    announced by an attempt since."""
    since = (now or datetime.now(UTC)) - older_than
    old = [blob for blob in orphans if blob.modified <= since]
    announced = catalog.intended_since([blob.key for blob in old], since)
    return [blob for blob in old if blob.key not in announced]


def reclaim(catalog: Catalog, blobs: BlobStore, keys: Iterable[str], older_than: timedelta,
            now: datetime | None = None) -> list[BlobStat]:
    """Remove the blobs of ``keys`` that no row names and no attempt announced in the last
    ``older_than``, each checked again under the catalog's lock; the ones removed (size and
    time as they were). A key with no blob behind it only loses its old intents."""
    since = (now or datetime.now(UTC)) - older_than
    removed: list[BlobStat] = []
    for key in keys:
        stat = blobs.stat(key)
        if stat is not None and stat.modified > since:
            continue  # stored lately: by an attempt of a version that announces nothing, maybe
        if catalog.reclaim_blob(key, since, lambda key=key: blobs.delete(key)) and stat is not None:
            removed.append(stat)
    return removed


def reclaim_announced(catalog: Catalog, blobs: BlobStore, older_than: timedelta,
                      now: datetime | None = None) -> list[BlobStat]:
    """The workers' clean-up: reclaim the blobs of intents older than ``older_than`` that were
    never released (and drop those intents); the blobs removed."""
    since = (now or datetime.now(UTC)) - older_than
    return reclaim(catalog, blobs, catalog.stale_intent_keys(since), older_than, now)
