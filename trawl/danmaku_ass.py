"""Danmaku rendered as an ASS subtitle file (``NAME.danmaku.ass``), laid out as danmaku2ass and
biliass lay them out, so a player without a danmaku overlay (mpv, VLC, anything with libass) shows
them flying over the picture:

- a scrolling comment (modes 1-3) crosses the stage from right to left in :data:`SCROLL_SECONDS`
  (``\\move``), in the first lane from the top where it neither overlaps the one before it nor
  catches it up; a reverse one (mode 6) likewise from left to right;
- a top (5) or bottom (4) comment stays still in the middle for :data:`STILL_SECONDS`, in the first
  free lane from the top (or from the bottom);
- when every lane is taken, the one that frees soonest (comments overlap rather than vanish);
- the font size is the XML's (25 normal, 18 small, 36 large) scaled to the stage's height, the
  colour the XML's (white is the style's; a dark comment gets a white outline to stay readable);
- positioned (7), code (8) and BAS (9) comments, which are scripts rather than text, are left out.

Bounded: at most ``limit`` comments are rendered (the first in time), each text at most
:data:`~trawl.danmaku.MAX_TEXT_CHARS`; the text's ASS control characters (``{``, ``}``, ``\\``) are
escaped so a comment is shown as sent, never read as an override tag or a line break (``\\N``).
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass

from trawl.danmaku import Danmaku

SCROLL_SECONDS = 8.0  # danmaku2ass's default for a scrolling comment (the platforms' own players: about 8 s)
STILL_SECONDS = 5.0
MAX_ASS_COMMENTS = 200_000  # a stage fuller than this is unwatchable; the file stays a few tens of MB
SCROLL_MODES = {1, 2, 3}
REVERSE, BOTTOM, TOP = 6, 4, 5
NORMAL_SIZE = 25  # the XML's size of an ordinary comment
BASE_HEIGHT = 1080  # the stage height NORMAL_SIZE is drawn at BASE_FONT on
BASE_FONT = 50  # pixels: about 21 lines over the stage, as the platforms' players show them


@dataclass(frozen=True)
class Stage:
    """The picture the comments are laid out on (the video's size when known)."""

    width: int = 1920
    height: int = 1080
    font: str = "sans-serif"
    opacity: float = 0.8  # 1 opaque

    @property
    def font_size(self) -> int:
        """The pixel size of an ordinary (size 25) comment on this stage."""
        return max(8, round(BASE_FONT * self.height / BASE_HEIGHT))


@dataclass
class _Lane:
    free_at: float = 0.0  # when a still comment in it ends / a scrolling one's tail has entered
    ends_at: float = 0.0  # when the scrolling comment in it leaves the stage
    speed: float = 0.0  # pixels a second of that comment


def escape(text: str) -> str:
    """A comment's text as ASS shows it literally: ``\\`` never starts an escape (``\\N``, ``\\h``)
    nor a tag, ``{``/``}`` never open an override block, a newline is ``\\N``, a leading space kept."""
    lines = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = line.replace("\\", "\\\u200b").replace("{", "\\{").replace("}", "\\}")
        stripped = line.lstrip(" ")
        lines.append("\u2007" * (len(line) - len(stripped)) + stripped if stripped != line else line)
    return "\\N".join(lines)


def text_width(text: str, size: float) -> float:
    """An estimate of the drawn width: a wide (CJK, fullwidth) character is ``size``, another half."""
    widest = 0.0
    for line in text.split("\n"):
        widest = max(widest, sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.5 for c in line))
    return widest * size


def _time(seconds: float) -> str:
    centis = max(0, round(seconds * 100))
    hours, centis = divmod(centis, 360_000)
    minutes, centis = divmod(centis, 6000)
    secs, centis = divmod(centis, 100)
    return f"{hours}:{minutes:02d}:{secs:02d}.{centis:02d}"


def _colour(rgb: int) -> str:
    rgb &= 0xFFFFFF
    return f"&H{rgb & 0xFF:02X}{(rgb >> 8) & 0xFF:02X}{(rgb >> 16) & 0xFF:02X}&"  # ASS is BGR


def _tags(comment: Danmaku, size: int, stage: Stage) -> str:
    tags = ""
    if size != stage.font_size:
        tags += f"\\fs{size}"
    rgb = comment.color & 0xFFFFFF
    if rgb != 0xFFFFFF:
        tags += f"\\c{_colour(rgb)}"
        r, g, b = rgb >> 16, (rgb >> 8) & 0xFF, rgb & 0xFF
        if 0.299 * r + 0.587 * g + 0.114 * b < 64:  # a dark comment on the black outline would vanish
            tags += "\\3c&HFFFFFF&"
    return tags


def _header(stage: Stage, title: str) -> str:
    alpha = f"{round(255 * (1 - stage.opacity)):02X}"
    outline = max(1, round(stage.font_size / 25))
    title = title.replace("\n", " ").replace("\r", " ")[:200]
    return (
        "[Script Info]\n"
        f"Title: {title}\n"
        "ScriptType: v4.00+\n"
        f"PlayResX: {stage.width}\n"
        f"PlayResY: {stage.height}\n"
        "WrapStyle: 2\n"
        "ScaledBorderAndShadow: yes\n\n"
        "[V4+ Styles]\n"
        "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, "
        "Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, "
        "MarginL, MarginR, MarginV, Encoding\n"
        f"Style: Danmaku,{stage.font.replace(',', ' ')},{stage.font_size},&H{alpha}FFFFFF,&H{alpha}FFFFFF,"
        f"&H{alpha}000000,&H{alpha}000000,0,0,0,0,100,100,0,0,1,{outline},0,7,0,0,0,1\n\n"
        "[Events]\n"
        "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n")


def _free_run(lanes: list[_Lane], needed: int, fits) -> int | None:
    """The first lane starting ``needed`` consecutive lanes that all fit, or None."""
    run = 0
    for index, lane in enumerate(lanes):
        run = run + 1 if fits(lane) else 0
        if run == needed:
            return index - needed + 1
    return None


def render_ass(comments: list[Danmaku], stage: Stage = Stage(), *, title: str = "",
               limit: int = MAX_ASS_COMMENTS) -> tuple[bytes, int]:
    """The comments as an ASS file (UTF-8 with a BOM, as players expect) and how many were
    rendered (positioned, code and BAS comments, and those past ``limit``, are not)."""
    lane_height = stage.font_size
    count = max(1, stage.height // lane_height)
    lanes = {"scroll": [_Lane() for _ in range(count)], "reverse": [_Lane() for _ in range(count)],
             "top": [_Lane() for _ in range(count)], "bottom": [_Lane() for _ in range(count)]}
    events: list[str] = []
    ordered = sorted((c for c in comments if c.mode in SCROLL_MODES or c.mode in (REVERSE, TOP, BOTTOM)),
                     key=lambda c: (c.seconds, c.id))
    for comment in ordered[:max(0, limit)]:
        start = max(0.0, comment.seconds)
        size = max(4, round(stage.font_size * (comment.size or NORMAL_SIZE) / NORMAL_SIZE))
        text = comment.text
        line_count = text.count("\n") + 1
        needed = min(count, max(1, math.ceil(line_count * size / lane_height)))
        width = text_width(text, size)
        body = escape(text)
        tags = _tags(comment, size, stage)
        if comment.mode in SCROLL_MODES or comment.mode == REVERSE:
            kind = "scroll" if comment.mode in SCROLL_MODES else "reverse"
            speed = (stage.width + width) / SCROLL_SECONDS
            # Free when the one before has wholly entered and will have left before this one's
            # head reaches the far edge (a faster, longer comment never catches a slower one).
            index = _free_run(lanes[kind], needed,
                              lambda lane: lane.free_at <= start and lane.ends_at <= start + stage.width / speed)
            if index is None:
                index = min(range(count - needed + 1), key=lambda i: lanes[kind][i].free_at)
            for lane in lanes[kind][index:index + needed]:
                lane.free_at, lane.ends_at, lane.speed = start + width / speed, start + SCROLL_SECONDS, speed
            y = index * lane_height
            x1, x2 = (stage.width, -math.ceil(width)) if kind == "scroll" else (-math.ceil(width), stage.width)
            events.append(f"Dialogue: 2,{_time(start)},{_time(start + SCROLL_SECONDS)},Danmaku,,0,0,0,,"
                          f"{{\\move({x1},{y},{x2},{y}){tags}}}{body}\n")
        else:
            kind = "top" if comment.mode == TOP else "bottom"
            index = _free_run(lanes[kind], needed, lambda lane: lane.free_at <= start)
            if index is None:
                index = min(range(count - needed + 1), key=lambda i: lanes[kind][i].free_at)
            for lane in lanes[kind][index:index + needed]:
                lane.free_at = start + STILL_SECONDS
            if kind == "top":
                position = f"\\an8\\pos({stage.width // 2},{index * lane_height})"
            else:
                position = f"\\an2\\pos({stage.width // 2},{stage.height - index * lane_height})"
            events.append(f"Dialogue: 3,{_time(start)},{_time(start + STILL_SECONDS)},Danmaku,,0,0,0,,"
                          f"{{{position}{tags}}}{body}\n")
    return ("\ufeff" + _header(stage, title) + "".join(events)).encode("utf-8"), len(events)
