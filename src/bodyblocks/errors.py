"""Typed errors for bad input: callers catch InputError and record the reason, never crash a batch."""


class InputError(ValueError):
    """A page that cannot be turned into text; `reason` is a short machine-readable tag."""

    reason = "bad-input"


class EmptyInput(InputError):
    reason = "empty"


class BinaryInput(InputError):
    reason = "binary"


class TooLarge(InputError):
    reason = "too-large"


class CorruptCompression(InputError):
    reason = "corrupt-gzip"


class NotMarkup(InputError):
    """A str that names a file, given where a page's HTML goes (pass a pathlib.Path to read the file)."""

    reason = "path-as-html"


class ModelNotFound(FileNotFoundError):
    """A checkpoint that was asked for is not there (the message says what to do)."""
