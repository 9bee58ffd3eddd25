from datetime import timedelta
from pathlib import Path

import pytest

from trawl.durations import parse_duration
from trawl.settings import ConfigError, Settings, load_settings


def test_defaults_come_from_trawl_toml_and_env_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "trawl.toml").write_text('data_dir = "from-toml"\n[net]\nmax_redirects = 3\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAWL_NET__ALLOW_PRIVATE", "true")
    monkeypatch.setenv("TRAWL_RETRY__DOWNLOAD__INITIAL_INTERVAL", "500ms")
    settings = Settings()
    assert settings.data_dir == Path("from-toml")
    assert settings.net.max_redirects == 3
    assert settings.net.allow_private is True
    assert settings.retry.download.initial_interval == timedelta(milliseconds=500)
    monkeypatch.setenv("TRAWL_DATA_DIR", "/srv/trawl")
    assert Settings().data_dir == Path("/srv/trawl")


def test_catalog_defaults_to_sqlite_in_the_data_dir(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert settings.catalog_url == f"sqlite:///{tmp_path / 'catalog.db'}"
    assert settings.blobs_dir == tmp_path / "blobs" and settings.work_dir == tmp_path / "work"


@pytest.mark.parametrize(
    ("env", "value", "message"),
    [
        ("TRAWL_RETRY__FETCH__INITIAL_INTERVAL", "soon", "retry.fetch.initial_interval"),
        ("TRAWL_RETRY__FETCH__BACKOFF_COEFFICIENT", "0.5", "retry.fetch.backoff_coefficient"),
        ("TRAWL_RETRY__COMMIT__MAXIMUM_INTERVAL", "1ms", "maximum_interval must be at least initial_interval"),
        ("TRAWL_WORKER__PROCESSES", "0", "worker.processes"),
        ("TRAWL_NET__NO_SUCH_SETTING", "1", "no_such_setting"),
        ("TRAWL_CATALOG__SEARCH_EXTRAS_LINES", "-1", "catalog.search_extras_lines"),
        ("TRAWL_CATALOG__SEARCH_EXTRAS_LINES", "100001", "catalog.search_extras_lines"),
        ("TRAWL_CATALOG__SEARCH_EXTRAS_LINES", "many", "catalog.search_extras_lines"),
    ],
)
def test_bad_values_get_a_clear_message(monkeypatch: pytest.MonkeyPatch, env: str, value: str, message: str) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(ConfigError, match=message):
        load_settings()


@pytest.mark.parametrize(
    ("text", "seconds"), [("2s", 2), ("500ms", 0.5), ("5m", 300), ("1h30m", 5400), ("10", 10), (1.5, 1.5)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["", "2x", "s", "-1", "1h 2"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_http_max_connections_defaults_to_what_the_worker_can_use_at_once(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    """0 (the default) derives the pool: both download queues' slots, each download with its most
    segments, plus the fetch slots of every enabled platform."""
    monkeypatch.chdir(tmp_path)
    from trawl.settings import FETCH_SLOTS_PER_PLATFORM

    settings = load_settings(worker={"max_concurrent_activities": 10},
                             download={"segments": 3, "segments_by_platform": {"bilibili": 6}},
                             platforms={"facebook": {"enabled": False}})
    assert settings.net.max_connections == 2 * 10 * 6 + FETCH_SLOTS_PER_PLATFORM * 3
    assert load_settings().net.max_connections >= 64  # never smaller than the pool it replaces
    limited = load_settings(worker={"max_concurrent_activities": 10}, download={"limit_rate": "1M"})
    assert limited.net.max_connections == 2 * 10 * 1 + FETCH_SLOTS_PER_PLATFORM * 4  # one connection each


def test_http_max_connections_set_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAWL_NET__MAX_CONNECTIONS", "300")
    assert load_settings().net.max_connections == 300
    monkeypatch.setenv("TRAWL_NET__MAX_CONNECTIONS", "-1")
    with pytest.raises(ConfigError, match="net.max_connections"):
        load_settings()


def test_the_platforms_are_a_mapping_built_from_the_registrys_list(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    from trawl.platforms.registry import PLATFORMS
    from trawl.settings import PlatformSettings, SourceSettings

    monkeypatch.chdir(tmp_path)
    (tmp_path / "trawl.toml").write_text('[platforms.generic]\nthumbnails = false\n')
    platforms = Settings().platforms
    assert list(platforms.keys()) == [p.name for p in PLATFORMS] and len(platforms) == len(PLATFORMS)
    assert all(isinstance(config, p.settings) for p, config in zip(PLATFORMS, platforms.values(), strict=True))
    assert platforms["generic"] is platforms.generic and platforms["generic"].thumbnails is False
    assert "generic" in platforms and "nope" not in platforms and platforms.get("nope") is None
    with pytest.raises(KeyError):
        platforms["nope"]
    assert isinstance(platforms.generic, PlatformSettings)
    # Each platform's listings are source kinds.
    for platform in PLATFORMS:
        for kind in platform.listings:
            assert SourceSettings(name="s", kind=kind, id="1").kind == kind


def test_a_platform_section_problem_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trawl.toml").write_text('[platforms.mystery]\nenabled = false\n')
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert str(caught.value) == ("invalid configuration: platforms.mystery: Extra inputs are not permitted "
                                 "(got {'enabled': False})")


def test_a_ca_bundle_is_checked_at_start_and_made_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A CA bundle that is not there, or holds no certificate, is one line of configuration at
    start (it was a traceback at the HTTP client's creation); a relative one is made absolute, as
    the background worker reads it from another working directory."""
    import certifi

    (tmp_path / "junk.pem").write_text("not a certificate\n")
    monkeypatch.chdir(tmp_path)
    for value, message in (("missing.pem", "net.ca_bundle: .*no such file or directory"),
                           ("junk.pem", "net.ca_bundle: .*holds no CA certificate")):
        monkeypatch.setenv("TRAWL_NET__CA_BUNDLE", value)
        with pytest.raises(ConfigError, match=message) as raised:
            load_settings()
        assert "\n" not in str(raised.value)
    (tmp_path / "ca.pem").write_bytes(Path(certifi.where()).read_bytes())
    monkeypatch.setenv("TRAWL_NET__CA_BUNDLE", "ca.pem")
    assert load_settings().net.ca_bundle == str(tmp_path / "ca.pem")
    monkeypatch.setenv("TRAWL_NET__CA_BUNDLE", "")
    assert load_settings().net.ca_bundle == ""
