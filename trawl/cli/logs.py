"""Reading trawl's own logs: ``logs triage``."""

from __future__ import annotations

import argparse
import json
import sys

from trawl.cli.output import CommandError
from trawl.settings import Settings


def cmd_logs(args: argparse.Namespace, settings: Settings) -> int:
    from trawl.durations import parse_duration
    from trawl.triage import render, triage

    try:
        since = parse_duration(args.since) if args.since else None
        recent = parse_duration(args.recent)
    except ValueError as err:
        raise CommandError(str(err)) from None
    try:
        source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8", errors="replace")
    except OSError as err:
        raise CommandError(f"cannot read {args.file}: {err.strerror}") from None
    with source:
        report = triage(source, since=since, recent=recent)
    print(json.dumps(report.to_json(), indent=2) if args.json else render(report))
    return 0
