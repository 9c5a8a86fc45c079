"""Ray Data: bodyblocks extract across a cluster, WARC and page files in, Parquet or JSON Lines shards out.

    ds = read_pages(["crawl.warc.gz"], shard_size=10_000)           # a row per page (and per record that is none)
    ds = extract_dataset(ds, BatchOptions(extractor="ensemble"))     # + title, text, markdown, ... per page
    summary = write_shards(ds, "out/", "parquet", shard_size=10_000)

`run_ray` (`bodyblocks extract INPUTS --ray [ADDRESS]`) runs the three with the output folder's lock, resume by
shard and report.json. The stages:
  1. read (a task per input): WARC records (batch/warc.py) or page files as rows: the page's bytes, its id, url,
     record id, HTTP charset, and its input (`source`) and `position`, which name its shard; the pages of
     shards that exist already are left out (resume);
  2. CPU stage (tasks): decode (the HTTP charset tried first), segment, the heuristic's vote, the model's inputs
     and the trees' P(body) (`BlockExtractor.prepare_pages`), each page under the page time limit
     (batch/worker.py), the same code as the single-process run;
  3. model stage (an actor pool): the Transformer's forward passes, the blend, the decision rule; on a cluster
     with GPUs one actor per GPU (num_gpus=1) on the torch engine in bf16, `gpu_batch` pages per forward pass;
     else CPU actors on ONNX Runtime;
  4. write (grouped by shard): each shard's rows in position order, written atomically (batch/columnar.py).
A page that fails at any stage (unreadable, malformed, too slow, an exception in a stage) is a row with its
error, never a failed job. The output folder must be one every node can write (a shared file system).
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bodyblocks.batch.columnar import COLUMNAR, COLUMNS, ShardWriter, read_shard, shard_name
from bodyblocks.batch.columnar import schema as columnar_schema
from bodyblocks.batch.inputs import Job, UniqueKeys, input_jobs, input_sources, is_url_list, safe_key
from bodyblocks.batch.journal import Journal
from bodyblocks.batch.outputs import page_row
from bodyblocks.batch.runner import BatchOptions
from bodyblocks.batch.worker import init_worker, work
from bodyblocks.extraction.extractor import StagedExtractor
from bodyblocks.loading.registry import TORCH, Extractor
from bodyblocks.runtime.extras import require
from bodyblocks.runtime.files import atomic_path
from bodyblocks.types import Document, Extraction

READ_BATCH = 32  # rows per block out of the read stage (a block's pages go through the CPU stage together)
CPU_BATCH = 16  # pages per call of a CPU model actor (ONNX Runtime runs one page per forward pass anyway)
GPU_BATCH = 64  # pages per call of a GPU actor, and per forward pass (bucketed by block count)
CPUS_PER_ACTOR = 4  # without GPUs: one model actor per this many CPUs (its forward pass is ~1/5 of a page's CPU)


@dataclass
class RayOptions:
    """How to run on Ray (the --ray flags of `bodyblocks extract`)."""

    address: str | None = None  # a cluster ("auto", "ray://host:10001"); None: a local Ray started here
    workers: int | None = None  # CPU-stage tasks at once; None: as many as the cluster's CPUs allow
    actors: int | None = None  # model actors; None: one per GPU, else one per CPUS_PER_ACTOR CPUs
    num_cpus: int | None = None  # a local Ray's CPUs (None: this machine's)
    gpu_batch: int = GPU_BATCH
    progress: bool = True


@dataclass
class RaySummary:
    """What a --ray run did (report.json holds it too)."""

    pages: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0  # pages in shards complete from an earlier run
    low_confidence: int = 0
    empty: int = 0
    truncated: int = 0
    seconds: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)
    filtered: dict[str, int] = field(default_factory=dict)
    shards: list[dict[str, Any]] = field(default_factory=list)  # {"shard", "rows"} per shard written


def _ray() -> Any:
    """ray, with ray.data imported."""
    require("ray.data", "--ray (Ray Data)")
    return require("ray", "--ray (Ray Data)")


# --------------------------------------------------------------------------------------- 1. read
def _schema(kind: str) -> Any:
    """The pyarrow schema of the rows between two stages (explicit: a block of nulls must not decide a type)."""
    pa = require("pyarrow", "--ray (Ray Data)")
    text = pa.string()
    keys = [("id", text), ("source", text), ("position", pa.int64()), ("shard", text), ("url", text),
            ("record_id", text), ("language", text), ("filtered", text), ("error", text)]
    if kind == "read":
        return pa.schema([*keys, ("path", text), ("charset", text), ("truncated", pa.bool_()),
                          ("html", pa.binary())])
    if kind == "prepared":
        return pa.schema([*keys, ("payload", pa.binary()), ("seconds", pa.float64())])
    named = {name for name, _ in keys}  # the output columns (batch/columnar's schema) after the keys, as typed there
    columns = [(f.name, f.type) for f in columnar_schema() if f.name not in named]
    return pa.schema([*keys, *columns, ("seconds", pa.float64())])


def _table(rows: list[dict[str, Any]], kind: str) -> Any:
    pa = require("pyarrow", "--ray (Ray Data)")
    schema = _schema(kind)
    return pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)


def _read_rows(batch: Any, shard_size: int, done: frozenset[str]) -> Iterator[Any]:
    """Stage 1 for the inputs of a batch (one, normally): their pages' rows, READ_BATCH at a time."""
    for path, source in zip(batch["path"].to_pylist(), batch["source"].to_pylist(), strict=True):
        unique = UniqueKeys()
        rows = []
        for job in input_jobs(Path(path), source, lambda raw, _job, unique=unique: unique(safe_key(raw))):
            shard = shard_name(job.source, job.position, shard_size)
            if shard in done:
                continue
            rows.append({"id": job.key, "source": job.source, "position": job.position, "shard": shard,
                         "url": job.url, "record_id": job.record_id, "language": job.language,
                         "filtered": job.filtered, "error": job.error, "path": job.path, "charset": job.charset,
                         "truncated": job.truncated,
                         "html": job.html.encode("utf-8") if isinstance(job.html, str) else job.html})
            if len(rows) >= READ_BATCH:
                yield _table(rows, "read")
                rows = []
        if rows:
            yield _table(rows, "read")


def read_pages(inputs: Sequence[str | Path], shard_size: int = 10_000, done: frozenset[str] = frozenset(),
               workers: int | None = None) -> Any:
    """A ray.data.Dataset of the pages of these inputs (WARC files, page files, folders, dataset folders): a row
    per page, and per WARC record that is no page (`filtered`: counted, never written). `done`: shards to leave
    out (complete already); `workers`: read tasks at once (give extract_dataset's, RayOptions.workers, and Ray
    fuses the two stages: the pages' bytes never pass through the object store)."""
    rd = require("ray.data", "--ray (Ray Data)")
    sources = input_sources(inputs)
    for path, _ in sources:
        if path.is_file() and is_url_list(path):
            raise ValueError(f"--ray reads WARC and page files, not URL lists ({path}): capture them first")
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {path}")
    items = [{"path": str(path.resolve()), "source": source} for path, source in sources]
    ds = rd.from_items(items, override_num_blocks=max(1, len(items)))
    return ds.map_batches(_read_rows, batch_size=1, batch_format="pyarrow", num_cpus=1, compute=_tasks(workers),
                          fn_kwargs={"shard_size": shard_size, "done": done})


def _tasks(workers: int | None) -> Any:
    """The CPU stages' compute: `workers` tasks at once, or as many as the cluster allows (None)."""
    return None if workers is None else require("ray.data", "--ray (Ray Data)").TaskPoolStrategy(size=workers)


# --------------------------------------------------------------------------------------- 2. CPU stage
_EXTRACTORS: dict[str, Extractor] = {}  # per worker process: built once, by role and options


def _extractor(opts: BatchOptions, role: str) -> Extractor:
    """This process's extractor for a stage: "cpu" (parsing and inputs), "cpu-model" or "gpu-model"."""
    key = f"{role} {json.dumps(asdict(opts), sort_keys=True, default=str)}"
    if key not in _EXTRACTORS:
        options = opts.options  # as planned: the checkpoint is the same for every role
        if opts.name in TORCH:
            if role == "gpu-model":  # the torch engine, bf16 autocast (ModelScorer), pages per forward pass
                options = replace(options, device="cuda", engine="torch")
            else:
                options = replace(options, device="cpu")
        _EXTRACTORS[key] = replace(opts, options=options).plan.build()  # (planned again for the role's device)
    return _EXTRACTORS[key]


def _staged(extractor: Extractor) -> bool:
    return isinstance(extractor, StagedExtractor)


def _job_of(row: dict[str, Any]) -> Job:
    return Job(key=row["id"], path=row.get("path"), html=row.get("html"), url=row["url"], error=row["error"],
               record_id=row["record_id"], charset=row.get("charset"), language=row["language"],
               truncated=bool(row.get("truncated")))


def _prepare_rows(table: Any, opts: BatchOptions) -> Any:
    """Stage 2: each page read and parsed under the time limit (batch/worker.py), then its model inputs and
    trees' P(body) for the model stage; an extractor that works on whole pages answers here."""
    extractor = _extractor(opts, "cpu")
    staged = _staged(extractor)
    init_worker(None if staged else extractor, opts.page_timeout, extractor.page_segmenter if staged else None)
    rows = table.to_pylist()
    out, docs = [], []
    for row in rows:
        if row["filtered"]:
            out.append(row | {"payload": None})
            continue
        job, result, error, secs = _work(_job_of(row))
        row = row | {"language": job.language, "error": error, "seconds": secs, "payload": None}
        if isinstance(result, Extraction):  # a whole-page extractor's answer
            row["payload"] = pickle.dumps(result, protocol=5)
        elif isinstance(result, Document):
            docs.append((len(out), result))
        out.append(row)
    if staged and docs:
        for (k, doc), parts in zip(docs, _parts(extractor, [d for _, d in docs]), strict=True):
            if isinstance(parts, str):
                out[k]["error"] = parts
            else:
                out[k]["payload"] = pickle.dumps((doc, parts), protocol=5)
    return _table(out, "prepared")


def _work(job: Job) -> tuple[Job, Any, str | None, float]:
    """worker.work, and an exception it lets through (a bug, or a library failing oddly) a failed page too."""
    try:
        return work(job)
    except Exception as exc:  # noqa: BLE001 - one page's failure, whatever it is, is that page's row
        return job, None, f"error: {type(exc).__name__}: {exc}", 0.0


def _parts(extractor: Any, docs: list[Document]) -> list[Any]:
    """prepare_pages for the pages together, or page by page when that fails (a failed page: its error)."""
    try:
        return extractor.prepare_pages(docs)
    except Exception as exc:  # noqa: BLE001 - see _work
        if len(docs) == 1:
            return [f"error: preparing the model's inputs failed: {type(exc).__name__}: {exc}"]
        return [p for d in docs for p in _parts(extractor, [d])]


# --------------------------------------------------------------------------------------- 3. model stage
class Classify:
    """A model actor: pages prepared by the CPU stage -> forward passes -> blend -> decision rule -> rows."""

    def __init__(self, opts: BatchOptions, gpu: bool, gpu_batch: int = GPU_BATCH) -> None:
        """`gpu`: on this actor's GPU (torch, bf16), `gpu_batch` pages per forward pass; else ONNX Runtime."""
        if gpu:
            self.extractor = _extractor(replace(opts, options=replace(opts.options, batch_size=gpu_batch)), "gpu-model")
        else:
            self.extractor = _extractor(opts, "cpu-model")

    def __call__(self, table: Any) -> Any:
        rows = table.to_pylist()
        staged = [(k, *pickle.loads(r["payload"])) for k, r in enumerate(rows)
                  if r["payload"] is not None and isinstance(self.extractor, StagedExtractor)]
        results: dict[int, tuple[Extraction | None, str | None]] = {}
        t0 = time.perf_counter()
        if staged:
            answers = self._classify([d for _, d, _ in staged], [p for _, _, p in staged])
            results = {k: a for (k, _, _), a in zip(staged, answers, strict=True)}
        share = (time.perf_counter() - t0) / max(1, len(staged))
        out = []
        for k, row in enumerate(rows):
            if k in results:
                ex, error = results[k]
            elif row["payload"] is not None:  # answered whole in the CPU stage (an extractor of whole pages)
                ex, error = pickle.loads(row["payload"]), None
            else:
                ex, error = None, row["error"]
            out.append(final_row(row, ex, error, (row["seconds"] or 0.0) + (share if k in results else 0.0)))
        return _table(out, "final")

    def _classify(self, docs: list[Document], parts: list[Any]) -> list[tuple[Extraction | None, str | None]]:
        """The pages in one call (the model's forward passes over them), or page by page when that fails."""
        ex = self.extractor
        try:
            prepared = ex.prepared_from(docs, parts)
            return [(e, None) for e in ex.finish(prepared, ex.forward(prepared))]
        except Exception as exc:  # noqa: BLE001 - a batch that fails is redone page by page; a page fails alone
            if len(docs) == 1:
                return [(None, f"error: classification failed: {type(exc).__name__}: {exc}")]
            return [r for d, p in zip(docs, parts, strict=True) for r in self._classify([d], [p])]


def final_row(row: dict[str, Any], ex: Extraction | None, error: str | None, seconds: float) -> dict[str, Any]:
    """A page's output row: batch/outputs.page_row (the single-process run's), with its shard's keys."""
    if row["filtered"]:
        return {k: row[k] for k in ("id", "source", "position", "shard", "url", "record_id", "filtered")}
    job = Job(key=row["id"], url=row["url"], record_id=row["record_id"], language=row["language"])
    keys = {k: row[k] for k in ("source", "position", "shard", "filtered")}
    return page_row(job, ex, error) | keys | {"seconds": seconds}


def extract_dataset(ds: Any, opts: BatchOptions | None = None, ray_opts: RayOptions | None = None) -> Any:
    """Extract the pages of a ray.data.Dataset (read_pages' rows) into a Dataset of output rows
    (batch/columnar.COLUMNS, with source, position, shard and filtered).

    Args:
        ds: rows with id, source, position, shard, url, record_id, language, filtered, error, path, charset,
            truncated and html (the page's bytes; None: read from `path`).
        opts: the extractor and its options, the page time limit (BatchOptions, as for run_batch).
        ray_opts: CPU-stage tasks, model actors, pages per GPU forward pass.
    """
    ray = _ray()
    opts, ray_opts = opts or BatchOptions(extractor="ensemble"), ray_opts or RayOptions()
    extractor = opts.plan.build()  # a bad checkpoint fails here, not in a worker
    if not ray.is_initialized():  # (as Ray Data itself does on a first run: a local Ray)
        ray.init(include_dashboard=False, log_to_driver=False)
    ds = ds.map_batches(_prepare_rows, batch_size=None, batch_format="pyarrow", fn_kwargs={"opts": opts},
                        num_cpus=1, compute=_tasks(ray_opts.workers))
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    actors = ray_opts.actors or (gpus or max(1, int(resources.get("CPU", 1)) // CPUS_PER_ACTOR))
    if gpus and _staged(extractor) and getattr(extractor, "model", None) is not None:
        gpu_args = {"opts": opts, "gpu": True, "gpu_batch": ray_opts.gpu_batch}
        return ds.map_batches(Classify, fn_constructor_kwargs=gpu_args, batch_format="pyarrow",
                              batch_size=ray_opts.gpu_batch, num_gpus=1, num_cpus=1,
                              compute=ray.data.ActorPoolStrategy(size=min(actors, gpus)))
    # CPU actors claim no CPU of their own: the forward pass is a fifth of a page's CPU, and a whole CPU held
    # for it would sit idle; the CPU stage's tasks take the cores
    return ds.map_batches(Classify, fn_constructor_kwargs={"opts": opts, "gpu": False}, batch_format="pyarrow",
                          batch_size=CPU_BATCH, num_cpus=0, compute=ray.data.ActorPoolStrategy(size=actors))


# --------------------------------------------------------------------------------------- 4. write
def _write_group(table: Any, out: str, fmt: str, shard_size: int) -> Any:
    """Stage 4 for one shard: its pages' rows in position order, written atomically; a summary row back."""
    pa = require("pyarrow", "--ray (Ray Data)")
    rows = sorted(table.to_pylist(), key=lambda r: (r["position"], r["filtered"] is None))
    pages = [r for r in rows if not r["filtered"]]
    filtered: dict[str, int] = {}
    for r in rows:
        if r["filtered"]:
            filtered[r["filtered"]] = filtered.get(r["filtered"], 0) + 1
    if pages:
        shards = ShardWriter(Path(out), fmt, shard_size)
        for r in pages:
            shards.add(r["source"], r["position"], {k: r[k] for k in COLUMNS})
        shards.close(complete=True)
    reasons: dict[str, int] = {}
    for r in pages:
        if r["error"]:
            reason = r["error"].split(":", 1)[0]
            reasons[reason] = reasons.get(reason, 0) + 1
    summary = {
        "shard": rows[0]["shard"], "rows": len(pages), "failed": sum(reasons.values()),
        "low_confidence": sum("low_confidence" in (r["flags"] or []) for r in pages),
        "truncated": sum("truncated" in (r["flags"] or []) for r in pages),
        "empty": sum(not r["error"] and not r["text"] for r in pages),
        "reasons": json.dumps(reasons), "filtered": json.dumps(filtered),
    }
    return pa.Table.from_pylist([summary])


def write_shards(ds: Any, out: str | Path, fmt: str = "parquet", shard_size: int = 10_000,
                 partitions: int | None = None) -> list[dict[str, Any]]:
    """Write extract_dataset's rows into OUT's shards (`<source>-<shard:05d>.parquet`), grouped by shard; returns
    a summary per shard (rows, failed, reasons, the records that were no page)."""
    if fmt not in COLUMNAR:
        raise ValueError(f"--ray writes {' or '.join(COLUMNAR)} shards, not {fmt}")
    grouped = ds.groupby("shard", num_partitions=partitions)
    return grouped.map_groups(_write_group, batch_format="pyarrow",
                              fn_kwargs={"out": str(Path(out).resolve()), "fmt": fmt,
                                         "shard_size": shard_size}).take_all()


# --------------------------------------------------------------------------------------- the run
def run_ray(inputs: Sequence[str | Path], out_dir: str | Path, opts: BatchOptions,
            ray_opts: RayOptions | None = None) -> RaySummary:
    """bodyblocks extract --ray: every page of the inputs through Ray Data into OUT_DIR's shards, report.json.

    Resume by shard: a shard file that exists is complete (written atomically), and its pages are left out at
    the read stage. A rerun into a folder whose last run used another extractor, format, checkpoint or shard
    size is refused (journal.SettingsMismatch), as is one while another run writes there (journal.FolderBusy).
    """
    ray = _ray()
    ray_opts = ray_opts or RayOptions()
    if opts.fmt not in COLUMNAR:
        raise ValueError(f"--ray writes {' or '.join(COLUMNAR)} shards, not {opts.fmt}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"the output folder {out} is a file")
    opts.plan.build()  # a bad checkpoint fails before OUT_DIR is touched
    out.mkdir(parents=True, exist_ok=True)
    settings = {"extractor": opts.name, "format": opts.fmt,
                **opts.output_settings(), "shard_size": opts.shard_size}
    start = time.perf_counter()
    with Journal(out, settings, opts.resume):  # the folder's lock; the same settings as its earlier runs
        done = _done_shards(out, opts.fmt, [s for _, s in input_sources(inputs)]) if opts.resume else {}
        started = not ray.is_initialized()
        if started:
            ray.init(address=ray_opts.address, num_cpus=ray_opts.num_cpus if ray_opts.address is None else None,
                     include_dashboard=False, log_to_driver=False)
        try:
            ray.data.DataContext.get_current().enable_progress_bars = ray_opts.progress
            ds = read_pages(inputs, opts.shard_size, frozenset(done), ray_opts.workers)
            rows = write_shards(extract_dataset(ds, opts, ray_opts), out, opts.fmt, opts.shard_size,
                                partitions=max(1, min(64, 2 * len(list(inputs)))))
        finally:
            if started:
                ray.shutdown()
        summary = _summary(rows, done, time.perf_counter() - start)
        _write_report(out, opts, summary)
    return summary


def _done_shards(out: Path, fmt: str, sources: list[str]) -> dict[str, int]:
    """The run's shards complete in OUT (a shard of one of its sources, `<source>-<5 digits>`): name -> rows."""
    suffix = COLUMNAR[fmt]
    done = {}
    for path in out.glob(f"*{suffix}"):
        name = path.name[: -len(suffix)]
        stem, _, number = name.rpartition("-")
        if stem in sources and len(number) == 5 and number.isdigit():
            done[name] = _rows_in(path)
    return done


def _rows_in(path: Path) -> int:
    if path.suffix == ".parquet":
        return int(require("pyarrow.parquet", "Parquet output").read_metadata(path).num_rows)
    return len(read_shard(path))


def _summary(rows: list[dict[str, Any]], done: dict[str, int], seconds: float) -> RaySummary:
    s = RaySummary(skipped=sum(done.values()), seconds=seconds)
    for r in sorted(rows, key=lambda r: r["shard"]):
        if r["rows"]:
            s.shards.append({"shard": r["shard"], "rows": r["rows"]})
        s.failed += r["failed"]
        s.ok += r["rows"] - r["failed"]
        s.low_confidence += r["low_confidence"]
        s.truncated += r["truncated"]
        s.empty += r["empty"]
        for attr, counts in (("reasons", s.reasons), ("filtered", s.filtered)):
            for k, n in json.loads(r[attr]).items():
                counts[k] = counts.get(k, 0) + n
    s.pages = s.ok + s.failed + s.skipped
    return s


def _write_report(out: Path, opts: BatchOptions, summary: RaySummary) -> None:
    """OUT/report.json of a --ray run: its totals and its shards (no per-page lines: the shards hold the pages)."""
    head = {"extractor": opts.name, "format": opts.fmt, "runner": "ray", "status": "complete",
            "this_run": asdict(summary),
            "pages_per_s": round((summary.ok + summary.failed) / summary.seconds, 3) if summary.seconds else None}
    with atomic_path(out / "report.json") as tmp:
        tmp.write_text(json.dumps(head, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
