"""The ``trawl`` command's arguments: every command and flag, and which function runs it.

This module imports nothing heavy: ``trawl --version``, ``trawl --help`` and ``trawl CMD --help``
are answered from it alone, and a command's module (``func``, ``"<module>:<function>"`` in
:mod:`trawl.cli`) is imported only once its arguments parse.
"""

from __future__ import annotations

import argparse
import functools

from trawl import __version__
from trawl.naming import DEFAULT_TEMPLATE, FIELDS, LINK_MODES


class ExamplesFormatter(argparse.HelpFormatter):
    """Help with examples: a paragraph with indented lines (``examples:``, then a command and
    what it does a line) is kept as written; the others are wrapped as usual."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(indent + paragraph.replace("\n", "\n" + indent) if "\n  " in paragraph
                           else super(ExamplesFormatter, self)._fill_text(paragraph, width, indent)
                           for paragraph in text.split("\n\n"))


EXAMPLES = """examples:
  trawl URL                         crawl a page or a file into the archive
  trawl -o '%(title)s.%(ext)s' URL  ...and write a copy of it here, so named
  trawl -j URL                      what it would download, as JSON
  trawl crawl -a urls.txt -r 2M     URLs from a file, at most 2 MiB/s each
  trawl crawl --detach URL...       a crawl that runs on without you
  trawl crawl-status ID             ...its progress and its failed URLs
  trawl items                       what the archive holds
  trawl export ~/Videos             named copies of all of it
  trawl up                          server, worker, web page on :8000
  trawl config                      where the archive, settings, logs are
  trawl completion bash             completion for bash (zsh, fish, tcsh)
  trawl manpage                     the manual page (man -l <(trawl manpage))

every command with an example: docs/commands.md; trawl COMMAND --help: its flags"""

CRAWL_EXAMPLES = """examples:
  trawl crawl URL URL                a line per item; exit 1 if any failed
  trawl crawl -a urls.txt --json     URLs from a file ('-': stdin), as JSON
  trawl crawl -f 720p -r 500K URL    at most 720 lines, at most 500 KiB/s each
  trawl crawl --export ~/Videos URL  a named copy of each item as it commits
  trawl crawl --detach -a urls.txt   start a crawl, print its id, return
  trawl crawl --source mylist        a source named in trawl.toml ([[sources]])"""

STATUS_EXAMPLES = """examples:
  trawl status URL                   live progress, then the result
  trawl status url-94a3... --json    by workflow id, as JSON
  (with no server running: what the catalog and the partial files say of it)"""


@functools.cache
def command_parser() -> argparse.ArgumentParser:
    """The parser a command line is read with, built once a process (reading one changes nothing
    in it): a command run by the warm process (trawl.cli.zygote) finds it built, where building it
    took 15 ms, about half of that argparse looking up translations of its messages."""
    return build_parser()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trawl", description="A durable media crawler on Temporal.",
                                     epilog=EXAMPLES, formatter_class=ExamplesFormatter)
    parser.add_argument("--log-level", default=None, help="log level (default WARNING for one-shot commands)")
    parser.add_argument("--log-json", action="store_true",
                        help="one-shot commands: JSON log lines on stderr (default: plain lines there, the JSON "
                             "in the data directory's trawl.log; setting logs.json_stderr)")
    parser.add_argument("--version", action="version", version=f"trawl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (_crawl, _catalog, _steering, _serve, _logs, _watch, _export, _config, _shell):
        group(sub)
    return parser


EXPORT_NOTES = (
    "Files are copies unless --link (or export.link) asks for links. WARNING: with --link hardlink an exported "
    "file is the same file as the stored blob, not a copy: a program that edits it in place (a tag editor, `>>`, "
    "an editor saving over it) changes the blob in the store too, and trawl fsck then reports that blob as "
    "corrupt. "
    "Files are written only into real directories inside DIR: a file whose directory there is a symbolic link "
    "(or a file) is not written, one line says which, the others are exported and the exit code is 1. "
    "A name in use by another file (another item's, or one trawl did not write) is never overwritten, "
    "NAME.info.json included: the next free name ' (2)', ' (3)', ... is taken. "
    "Staging files (.*.trawl-tmp) an interrupted export left are removed when no other export is running "
    "in DIR.")


EXPORT_EXAMPLES = """examples:
  trawl export ~/Videos                     copies, {platform}/{uploader}/...
  trawl export . -o '%(title)s.%(ext)s' --write-info-json
  trawl export /srv/media --link hardlink   links: no extra space; never edit"""


def add_naming_flags(parser: argparse.ArgumentParser) -> None:
    """The flags ``export`` and ``crawl --export`` share."""
    parser.add_argument("--link", choices=LINK_MODES, default=None,
                        help="copy (default: files to edit freely), hardlink (no extra space; a copy where the "
                             "store is remote or on another filesystem: the file IS the stored blob, do not edit it "
                             "in place) or symlink (local stores)")
    parser.add_argument("--windows-names", "--windows-filenames", dest="windows_names", action="store_true",
                        help='names valid on Windows too: <>:"|?* replaced, collisions compared without case')
    parser.add_argument("--write-info-json", action="store_true",
                        help="write NAME.info.json (the item's metadata, assets, sizes, hashes) beside the media")
    # The extras (docs/extras.md), with yt-dlp's flags and file names.
    parser.add_argument("--write-subs", action="store_true",
                        help="write the uploader's subtitle tracks beside the media, NAME.LANG.srt")
    parser.add_argument("--write-auto-subs", "--write-automatic-subs", dest="write_auto_subs", action="store_true",
                        help="write the automatic (AI) subtitle tracks too (languages ai-*)")
    parser.add_argument("--sub-langs", metavar="LANGS",
                        help="languages to write, comma-separated: codes or regular expressions (zh-CN,ai-.*), "
                             "all (default), danmaku (NAME.danmaku.xml), -LANG to leave one out")
    parser.add_argument("--sub-format", choices=("srt", "vtt", "json"), default=None,
                        help="subtitle file format (default srt; json: as stored)")
    parser.add_argument("--danmaku-format", metavar="FORMATS",
                        help="the danmaku (--sub-langs danmaku) as xml (default: as stored), ass (NAME.danmaku.ass, "
                             "rendered for players without a danmaku overlay) or xml,ass")
    parser.add_argument("--write-comments", action="store_true",
                        help="write the comments: inside NAME.info.json with --write-info-json, else NAME.comments.json")
    parser.add_argument("--embed-subs", action="store_true",
                        help="embed the subtitle tracks into a copy of the media (ffmpeg; MP4 and WebM)")
    parser.add_argument("--embed-chapters", action="store_true", help="embed the chapters into a copy of the media")
    parser.add_argument("--embed-metadata", action="store_true",
                        help="embed title, uploader, date, description and URL into a copy of the media")
    parser.add_argument("--embed-thumbnail", action="store_true",
                        help="embed the thumbnail into a copy of the media (ffmpeg; MP4, M4A, MKV, MP3)")


def add_crawl_flags(crawl: argparse.ArgumentParser) -> None:
    """``trawl crawl``'s flags from yt-dlp's habits."""
    crawl.add_argument("--export", metavar="DIR", help="export each item as named files under DIR as it commits")
    crawl.add_argument("-o", "--output", metavar="TEMPLATE",
                       help=f"the name template for --export (alone: export here), {{field}} or yt-dlp's "
                            f"%%(field)s (%%(title)s [%%(id)s].%%(ext)s); default {DEFAULT_TEMPLATE!r}")
    add_naming_flags(crawl)
    crawl.add_argument("--cookies", metavar="FILE",
                       help="a Netscape cookies.txt; each platform gets the cookies of its own domains")
    crawl.add_argument("--cookies-from-browser", metavar="BROWSER[:PROFILE]",
                       help="read the cookies of a browser profile now: firefox, chromium, chrome, brave, edge or "
                            "vivaldi, optionally :PROFILE (a name or a directory; default the last used); each "
                            "platform gets the cookies of its own domains")
    crawl.add_argument("--limit-rate", "-r", metavar="RATE", help="bytes per second per download, e.g. 500K, 2M")
    crawl.add_argument("--keep-previews", action="store_true",
                       help="keep what a platform offers only as a preview (a supporter-only video's free "
                            "minutes) as an item of its own, <key>:preview, instead of failing it")
    crawl.add_argument("-f", "--quality", metavar="SPEC",
                       help="best, worst, a height (720p) or bestvideo[height<=720]: a platform's quality and "
                            "the HLS variant; +ba[acodec=flac|ec-3|mp4a]: the audio, where a platform offers "
                            "lossless, Dolby and AAC")


def add_listing_filter_flags(parser: argparse.ArgumentParser) -> None:
    """yt-dlp's selection flags, applied while each listing given (and the source) pages."""
    parser.add_argument("--dateafter", metavar="DATE",
                        help="only entries published on or after DATE (YYYYMMDD, today, now-7days); a listing "
                             "newest first stops paging at the first older entry")
    parser.add_argument("--datebefore", metavar="DATE", help="only entries published on or before DATE")
    parser.add_argument("--match-filters", "--match-filter", dest="match_filter", metavar="FILTER",
                        help="conditions on what a listing says of its entries, joined by '&': duration > 60, "
                             "view_count >= 1000, title ~= (?i)news, !is_live")
    parser.add_argument("--max-downloads", type=int, metavar="N", default=0,
                        help="at most N entries of each listing")
    parser.add_argument("-I", "--playlist-items", metavar="SPEC",
                        help="entries of each listing by position: 1-5,8,-3: (yt-dlp's syntax)")


class _Intermixed(argparse.ArgumentParser):
    """Options and URLs in any order: ``watch add news URL --every 1h`` and ``... --every 1h URL``."""

    _parsing = False

    def parse_known_args(self, args=None, namespace=None):  # noqa: ANN001, ANN201 - argparse's signature
        if self._parsing:  # parse_known_intermixed_args calls back here
            return super().parse_known_args(args, namespace)
        self._parsing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._parsing = False


def _crawl(sub: argparse._SubParsersAction) -> None:
    crawl = sub.add_parser("crawl", help="crawl URLs and wait for the results (live progress on a terminal)",
                           epilog=CRAWL_EXAMPLES, formatter_class=ExamplesFormatter)
    crawl.add_argument("urls", nargs="*", help="page or media URLs")
    crawl.add_argument("-a", "--batch-file", "--file", dest="file",
                       help="read URLs from FILE, one per line, '#' and ';' start comments ('-' for stdin)")
    crawl.add_argument("--source", help="crawl the named source from the settings ([[sources]])")
    crawl.add_argument("--json", action="store_true", help="one JSON object per item")
    crawl.add_argument("--no-worker", action="store_true", help="do not run a worker in this process")
    crawl.add_argument("--detach", action="store_true",
                       help="start a crawl workflow, print its id and return (workers elsewhere do the work)")
    crawl.add_argument("--concurrency", type=int, default=None,
                       help="items in flight at once (default: 1000, or 8 with --detach)")
    add_crawl_flags(crawl)
    add_listing_filter_flags(crawl)
    crawl.set_defaults(func="crawl:cmd_crawl")

    crawls = sub.add_parser("crawls", help="list crawl workflows")
    crawls.add_argument("--limit", type=int, default=50)
    crawls.set_defaults(func="crawl:cmd_crawls")
    crawl_status = sub.add_parser("crawl-status", help="a crawl's progress, speed and ETA (live on a terminal)")
    crawl_status.add_argument("id")
    crawl_status.add_argument("--json", action="store_true")
    crawl_status.set_defaults(func="crawl_status:cmd_crawl_status")

    resolve = sub.add_parser("resolve", help="resolve URLs without downloading (like yt-dlp -j)")
    resolve.add_argument("urls", nargs="+")
    resolve.add_argument("-j", "--json", action="store_true", help="one JSON object per URL (yt-dlp's -j)")
    resolve.set_defaults(func="resolve:cmd_resolve")


def _catalog(sub: argparse._SubParsersAction) -> None:
    items = sub.add_parser("items", help="list the catalog")
    items.add_argument("--json", action="store_true")
    items.add_argument("--platform")
    items.add_argument("--limit", type=int, default=1000)
    items.set_defaults(func="catalog:cmd_items")

    fsck = sub.add_parser("fsck", help="check every blob against its hash and every catalog row against the store")
    fsck.add_argument("--repair", action="store_true",
                      help="move damaged blobs to quarantine/ in the data directory, drop their rows and crawl those items again")
    fsck.add_argument("--json", action="store_true")
    fsck.set_defaults(func="catalog:cmd_fsck")

    recheck = sub.add_parser("recheck", help="ask the platforms whether archived items still exist; record "
                                             "those gone upstream (the copies stay)")
    recheck.add_argument("keys", nargs="*", help="canonical keys (default: every committed item)")
    recheck.add_argument("--platform")
    recheck.add_argument("--limit", type=int, default=None, help="check at most this many items")
    recheck.add_argument("--json", action="store_true", help="one JSON object per item")
    recheck.set_defaults(func="catalog:cmd_recheck")


def _steering(sub: argparse._SubParsersAction) -> None:
    status = sub.add_parser("status", help="show an item workflow (id or URL); live, with speed and ETA, "
                                           "on a terminal", epilog=STATUS_EXAMPLES, formatter_class=ExamplesFormatter)
    status.add_argument("id")
    status.add_argument("--json", action="store_true")
    status.add_argument("--once", action="store_true", help="print once instead of following on a terminal")
    status.set_defaults(func="steering:cmd_status")
    for name, text in (("pause", "pause an item or a crawl"), ("resume", "resume a paused item or crawl"),
                       ("cancel", "cancel an item or a crawl")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("id", help="item workflow id, item URL, or crawl id")
        cmd.set_defaults(func="steering:cmd_signal")


def _serve(sub: argparse._SubParsersAction) -> None:
    server = sub.add_parser("server", help="run only the embedded Temporal server (foreground)")
    server.set_defaults(func="serve:cmd_server", long_running=True)
    setup = sub.add_parser("setup", help="register search attributes on a Temporal server and create the "
                                         "catalog tables")
    setup.set_defaults(func="serve:cmd_setup")
    worker = sub.add_parser("worker", help="run only a worker (foreground)")
    worker.add_argument("--processes", type=int, help="worker processes to supervise (default worker.processes)")
    # A supervised child waits for an unreachable server instead of exiting.
    worker.add_argument("--supervised", action="store_true", help=argparse.SUPPRESS)
    # The background worker an embedded server's keeper runs: its settings come on stdin.
    worker.add_argument("--background", action="store_true", help=argparse.SUPPRESS)
    worker.set_defaults(func="serve:cmd_worker", long_running=True)
    down = sub.add_parser("down", help="stop the Temporal server and worker running in the background for the "
                                       "data directory (they stop by themselves after temporal.idle_timeout)")
    down.set_defaults(func="serve:cmd_down")
    up = sub.add_parser("up", help="run the embedded server, a worker and the HTTP API (foreground)")
    up.set_defaults(func="serve:cmd_up", long_running=True)
    api = sub.add_parser("api", help="run the HTTP API (foreground)")
    api.set_defaults(func="serve:cmd_api", long_running=True)
    for cmd in (up, api):
        cmd.add_argument("--host", help="listen address (default api.host, 127.0.0.1)")
        cmd.add_argument("--port", type=int, help="listen port (default api.port, 8000)")
    demo = sub.add_parser("demo", help="crawl the built-in simulated site end to end")
    demo.add_argument("--sim-port", type=int, default=18765)
    demo.set_defaults(func="serve:cmd_demo", log_level_default="ERROR")  # the demo prints its own table
    extras = sub.add_parser("extras", help="fetch committed items' extras again (comments, danmaku...), each a new "
                                           "dated snapshot beside the earlier ones")
    extras.add_argument("items", nargs="+", metavar="KEY|URL", help="canonical keys or URLs of committed items")
    extras.add_argument("--only", metavar="NAMES", help="these extras only, comma-separated (comments,danmaku)")
    extras.add_argument("--json", action="store_true", help="one JSON object per item")
    extras.set_defaults(func="extras:cmd_extras")
    sim = sub.add_parser("simulator", help="serve the demo site on loopback (foreground)")
    sim.add_argument("--port", type=int, default=18765)
    sim.set_defaults(func="serve:cmd_simulator")


def _logs(sub: argparse._SubParsersAction) -> None:
    logs = sub.add_parser("logs", help="read trawl's JSON logs")
    logs_sub = logs.add_subparsers(dest="logs_command", required=True)
    tri = logs_sub.add_parser("triage", help="what is failing, where, and since when")
    tri.add_argument("file", nargs="?", default="-", help="log file ('-' or nothing: stdin)")
    tri.add_argument("--since", help="only lines newer than this (e.g. 30m, 2h)")
    tri.add_argument("--recent", default="5m", help="a group seen this close to the newest line, with no "
                                                    "success after it, is still failing (default 5m)")
    tri.add_argument("--json", action="store_true")
    tri.set_defaults(func="logs:cmd_logs", command_name="logs triage")


def _watch(sub: argparse._SubParsersAction) -> None:
    watch = sub.add_parser("watch", help="follow a source or URLs: a Temporal Schedule crawls them every interval")
    actions = watch.add_subparsers(dest="watch_command", required=True, parser_class=_Intermixed)

    add = actions.add_parser("add", help="watch a source from the settings, or URLs, every DURATION")
    add.add_argument("name", help="the watch's name (letters, digits, '.', '_', '-')")
    add.add_argument("urls", nargs="*", help="URLs to crawl each run (or --source): items, or listings such as "
                     "a profile, a collection or a feed, expanded at each run")
    add.add_argument("--url", action="append", metavar="URL", help="one more URL (the same as giving it after NAME)")
    add.add_argument("--source", help="a source named in the settings ([[sources]]): the watch carries its "
                     "definition, expanded by a worker at each run (a url_file needs an absolute path)")
    add.add_argument("--every", default=None, help="interval between runs, e.g. 30m, 1h, 1d (a live room's URL: "
                     "how often to ask whether it is live, default watch.live_poll_interval)")
    add.add_argument("--jitter", default=None, help="a random delay of up to this much per run (default watch.jitter)")
    add.add_argument("--concurrency", type=int, default=8, help="items in flight at once in a run")
    add.add_argument("--recheck", type=int, default=0, metavar="N",
                     help="each run also asks the platform again about N items of the listings it reads (the "
                     "oldest-checked first) and records those gone upstream (default 0: none)")
    add.add_argument("--paused", action="store_true", help="create it paused (trawl watch resume NAME)")
    add.add_argument("--refresh-extras-days", type=int, default=0, metavar="N",
                     help="each run also fetches again the extras (comments, danmaku...) of the watch's items younger "
                          "than N days, each a dated snapshot (at most watch.refresh_extras_limit a run)")
    add.add_argument("--json", action="store_true")
    add_listing_filter_flags(add)
    add.set_defaults(func="watch:cmd_add", command_name="watch")

    listing = actions.add_parser("list", help="watches: source, interval, paused, last run's counts, next run")
    listing.add_argument("--json", action="store_true", help="one JSON object per watch")
    listing.set_defaults(func="watch:cmd_list", command_name="watch")

    for action, text in (("pause", "stop starting runs (a run going on finishes)"), ("resume", "start runs again"),
                         ("trigger", "run now (unless a run is going on)"),
                         ("remove", "delete the watch (a run going on finishes)")):
        steer = actions.add_parser(action, help=text)
        steer.add_argument("name")
        steer.add_argument("--json", action="store_true")
        steer.set_defaults(func="watch:cmd_steer", action=action, command_name="watch")


def _export(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help="write the catalog's items as named files (Uploader/Title [id].mp4)",
                            description="Fields: " + ", ".join(f"{{{name}}} ({what})" for name, what in FIELDS.items()),
                            epilog=EXPORT_NOTES + "\n\n" + EXPORT_EXAMPLES, formatter_class=ExamplesFormatter)
    export.add_argument("dir", help="the directory to export into (created when missing)")
    export.add_argument("-o", "--template", "--output", dest="template", metavar="TEMPLATE",
                        help=f"name template, {{field}} or yt-dlp's %%(field)s (%%(title)s [%%(id)s].%%(ext)s), "
                             f"'/' makes directories (default {DEFAULT_TEMPLATE!r})")
    add_naming_flags(export)
    export.add_argument("--platform", help="only this platform's items")
    export.set_defaults(func="export:cmd_export")


def _config(sub: argparse._SubParsersAction) -> None:
    config = sub.add_parser("config", help="the settings in effect and where everything is: the data directory, "
                                           "the config files read, the catalog, blobs, logs, the background server")
    config.add_argument("--json", action="store_true", help="every setting (secrets masked), the paths, the server")
    config.set_defaults(func="config:cmd_config")


SHELLS = ("bash", "zsh", "fish", "tcsh")


def _shell(sub: argparse._SubParsersAction) -> None:
    completion = sub.add_parser("completion", help="print the shell completion script (bash, zsh, fish, tcsh)",
                                epilog="""examples:
  trawl completion bash > ~/.local/share/bash-completion/completions/trawl
  trawl completion zsh > ~/.zfunc/_trawl   (fpath+=~/.zfunc before compinit)
  trawl completion fish > ~/.config/fish/completions/trawl.fish""", formatter_class=ExamplesFormatter)
    completion.add_argument("shell", choices=SHELLS)
    completion.set_defaults(func="shell:cmd_completion", needs_nothing=True)
    manpage = sub.add_parser("manpage", help="print the manual page (roff), generated from these options",
                             epilog="""examples:
  trawl manpage > ~/.local/share/man/man1/trawl.1 && man trawl
  trawl manpage | man -l -""", formatter_class=ExamplesFormatter)
    manpage.set_defaults(func="shell:cmd_manpage", needs_nothing=True)
