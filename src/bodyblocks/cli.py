"""Command line: each subcommand is a thin wrapper over one function of the package.

Sections are owned by areas of the pipeline; keep each subcommand's parser and handler together.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

Handler = Callable[[argparse.Namespace], int]


# --- segment (segment.py) ------------------------------------------------------------------------------
def _add_segment(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("segment", help="cut a page into ordered text blocks (JSON lines or a table)")
    p.add_argument("page", help="a .html, .htm or .html.gz file")
    p.add_argument("--format", choices=["jsonl", "table"], default="jsonl")
    p.set_defaults(handler=_run_segment)


def _run_segment(args: argparse.Namespace) -> int:
    from bodyblocks.segment import print_segmentation

    return print_segmentation(args.page, fmt=args.format, out=sys.stdout)


# --- end segment ----------------------------------------------------------------------------------------

SECTIONS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_segment,
]


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand."""
    from bodyblocks import __version__

    parser = argparse.ArgumentParser(prog="bodyblocks", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"bodyblocks {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SECTIONS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `bodyblocks` console script."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BrokenPipeError:  # e.g. `bodyblocks segment page.html | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
