"""``-o``: yt-dlp's ``%(field)s`` templates beside trawl's ``{field}`` (issue 24, item 11), as pure logic."""

from __future__ import annotations

import pytest

from trawl.export import Template, TemplateError

VALUES = {"platform": "generic", "id": "x1", "key": "web:x1", "title": "Clip", "uploader": "", "uploader_id": "u9",
          "upload_date": "20240102", "part": "3", "duration": "125", "kind": "video", "asset": "video", "ext": "mp4",
          "sha256": "ab" * 8}


@pytest.mark.parametrize("template, path", [
    ("%(title)s [%(id)s].%(ext)s", "Clip [x1].mp4"),  # the README's "Coming from yt-dlp" example
    ("{title} [{id}].{ext}", "Clip [x1].mp4"),
    ("{title} [%(id)s].%(ext)s", "Clip [x1].mp4"),  # both forms in one template
    ("%(platform)s/%(uploader)s/%(title)s.%(ext)s", "generic/NA/Clip.mp4"),  # missing: NA, as yt-dlp writes
    ("%(uploader,uploader_id)s/%(title)s.%(ext)s", "u9/Clip.mp4"),  # the first of the alternatives not empty
    ("%(uploader|nobody)s - %(title)s.%(ext)s", "nobody - Clip.mp4"),
    ("%(uploader,uploader_id|nobody)s - %(title)s.%(ext)s", "u9 - Clip.mp4"),
    ("%(uploader|)s%(title)s.%(ext)s", "Clip.mp4"),  # an empty default is nothing
    ("%(title).2s.%(ext)s", "Cl.mp4"),
    ("%(part)03d %(title)s.%(ext)s", "003 Clip.mp4"),
    ("%(duration)ds - %(title)s.%(ext)s", "125s - Clip.mp4"),
    ("%(title)s|%(id)s.%(ext)s", "Clip｜x1.mp4"),  # with --windows-names, | is a look-alike
    ("%(title)s 100%%.%(ext)s", "Clip 100%.mp4"),
    ("%(upload_date)s/%(title)s [%(id)s].%(ext)s", "20240102/Clip [x1].mp4"),
])
def test_templates_name_files(template: str, path: str) -> None:
    assert "/".join(Template.parse(template).render(VALUES, windows=True)) == path


def test_a_number_conversion_of_a_missing_value_is_na() -> None:
    assert Template.parse("%(duration)d %(title)s.%(ext)s").render({**VALUES, "duration": ""}) == ["NA Clip.mp4"]


def test_yt_dlp_templates_keep_the_extension_and_the_id_when_cut() -> None:
    template = Template.parse("%(title)s [%(id)s].%(ext)s")
    assert template.names_ext_last
    assert template.render(VALUES, suffix=" (2)") == ["Clip [x1] (2).mp4"]
    long = template.render({**VALUES, "title": "当" * 100})[-1]
    assert len(long.encode()) <= 255 and long.endswith(" [x1].mp4")


@pytest.mark.parametrize("template, says", [
    ("%(nope)s.%(ext)s", "unknown field %(nope)s"),
    ("%(title,nope)s.%(ext)s", "unknown field %(nope)s"),
    ("/abs/%(title)s.%(ext)s", "absolute"),
    ("../%(title)s.%(ext)s", "'..'"),
    ("%(title)s/../%(id)s", "'..'"),
    ("static %%.mp4", "same name"),
    ("%(upload_date>%Y-%m-%d)s %(title)s", "%(upload_date>%Y-%m-%d)s"),
    ("%(upload_date>%Y/%m)s/%(title)s", "%(upload_date>%Y/%m)s"),
    ("%(title&x)s", "not supported"),
    ("%(title)j.%(ext)s", "%(title)j"),
    ("%(title.0)s", "not supported"),
    ("%(title [%(id)s].%(ext)s", "%("),
])
def test_templates_that_cannot_name_files_are_refused(template: str, says: str) -> None:
    with pytest.raises(TemplateError) as refused:
        Template.parse(template)
    assert says in str(refused.value), str(refused.value)
