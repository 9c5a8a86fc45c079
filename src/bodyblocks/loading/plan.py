"""What a run will do, worked out once from what was asked for: the extractor, its checkpoint folder and preset,
the engine, the pages per forward pass and the threads; and what its outputs will say made them.

    plan = make_plan(None, ExtractOptions(checkpoint="fast", device="cpu"), runner=True)
    plan.extractor, plan.engine, plan.preset, plan.batch_size, plan.threads    # "ensemble", "onnx", "fast", 1, 1
    plan.headline()     # "ensemble (preset fast: .../checkpoints/ensemble-fast, sha256 3f2a...) on onnx, ..."
    extractor = plan.build()
    extractor = load("fast")                                    # the library's: make_plan(...).build()

`make_plan` is the one place where what was left unsaid gets its value (the first three: checkpoints.locate, which
reads each config.json once):
  extractor   the kind of the named checkpoint's folder, else of $BODYBLOCKS_MODEL's, else the ensemble;
  checkpoint  $BODYBLOCKS_MODEL's folder when it holds the extractor's kind; for the ensemble the accurate preset
              where CUDA can run it (checkpoints.default_checkpoint); else the kind's shipped folder;
  engine      ONNX Runtime on a CPU when the model has its export, else torch (engines.engine_for), "none" for
              the trees alone, None for an extractor without a model;
  threads     torch: the usable cores less one for the parsing thread when the forward pass overlaps, divided
              among the worker processes (cores.default_threads); ONNX Runtime: 1 per session;
  batch_size  options.default_batch_size: 16 in the library; in the batch runner 1, 64 on torch on a GPU.
The command line (`bodyblocks extract`) and the library's batch runner (BatchOptions), the Ray pipeline and the
library's `bodyblocks.load` / `bodyblocks.extract` all build what it plans.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bodyblocks.extraction.extractor import BlockExtractor
from bodyblocks.loading.checkpoints import ENSEMBLE, load_extractor, locate
from bodyblocks.loading.engines import gpu_present
from bodyblocks.loading.options import ExtractOptions, default_batch_size
from bodyblocks.loading.provenance import headline, model_hash, preset_of
from bodyblocks.loading.registry import TRAINED, Extractor, extractor_names, get_extractor
from bodyblocks.runtime.cores import default_threads


@dataclass(frozen=True)
class Plan:
    """A run's extractor with everything about it decided (make_plan)."""

    extractor: str  # the extractor's name
    # how it runs, nothing left to a default: the checkpoint as the batch runner's journal records it (what was
    # named, or the folder or preset picked for it), threads, batch_size; an extractor without a model: only
    # batch_size (pages per group in the batch runner)
    options: ExtractOptions
    engine: str | None  # "onnx", "torch", "none" (the trees alone), None (no model: the baselines and peers)
    folder: Path | None  # the checkpoint folder (None: an extractor without one)
    preset: str | None  # the shipped kind or preset the folder is ("fast", "ensemble"), None: one's own folder

    @property
    def batch_size(self) -> int:
        """Pages per forward pass of the model."""
        assert self.options.batch_size is not None  # (make_plan sets it)
        return self.options.batch_size

    @property
    def threads(self) -> int | None:
        """CPU threads of the model's forward passes (None: no model)."""
        return self.options.threads

    def build(self) -> Extractor:
        """The extractor this plan describes (a model that is not there: ModelNotFound)."""
        if self.folder is None:
            return get_extractor(self.extractor)
        return load_extractor(self.extractor, self.folder, self.options)

    def describe(self) -> dict[str, Any]:
        """What the outputs are made with (report.json's `model`): extractor, preset, checkpoint folder, engine,
        version, the model's SHA-256 (provenance.model_hash)."""
        from bodyblocks.version import __version__

        folder = None if self.folder is None else self.folder.resolve()
        return {"extractor": self.extractor, "preset": self.preset, "checkpoint": folder and str(folder),
                "engine": self.engine, "bodyblocks": __version__,
                "model_sha256": None if self.folder is None else model_hash(self.folder)}

    def headline(self) -> str:
        """One line: which model runs on which engine (the first line of `bodyblocks extract`)."""
        return headline(self.describe())


def make_plan(extractor: str | None = None, options: ExtractOptions | None = None, *, workers: int | None = None,
              overlap: bool | None = None, runner: bool = False) -> Plan:
    """What was asked for, as a Plan (module docstring: what each default is).

    Args:
        extractor: the extractor's name; None: the default one.
        options: how it runs, as asked (None: every default); for an extractor without a model (the baselines,
            the peers) only batch_size.
        workers: the batch runner's worker processes (None: its default), and `overlap`: whether its forward pass
            overlaps the parsing (None: it does); they share the cores out among torch's threads.
        runner: for the batch runner (its own batch-size default) rather than the library.
    Raises:
        ValueError: an unknown extractor, options it does not take, an engine that cannot run here.
        ModelNotFound: no such checkpoint.
        ImportError: the torch engine without torch (what to install).
    """
    asked = ExtractOptions.of(options)
    if extractor is not None and extractor not in extractor_names():
        raise ValueError(f"unknown extractor {extractor!r}; choose from {', '.join(extractor_names())}")
    if not asked.vote and extractor not in (None, ENSEMBLE):
        raise _vote_refused(extractor)
    if extractor is not None and extractor not in TRAINED:
        given = [f.name for f in dataclasses.fields(asked)
                 if f.name != "batch_size" and getattr(asked, f.name) != f.default]
        if given:
            raise ValueError(f"extractor options other than batch_size are for {', '.join(TRAINED)}, not "
                             f"{extractor} (given: {', '.join(given)})")
        return Plan(extractor, ExtractOptions(batch_size=asked.batch_size or default_batch_size(runner=runner)),
                    None, None, None)
    name, checkpoint, folder, engine = locate(extractor, asked)
    if not asked.vote and name != ENSEMBLE:  # the default extractor, a checkpoint's kind
        raise _vote_refused(name)
    threads = asked.threads
    if threads is None and engine == "torch":  # this process's forward passes, beside the parsing
        threads = default_threads(workers or 1, overlap is not False)
    elif threads is None and engine == "onnx":
        threads = 1  # per worker process's session
    gpu = str(asked.device).startswith("cuda") or (asked.device == "auto" and gpu_present())
    batch_size = asked.batch_size or default_batch_size(engine, gpu, runner)
    resolved = dataclasses.replace(asked, checkpoint=checkpoint, threads=threads, batch_size=batch_size)
    return Plan(name, resolved, engine, folder, preset_of(folder))


def _vote_refused(name: str) -> ValueError:
    """The error of vote=False for an extractor other than the ensemble."""
    return ValueError(f"--no-vote is an option of the ensemble (vote=False), not of {name}")


def load(spec: str | os.PathLike[str] | None = None, options: ExtractOptions | None = None,
         **changes: Any) -> BlockExtractor:
    """The block extractor that a checkpoint folder describes, as planned (make_plan) and built.

    Args:
        spec: a checkpoint folder (its config.json says the kind), a kind ("ensemble", "model", "gbt") or a preset
            ("fast", "accurate"); None: options.checkpoint, else $BODYBLOCKS_MODEL's folder, else the accurate
            preset where CUDA can run it, else the shipped ensemble.
        options: how it runs (ExtractOptions), and `changes` its fields by keyword (device=, threshold=, ...).
    """
    asked = ExtractOptions.of(options, **changes)
    if spec is not None:
        asked = dataclasses.replace(asked, checkpoint=os.fspath(spec))
    extractor = make_plan(None, asked).build()
    assert isinstance(extractor, BlockExtractor)
    return extractor
