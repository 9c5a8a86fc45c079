"""Command line: each subcommand is a thin wrapper over one function of the package.

Sections are owned by areas of the pipeline (run.py: segment, extract, capture; train.py: train, tune,
ensemble, finetune, train-gbt, ship, export; data.py: evaluate, data;
annotate.py: annotate); keep each subcommand's parser and handler together.
"""

from __future__ import annotations

import argparse
import difflib
import re
import signal
import sys
from collections.abc import Callable, Sequence

from bodyblocks.cli.annotate import add_annotate
from bodyblocks.cli.checks import OneLineParser
from bodyblocks.cli.dataset_commands import add_data, add_evaluate
from bodyblocks.cli.run import add_capture, add_extract, add_segment
from bodyblocks.cli.train import (
    add_build,
    add_ensemble,
    add_export,
    add_finetune,
    add_gbt,
    add_ship,
    add_train,
    add_tune,
)

Handler = Callable[[argparse.Namespace], int]

SECTIONS: list[Callable[[argparse._SubParsersAction], None]] = [
    add_segment,
    add_extract,
    add_tune,
    add_ensemble,
    add_train,
    add_build,
    add_evaluate,
    add_data,
    add_capture,
    add_gbt,
    add_ship,
    add_export,
    add_annotate,
    add_finetune,
]


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand."""
    from bodyblocks.version import __version__

    parser = OneLineParser(
        prog="bodyblocks", description="Find the body text of web pages by classifying their text blocks.")
    parser.add_argument("--version", action="version", version=f"bodyblocks {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SECTIONS:
        add(sub)
    return parser


# What a user's mistake raises (a missing or corrupt checkpoint, a bad option value, a file that is not there,
# an optional package not installed): one line on stderr and exit 2, the traceback only with --debug.
USAGE_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, ImportError, KeyError)


def console() -> int:
    """The `bodyblocks` command (and `python -m bodyblocks`): main(), then Ctrl-C ignored while the interpreter
    exits. What the command did is written by then; a Ctrl-C during the exit (a process group's, an impatient
    user's) would otherwise end the process by the signal, with no word of it."""
    code = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """The command line's work: parse `argv`, run the subcommand, its exit status (what `console` runs)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    unknown = unknown_option(parser, argv)
    if unknown is not None:  # argparse names a missing argument first, and an unknown option only after many lines
        print(unknown, file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BrokenPipeError:  # e.g. `bodyblocks segment page.html | head`
        return 0
    except KeyboardInterrupt:  # Ctrl-C where a subcommand does not handle it itself (loading a model, say)
        if args.debug:
            raise
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # exiting: another Ctrl-C stops nothing, quietly
        print(f"bodyblocks {args.command}: interrupted", file=sys.stderr)
        return 130
    except USAGE_ERRORS as exc:
        if args.debug:
            raise
        print(f"bodyblocks {args.command}: {one_line(exc)}{install_hint(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: still one line, and how to see more
        if args.debug:
            raise
        print(f"bodyblocks {args.command}: internal error: {type(exc).__name__}: {one_line(exc)} "
              "(run with --debug for the traceback)", file=sys.stderr)
        return 1


_NUMBER = re.compile(r"-\d*\.?\d+(e-?\d+)?")


def unknown_option(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """The one-line error for the first option in `argv` that its (sub)command does not take, or for a command
    that is none, or None when every option and command is known (argparse then reports anything else wrong).
    Options may be abbreviated as argparse allows."""
    command = "bodyblocks"
    for token in argv:
        if token == "--":
            break
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and token in subs[0].choices:  # the subcommand: its own options from here on
            parser, command = subs[0].choices[token], f"{command} {token}"
        elif subs and not token.startswith("-"):  # where a command is expected, a word that names none
            near = difflib.get_close_matches(token, list(subs[0].choices), n=1, cutoff=0.6)
            hint = f"did you mean {near[0]}? " if near else ""
            return f"{command}: unknown command {token} ({hint}{command} --help lists the commands)"
        elif token.startswith("-") and token != "-" and not _NUMBER.fullmatch(token):
            name = token.split("=", 1)[0] if token.startswith("--") else token[:2]
            known = list(parser._option_string_actions)
            if name in known or (name.startswith("--") and any(o.startswith(name) for o in known)):
                continue
            near = difflib.get_close_matches(name, [o for o in known if o.startswith("--")], n=1, cutoff=0.75)
            hint = f"did you mean {near[0]}? " if near else ""
            return f"{command}: unknown option {name} ({hint}{command} --help lists the options)"
    return None


def install_hint(exc: BaseException) -> str:
    """For a module that is not installed (a bare `No module named 'torch'`), what to install: the extra of
    pyproject.toml that brings it (extras.EXTRA_OF); "" for other errors and for messages that say it already."""
    from bodyblocks.runtime.extras import EXTRA_OF, install_command

    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    extra = EXTRA_OF.get(name.split(".", 1)[0]) if name else None
    if extra is None or "pip install" in str(exc):
        return ""
    return f" ({install_command(extra)})"


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (KeyError's quotes and OSError's errno included as Python gives them)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 500 else text[:497] + "..."
