"""What the command line checks before a command runs, in the words of its options: option values (argparse
types that name the option's range), the --out folder, --device cuda, and the optional packages the inputs and
extractors asked for. A mistake found here is one line and exit status 2 with nothing written, never a run that
fails half way (a URL list without selenium) or an "internal error"."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser, whose mistakes (a bad value, a missing option, a bad choice) are one line, not a usage
    block: `bodyblocks extract: --threads: 'abc' is not a whole number; see bodyblocks extract --help`."""

    def error(self, message: str) -> None:  # type: ignore[override]
        message = message.removeprefix("argument ")
        print(f"{self.prog}: {message}; see {self.prog} --help", file=sys.stderr)
        sys.exit(2)


def whole(least: int, meaning: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number >= `least`; `meaning` says what the smallest values mean, in the message."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{value} is too small: give {least} or more{meaning}")
        return value

    parse.__name__ = "whole number"
    return parse


def seconds(text: str) -> float:
    """An argparse type: a time in seconds, more than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is no time limit: give seconds, more than 0")
    return value


def share(text: str) -> float:
    """An argparse type: a share between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a share: give 0 to 1 (0.1: one page in ten)")
    return value


def check_out(out: str) -> None:
    """--out names a folder that is, or can be made, here: not a file, not below a file, writable."""
    path = Path(out)
    for place in (path, *path.absolute().parents):
        if not os.path.lexists(place):
            continue
        if not place.is_dir():
            where = "is a file" if place == path else f"cannot be made: {place} is a file, not a folder"
            raise ValueError(f"--out {out} {where}")
        if not os.access(place, os.W_OK | os.X_OK):
            raise ValueError(f"--out {out}: cannot write in {place} (permission denied)")
        return


def check_device(device: str) -> None:
    """--device cuda where torch finds no CUDA device: what to do instead, before any model loads."""
    if device != "cuda":
        return
    from bodyblocks.runtime.extras import install_command

    try:
        import torch
    except ImportError:
        raise ImportError(f"--device cuda needs torch ({install_command('gpu')}); or --device cpu") from None
    if not torch.cuda.is_available():
        raise ValueError("--device cuda: torch finds no CUDA device here (a CPU-only torch build, or no GPU); "
                         "use --device cpu, or auto (the default: the GPU where there is one)")


def check_peers(names: Iterable[str]) -> None:
    """Each peer extractor asked for imports here (trafilatura, readability, gne): else an ImportError naming
    what to install, before any page is read."""
    from bodyblocks.baselines.peers import PEER_MODULES
    from bodyblocks.runtime.extras import install_command

    for name in names:
        module = PEER_MODULES.get(name)
        if module is None:
            continue
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(f"extractor {name!r} needs {module}, which cannot be imported ({exc}); "
                              f"install the peers: {install_command('peers')}") from None


def check_capture(what: str) -> None:
    """Chromium, chromedriver and selenium are here for `what` (URL lists, --browser): else a ValueError (a
    usage error: one line, exit 2) naming what to install."""
    from bodyblocks.capture import CaptureUnavailable
    from bodyblocks.capture.chromium import check_available

    try:
        check_available()
    except CaptureUnavailable as exc:
        raise ValueError(f"{what} need a browser: {exc}") from None
