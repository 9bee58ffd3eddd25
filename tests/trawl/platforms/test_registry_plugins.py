"""A platform is one module: a registry and settings built from a platform defined here, with no
edit anywhere else, route its URLs to it, read its ``[platforms.<name>]`` section and classify
its answers with its own error table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from pydantic import Field

from trawl.errors import AnswerRules, LoginRequired, NotFound, TrawlError, classify_response, int_field
from trawl.models import Asset, Resolved
from trawl.platforms.base import ResolveContext, Resolver, base_pattern, get_json
from trawl.platforms.platform import Platform, PlatformSettings, platforms_model
from trawl.platforms.registry import PLATFORMS, build_registry
from trawl.settings import settings_for


# -- the fourth platform: everything about it, in one place --------------------------------------
class ClipsSettings(PlatformSettings):
    page_base: str = "https://clips.example"
    requests_per_second: float = Field(default=3.0, gt=0)


def _answer(doc: dict, where: str) -> TrawlError | None:
    status = int_field(doc.get("status"))
    if status == 4:
        return NotFound(f"clips: status 4 (gone){where}")
    if status == 9:
        return LoginRequired(f"clips: status 9 (members only){where}")
    return None


CLIPS_ANSWERS = AnswerRules(body=_answer)


class ClipsResolver(Resolver):
    name = "clips:clip"
    platform = "clips"
    answers = CLIPS_ANSWERS

    def __init__(self, config: ClipsSettings) -> None:
        self.config = config
        self.url_patterns = (re.compile(base_pattern(r"clips\.example", config.page_base) + r"/c/(?P<id>\w+)$"),)

    def offline_key(self, url: str) -> str | None:
        found = self.match(url)
        return f"clips:{found['id']}" if found else None

    def resolve(self, url: str, ctx: ResolveContext) -> Resolved:
        clip = self.match(url)["id"]  # type: ignore[index]
        doc = get_json(self, f"{self.config.page_base}/api/clip?id={clip}", ctx, item_url=url)
        return Resolved(canonical_key=f"clips:{clip}", canonical_url=url, platform=self.platform,
                        title=doc.get("title"), assets=[Asset(name="video", kind="video", urls=[doc["src"]])])


CLIPS = Platform(name="clips", title="Clips", settings=ClipsSettings, resolvers=lambda config: [ClipsResolver(config)],
                 errors=CLIPS_ANSWERS, cookie_domains=("clips.example",))
# The registry's list with the new platform added before generic, as its line would add it.
KNOWN = (*PLATFORMS[:-1], CLIPS, PLATFORMS[-1])


# -- what the rest of trawl makes of it ---------------------------------------------------------------
def test_its_urls_route_to_it_and_the_others_still_to_theirs() -> None:
    registry = build_registry(known=KNOWN)
    route = registry.route("https://clips.example/c/abc123")
    assert route.platform == "clips" and route.workflow_id == "item-clips:abc123"
    assert registry.route("https://www.bilibili.com/video/BV117411r7R1").platform == "bilibili"
    assert registry.route("https://clips.example/about").platform == "generic"
    assert registry.platforms == ["bilibili", "weibo", "facebook", "clips", "generic"]


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no user file
    monkeypatch.setenv("TRAWL_CONFIG", str(tmp_path / "trawl.toml"))
    return tmp_path


def test_its_settings_section_is_read_from_the_file_and_the_environment(config_dir: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (config_dir / "trawl.toml").write_text('[platforms.clips]\npage_base = "http://127.0.0.1:9/clips"\n'
                                           'thumbnails = false\n\n[platforms.bilibili]\nquality = 64\n')
    monkeypatch.setenv("TRAWL_PLATFORMS__CLIPS__COOKIES_FILE", "/secrets/clips.txt")
    settings = settings_for(KNOWN)()
    clips = settings.platforms["clips"]
    assert isinstance(clips, ClipsSettings)
    assert (clips.page_base, clips.thumbnails, clips.cookies_file) == ("http://127.0.0.1:9/clips", False,
                                                                       "/secrets/clips.txt")
    assert clips.requests_per_second == 3.0  # its own default
    assert settings.platforms["bilibili"].quality == 64 and list(settings.platforms.keys())[-2:] == ["clips", "generic"]
    # The configured base URL is claimed too; disabled, its URLs fall to generic.
    registry = build_registry(settings.platforms, KNOWN)
    assert registry.route("http://127.0.0.1:9/clips/c/xyz").platform == "clips"
    monkeypatch.setenv("TRAWL_PLATFORMS__CLIPS__ENABLED", "false")
    off = build_registry(settings_for(KNOWN)().platforms, KNOWN)
    assert off.route("https://clips.example/c/abc123").platform == "generic"


def test_an_unknown_field_in_its_section_is_refused(config_dir: Path) -> None:
    (config_dir / "trawl.toml").write_text('[platforms.clips]\npage_bsae = "x"\n')
    with pytest.raises(ValueError, match=r"platforms\.clips\.page_bsae"):
        settings_for(KNOWN)()


def test_the_registrys_own_settings_know_nothing_of_it() -> None:
    assert "clips" not in platforms_model(PLATFORMS)() and "clips" in platforms_model(KNOWN)()


def _context(answer: dict) -> ResolveContext:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answer)

    return ResolveContext(httpx.Client(transport=httpx.MockTransport(handler)), 1 << 20)


@pytest.mark.parametrize(("status", "expected"), [(4, "not_found"), (9, "login_required")])
def test_its_error_table_classifies_its_answers(status: int, expected: str) -> None:
    resolver = build_registry(known=KNOWN).resolver_for("https://clips.example/c/abc123")
    with pytest.raises(TrawlError) as caught:
        resolver.resolve("https://clips.example/c/abc123", _context({"status": status}))
    assert caught.value.error_class == expected and "https://clips.example/c/abc123" in caught.value.message
    body = json.dumps({"status": status}).encode()
    assert classify_response(200, {}, body, answers=CLIPS_ANSWERS).error_class == expected  # type: ignore[union-attr]


def test_its_answers_resolve_and_other_platforms_tables_do_not_read_them() -> None:
    item = build_registry(known=KNOWN).resolver_for("https://clips.example/c/ok").resolve(
        "https://clips.example/c/ok", _context({"status": 0, "title": "A clip", "src": "https://clips.example/v.mp4"}))
    assert (item.canonical_key, item.title) == ("clips:ok", "A clip")
    # Its codes mean nothing to another platform's table: Bilibili's reads "code", not "status".
    assert classify_response(200, {}, b'{"status": 4}') is None


def test_no_module_outside_a_platforms_own_names_it() -> None:
    """Done when a platform is one module: its name appears in trawl's code only in its own
    module and in the registry's list (the settings file, trawl.toml, names it too)."""
    import trawl

    names = [p.name for p in PLATFORMS[:-1]]
    pattern = re.compile("|".join(names), re.IGNORECASE)
    package = Path(trawl.__file__).parent
    hits = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        if parts[0] == "platforms" and (parts[1] in names or parts[1] == "registry.py"):
            continue
        hits += [f"{'/'.join(parts)}:{n}: {line.strip()}"
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == []
