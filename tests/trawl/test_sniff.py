import pytest

from trawl.simulator.media import MediaFile
from trawl.sniff import matches_kind, sniff


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [("mp4", "mp4"), ("m4a", "m4a"), ("webm", "webm"), ("flv", "flv"), ("jpeg", "jpeg"), ("png", "png"),
     ("mp3", "mp3")],
)
def test_generated_media_is_sniffed_as_its_format(fmt: str, expected: str) -> None:
    assert sniff(MediaFile(fmt, "s", 4096).read(0, 512)) == expected


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"GIF89a\x01\x00", "gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "webp"),
        (b"OggS\x00\x02", "ogg"),
        (b"\x47" + b"\x00" * 187 + b"\x47" + b"\x00" * 187 + b"\x47" + b"\x00" * 10, "mpegts"),
        (b"\xef\xbb\xbf  <!DOCTYPE html><html>", "html"),
        (b"\n<html><body>Access denied", "html"),
        (b'{"code":-404,"message":"not found"}', "json"),
        (b"\x00\x01\x02\x03", "unknown"),
        (b"", "unknown"),
    ],
)
def test_sniff_known_signatures(head: bytes, expected: str) -> None:
    assert sniff(head) == expected


def test_html_is_never_a_video_or_image() -> None:
    for kind in ("video", "audio", "image", "thumbnail"):
        assert not matches_kind("html", kind)
        assert not matches_kind("json", kind)
    assert matches_kind("mp4", "video") and matches_kind("jpeg", "thumbnail") and matches_kind("mp3", "audio")
    assert not matches_kind("jpeg", "video")
