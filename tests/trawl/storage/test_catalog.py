"""The catalog on SQLite and, when TRAWL_TEST_POSTGRES_URL is set, on PostgreSQL."""

import threading

from trawl.storage.catalog import Catalog, CommittedAsset


def _commit(catalog: Catalog, key: str = "web:abc", workflow_id: str = "wf-1", sha: str = "a" * 64) -> bool:
    return catalog.commit_item(
        canonical_key=key, platform="generic", canonical_url="https://e.com/x", source_url="https://e.com/x?utm=1",
        title="T\nwith newline", uploader=None, duration=12.5, published_at=None, metadata={"k": "v"},
        workflow_id=workflow_id,
        assets=[CommittedAsset("video", "video", sha, 10, "video/mp4", f"sha256/{sha[:2]}/{sha[2:4]}/{sha}")],
    )


def test_commit_is_idempotent(catalog_url: str) -> None:
    catalog = Catalog(catalog_url)
    catalog.create_schema()
    catalog.create_schema()  # twice is harmless
    assert not catalog.is_committed("web:abc")
    assert _commit(catalog) is True
    assert _commit(catalog) is False
    assert catalog.is_committed("web:abc")
    assert catalog.count() == 1
    item = catalog.get("web:abc")
    assert item is not None and item.title == "T\nwith newline" and item.duration == 12.5
    assert [(a.name, a.size) for a in item.assets] == [("video", 10)]
    catalog.close()


def test_concurrent_commits_of_one_key_make_one_row(catalog_url: str) -> None:
    Catalog(catalog_url).create_schema()
    results: list[bool] = []

    def commit() -> None:
        catalog = Catalog(catalog_url)
        results.append(_commit(catalog, workflow_id=threading.current_thread().name))
        catalog.close()

    threads = [threading.Thread(target=commit, name=f"wf-{i}") for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 5 + [True]
    catalog = Catalog(catalog_url)
    assert catalog.count() == 1
    assert len(catalog.get("web:abc").assets) == 1
    catalog.close()


def test_list_filters_by_platform_and_pages(catalog_url: str) -> None:
    catalog = Catalog(catalog_url)
    catalog.create_schema()
    for i in range(5):
        _commit(catalog, key=f"web:{i}", sha=f"{i}" * 64)
    assert [i.canonical_key for i in catalog.list(limit=2, offset=1)] == ["web:1", "web:2"]
    assert catalog.list(platform="bilibili") == []
    assert len(catalog.list(platform="generic")) == 5
    catalog.close()


def test_migrations_build_exactly_the_models_schema(catalog_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from trawl.storage.catalog import Base

    catalog = Catalog(catalog_url)
    catalog.create_schema()
    with catalog.engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diff == []
    catalog.close()


def test_a_catalog_from_before_migrations_is_adopted(catalog_url: str) -> None:
    from sqlalchemy import inspect, text

    from trawl.storage.catalog import Base

    catalog = Catalog(catalog_url)
    Base.metadata.create_all(catalog.engine)  # how catalogs were made before migrations
    assert _commit(catalog)
    catalog.create_schema()
    with catalog.engine.connect() as connection:
        assert "alembic_version" in inspect(connection).get_table_names()
        assert connection.execute(text("select version_num from alembic_version")).scalar() == "0002"
    assert catalog.count() == 1
    catalog.close()
