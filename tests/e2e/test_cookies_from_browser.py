"""``trawl crawl --cookies-from-browser``: the simulated Facebook walls anonymous visitors off, and
the cookies of a Firefox and a Chromium profile made here get its videos; a login cookie that has
expired or is about to is said once at the command; a missing profile is one line."""

from __future__ import annotations

import time
from pathlib import Path

from tests.browser_profiles import chromium_profile, firefox_profile
from tests.e2e.test_cli import records, run, trawl_env
from tests.e2e.test_platforms import platform_env
from trawl.platforms.facebook.site import VIDEOS, install_facebook_site
from trawl.simulator import Simulator

DAY = 86400


def test_a_crawl_logs_in_with_a_firefox_and_a_chromium_profiles_cookies(
        sim: Simulator, tmp_path: Path, temporal_address: str) -> None:
    site = install_facebook_site(sim)
    site.max_anonymous_requests = 0  # every anonymous page request meets the login wall
    env = trawl_env(tmp_path, temporal_address, **platform_env("facebook", site.settings(requests_per_second=50)))
    classic, reel, other = VIDEOS
    now = int(time.time())

    anonymous = run(["crawl", "--json", sim.url(f"/watch/?v={other.id}")], env, tmp_path)
    assert anonymous.returncode == 1 and records(anonymous.stdout)[0]["error_class"] == "login_required"

    # The simulator's host stands for facebook.com (the platform's base URL is on it); the
    # Bilibili login cookie beside it has expired, which the command says once.
    firefox = tmp_path / "home" / ".mozilla" / "firefox" / "x1y2z3.default-release"
    firefox_profile(firefox, [("127.0.0.1", "c_user", "100000000000001", now + 300 * DAY),
                              (".bilibili.com", "SESSDATA", "old", now - 2 * DAY)])
    done = run(["crawl", "--json", "--cookies-from-browser", f"firefox:{firefox}",
                sim.url(f"/watch/?v={classic.id}")], env, tmp_path)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert records(done.stdout)[0]["outcome"] == "committed"
    said = [line for line in done.stderr.splitlines() if "login cookie" in line]
    assert len(said) == 1 and said[0].startswith("trawl crawl: bilibili: the login cookie SESSDATA expired on "), said
    assert "facebook" not in done.stderr

    chromium = chromium_profile(tmp_path / "chromium", [("127.0.0.1", "c_user", "100000000000002", now + 2 * DAY + 600)])
    done = run(["crawl", "--json", "--cookies-from-browser", f"chromium:{chromium}",
                sim.url(f"/reel/{reel.id}/")], env, tmp_path)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert records(done.stdout)[0]["outcome"] == "committed"
    said = [line for line in done.stderr.splitlines() if "login cookie" in line]
    assert len(said) == 1 and "facebook: the login cookie c_user expires on " in said[0] and "(in 2 day(s))" in said[0]
    assert oct((tmp_path / "data" / "cookies" / "facebook.txt").stat().st_mode & 0o777) == "0o600"


def test_a_profile_that_is_not_there_or_not_a_database_is_one_line(tmp_path: Path) -> None:
    env = trawl_env(tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "cookies.sqlite").write_bytes(b"\0" * 4096)
    for args, says in [
        (["--cookies-from-browser", f"firefox:{tmp_path / 'none'}"], "--cookies-from-browser firefox:"),
        (["--cookies-from-browser", "chromium:Nope"], "no profile at"),
        (["--cookies-from-browser", "safari"], "the browser is one of firefox, chromium"),
        (["--cookies-from-browser", f"firefox:{broken}"], "cannot read"),
        (["--detach", "--cookies-from-browser", "firefox"], "leave them out with --detach"),
    ]:
        done = run(["crawl", *args, "https://example.org/v.mp4"], {**env, "HOME": str(tmp_path)}, tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr
