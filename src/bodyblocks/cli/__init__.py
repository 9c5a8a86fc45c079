"""Command line: each subcommand is a thin wrapper over one function of the package.

Sections are owned by areas of the pipeline (run.py: segment, extract, capture; train.py: train, tune,
ensemble, train-gbt, ship; data.py: evaluate, data); keep each subcommand's parser and handler together.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from bodyblocks.cli.data import add_data, add_evaluate
from bodyblocks.cli.run import add_capture, add_extract, add_segment
from bodyblocks.cli.train import add_ensemble, add_gbt, add_ship, add_train, add_tune

Handler = Callable[[argparse.Namespace], int]

SECTIONS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_segment,
    add_extract,
    add_tune,
    add_ensemble,
    add_train,
    add_evaluate,
    add_data,
    add_capture,
    add_gbt,
    add_ship,
]


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand."""
    from bodyblocks import __version__

    parser = argparse.ArgumentParser(
        prog="bodyblocks", description="Find the body text of web pages by classifying their text blocks.")
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
