import pytest

from trawl.errors import UnsupportedUrl
from trawl.urls import canonicalize, web_key

CASES = [
    # (input, canonical)
    ("https://example.com/a", "https://example.com/a"),
    ("HTTPS://Example.COM/Video/AbC", "https://example.com/Video/AbC"),
    ("https://example.com:443/x", "https://example.com/x"),
    ("http://example.com:80/x", "http://example.com/x"),
    ("http://example.com:8080/x", "http://example.com:8080/x"),
    ("https://example.com/x#t=10", "https://example.com/x"),
    ("https://example.com/x?b=2&a=1", "https://example.com/x?a=1&b=2"),
    ("https://example.com/x?utm_source=tw&utm_medium=s&id=7", "https://example.com/x?id=7"),
    ("https://example.com/x?fbclid=abc&spm_id_from=333.1&share_source=copy", "https://example.com/x"),
    ("https://example.com", "https://example.com/"),
    ("https://example.com/a%2fb", "https://example.com/a%2Fb"),
    ("https://example.com/with space", "https://example.com/with%20space"),
    ("https://example.com/%E4%B8%AD", "https://example.com/%E4%B8%AD"),
    ("https://example.com./x", "https://example.com/x"),
    ("http://[::1]:80/x", "http://[::1]/x"),
    ("https://www.bilibili.com/video/BV1xx411c7mD?p=2&share_medium=android", "https://www.bilibili.com/video/BV1xx411c7mD?p=2"),
]


@pytest.mark.parametrize(("url", "expected"), CASES)
def test_canonicalize(url: str, expected: str) -> None:
    assert canonicalize(url) == expected


@pytest.mark.parametrize(("url", "_"), CASES)
def test_canonicalize_is_idempotent(url: str, _: str) -> None:
    once = canonicalize(url)
    assert canonicalize(once) == once


def test_path_case_is_kept_and_keys_differ_by_case() -> None:
    assert web_key(canonicalize("https://e.com/v/AbC")) != web_key(canonicalize("https://e.com/v/abc"))


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "empty"),
        ("ftp://example.com/x", "unsupported scheme"),
        ("javascript:alert(1)", "unsupported scheme"),
        ("example.com/video", "unsupported scheme"),
        ("https:///nohost", "no host"),
        ("http://example.com:99999/", "malformed"),
        ("https://exa mple.com\n/x", "control characters"),
        ("https://example.com/" + "a" * 9000, "longer than"),
        ("https://user:pw@example.com/x", "credentials"),
    ],
)
def test_malformed_urls_are_refused_with_a_reason(url: str, message: str) -> None:
    with pytest.raises(UnsupportedUrl, match=message):
        canonicalize(url)
