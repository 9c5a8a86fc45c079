"""How a block extractor (model, gbt, ensemble) runs: one typed, validated options object.

    opts = ExtractOptions(device="cuda", batch_size=64)
    extractor = get_extractor("ensemble", opts)                  # or load("fast", opts), load_extractor(...)
    run_batch(pages, "out/", BatchOptions(options=opts))          # the batch runner takes the same object
    get_extractor("ensemble", threshold=0.4)                     # keyword arguments: ExtractOptions' fields

The library (`bodyblocks.load`, `get_extractor`), the batch runner (`BatchOptions.options`) and the command
line (`bodyblocks extract --device ... --threshold ...`) all build one of these; a bad value fails when it is
built, with a one-line ValueError, not half-way through a run. No torch and no I/O here.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Any

DEVICES = ("auto", "cpu", "cuda")  # "cuda:N" names one GPU
ENGINES = ("auto", "onnx", "torch")
LIBRARY_BATCH_SIZE = 16  # pages per forward pass when batch_size is None, outside the batch runner
GPU_BATCH_SIZE = 64  # ... in the batch runner, on the torch engine on a GPU (on a CPU: 1)
# options that change an extractor's outputs (not only its speed): a resumed batch run must keep them
OUTPUT_SETTINGS = ("checkpoint", "vote", "threshold", "confident", "rescue", "fallback")


@dataclass(frozen=True)
class ExtractOptions:
    """Options of the trained extractors; the defaults are the shipped, tuned behaviour."""

    # a checkpoint folder, or a shipped name ("ensemble", "model", "gbt", a preset such as "fast"); None: the
    # kind's shipped folder ($BODYBLOCKS_MODEL's folder for the default extractor when it is set)
    checkpoint: str | None = None
    device: str = "auto"  # the model's forward passes: "auto" (CUDA when there is a GPU), "cpu", "cuda", "cuda:N"
    # what runs the model: "onnx" (ONNX Runtime, CPU, no torch), "torch", or "auto" (ONNX Runtime on a CPU when
    # the checkpoint has its export: engines.choose_engine)
    engine: str = "auto"
    threshold: float | None = None  # P(body) at which a block is kept; None: the checkpoint's tuned value
    confident: float | None = None  # a page is low-confidence when no block reaches this; None: tuned
    # on a page with no block at the threshold, keep those at or above this; None: the checkpoint's tuned value
    # when the threshold is the checkpoint's too (else no rescue)
    rescue: float | None = None
    fallback: bool = False  # low-confidence pages go to the heuristic extractor
    comments: bool = False  # readers' comments kept in the text, not Extraction.comments (decision.py step 5)
    # pages per forward pass of the model; None: default_batch_size's (loading/plan.py sets it for a run)
    batch_size: int | None = None
    # CPU threads of the model's forward passes; None: 1 per ONNX Runtime session, torch's
    # cores.default_threads (loading/plan.py sets it for a run)
    threads: int | None = None
    vote: bool = True  # the ensemble with the heuristic's vote (False: the blend and rule tuned without it)
    # blocks note their links and emphasis for Markdown output (Block.marks; about 0.8 CPU ms a page more); the
    # batch runner sets it for the formats that hold Markdown (md, parquet, jsonl)
    marks: bool = False
    # the page's publication date read (Extraction.date, htmldate: its import costs a process about 35 ms); the
    # batch runner turns it off for txt, the one format that does not show it
    dates: bool = True
    # each page's kind predicted (Extraction.page_kind: article, forum, product, ...; classify/pagekind.py), about
    # 2.2 CPU ms a page more; None in the outputs without it
    page_kind: bool = False

    def __post_init__(self) -> None:
        if self.checkpoint is not None:
            object.__setattr__(self, "checkpoint", os.fspath(self.checkpoint))  # a Path is recorded as text
        _check(self.device in DEVICES or str(self.device).startswith("cuda:"),
               f"device must be one of {', '.join(DEVICES)} or cuda:N, got {self.device!r}")
        _check(self.engine in ENGINES, f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        for name in ("threshold", "confident", "rescue"):
            value = getattr(self, name)
            _check(value is None or (_number(value) and 0.0 <= value <= 1.0),
                   f"{name} must be a number in [0, 1] or None, got {value!r}")
        for name in ("batch_size", "threads"):
            value = getattr(self, name)
            _check(value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1),
                   f"{name} must be an integer >= 1 or None, got {value!r}")
        for name in ("fallback", "vote", "marks", "dates"):
            _check(isinstance(getattr(self, name), bool), f"{name} must be True or False, got {getattr(self, name)!r}")

    @classmethod
    def of(cls, options: ExtractOptions | None = None, **changes: Any) -> ExtractOptions:
        """`options` (None: the defaults) with keyword arguments of the same names put in.

        Raises:
            TypeError: a keyword that is no option.
            ValueError: a value out of range.
        """
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise TypeError(f"unknown extractor option(s) {', '.join(unknown)}; the options are {', '.join(known)}")
        if options is not None and not isinstance(options, cls):
            raise TypeError(f"options must be an ExtractOptions, got {type(options).__name__}")
        base = options if options is not None else cls()
        return dataclasses.replace(base, **changes) if changes else base

    @property
    def forward_batch(self) -> int:
        """Pages per forward pass: batch_size, else the library's default (default_batch_size)."""
        return self.batch_size or default_batch_size()

    def output_settings(self) -> dict[str, Any]:
        """The options that change outputs, as a batch run's journal records them: the checkpoint when one is
        named, fallback always, the others when they are not the defaults (so that folders written before this
        object existed resume with the same settings)."""
        out: dict[str, Any] = {"checkpoint": self.checkpoint} if self.checkpoint else {}
        out["fallback"] = self.fallback
        default = ExtractOptions()
        out |= {k: getattr(self, k) for k in OUTPUT_SETTINGS
                if k not in out and getattr(self, k) != getattr(default, k)}
        return out


def default_batch_size(engine: str | None = None, gpu: bool = False, runner: bool = False) -> int:
    """Pages per forward pass when none is asked for (the one place this default is decided): in the library
    LIBRARY_BATCH_SIZE; in the batch runner (`runner`) 1, as on a CPU padding costs more than batching saves, and
    GPU_BATCH_SIZE on the torch engine on a GPU."""
    if not runner:
        return LIBRARY_BATCH_SIZE
    return GPU_BATCH_SIZE if engine == "torch" and gpu else 1


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(f"extractor options: {message}")
