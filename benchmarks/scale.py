"""Pages/s of the Ray pipeline (bodyblocks extract --ray) with 1 and 2 CPU workers, CPU s/page per stage, and
what one Common Crawl snapshot would take on a cluster (docs/SCALE.md).

    python -m benchmarks.scale --pages 600 --write docs/SCALE.md#scale   # the measured part of the page

1. A WARC of dataset pages (round-robin over ../shared/datasets, read with training.datasets.read_dataset), one
   gzip member per record with its request record, as crawlers write them; made in a temporary folder.
2. CPU seconds per page of each stage, one process, the shipped ensemble on ONNX Runtime (one thread), the
   stages as the Ray pipeline splits them: WARC read + decode; segment (with the heuristic's vote) + the
   model's inputs and the trees (`prepare_pages`); the model (forward, blend, rule); the output row + Parquet.
3. Wall time and CPU time (every process of the run, from /proc: other work on a shared machine is not counted)
   of the single-process CLI (`--format parquet`, 1 and 2 workers) and of the Ray pipeline on a local Ray with
   2 CPUs (`--ray-workers` 1 and 2), each on the WARC and on its first --small pages (the difference: the rate
   once started); the Ray rows checked against the CLI's.
4. The cluster estimate: the 2-worker Ray run's CPU per page once started x 2.5 billion pages, over nodes of
   --node-cpus cores (assumptions printed with it).
No GPU figure is measured here: the GPU stage's is `benchmarks/throughput.py --gpu-xlmr` on a GPU machine.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import REPORTS, arguments, need_root, write_report
from bodyblocks.runtime.files import REPO_ROOT, write_json

SNAPSHOT_PAGES = 2_500_000_000  # HTML pages in one Common Crawl snapshot (a round figure)
GROUP = 16  # pages per prepare / model call, as a CPU model actor's batch (scale/pipeline.CPU_BATCH)


@dataclass
class Clock:
    """CPU seconds (this process) and wall seconds of what runs inside `with clock.run():`."""

    cpu: float = 0.0
    wall: float = 0.0

    @contextmanager
    def run(self) -> Iterator[None]:
        c, w = time.process_time(), time.perf_counter()
        try:
            yield
        finally:
            self.cpu += time.process_time() - c
            self.wall += time.perf_counter() - w


def make_warcs(root: Path, n: int, folder: Path, files: int) -> tuple[list[Path], dict[str, Any]]:
    """n dataset pages taken round-robin over the datasets, in `files` WARC files of consecutive pages (the
    pipeline is parallel across files, as a crawl's tens of thousands are); returns them and what they hold."""
    from bodyblocks.batch.warc import Response, write_warc
    from bodyblocks.training.datasets import read_dataset

    sets = sorted(p.name for p in root.iterdir() if (p / "pages.jsonl").exists())
    readers = {name: read_dataset(root / name) for name in sets}
    responses: list[Response] = []
    while len(responses) < n and readers:
        for name in list(readers):
            page = next(readers[name], None)
            if page is None:
                del readers[name]
                continue
            if page.meta.get("error") or not page.html:
                continue
            body = page.html if isinstance(page.html, bytes) else page.html.encode("utf-8")
            url = page.url or f"http://{name}.example/{page.id}"
            responses.append(Response(url, body, "text/html"))  # no charset: the page's own declarations decide
            if len(responses) >= n:
                break
    folder.mkdir(parents=True, exist_ok=True)
    per = -(-len(responses) // files)
    paths = [folder / f"part-{k:02d}.warc.gz" for k in range(-(-len(responses) // per))]
    for k, path in enumerate(paths):
        write_warc(path, responses[k * per : (k + 1) * per])
    html = sum(len(r.body) for r in responses)
    return paths, {"pages": len(responses), "files": len(paths), "datasets": sets,
                   "html_bytes_per_page": round(html / len(responses)),
                   "warc_bytes_per_page": round(sum(p.stat().st_size for p in paths) / len(responses))}


def stage_costs(warcs: list[Path], out: Path, warm: list[Path]) -> dict[str, Any]:
    """CPU and wall seconds per page of each stage (module docstring, 2.), in one process, after the same
    stages on the `warm` WARC (sessions opened, first calls made)."""
    _stages(warm, out / "warm")
    return _stages(warcs, out / "timed")


def _stages(warcs: list[Path], out: Path) -> dict[str, Any]:
    from bodyblocks.batch.columnar import ShardWriter
    from bodyblocks.batch.inputs import Job
    from bodyblocks.batch.outputs import page_row
    from bodyblocks.batch.warc import iter_warc
    from bodyblocks.errors import InputError
    from bodyblocks.loading.registry import get_extractor
    from bodyblocks.page.decode import decode_bytes

    extractor: Any = get_extractor("ensemble", device="cpu", engine="auto")
    clocks = {k: Clock() for k in ("read+decode", "segment", "features", "model", "output")}
    with clocks["read+decode"].run():
        items = [(i, decode_bytes(i.body, [i.charset] if i.charset else [])) for warc in warcs
                 for i in iter_warc(warc) if i.body is not None]
    docs, kept = [], []
    with clocks["segment"].run():
        for item, decoded in items:
            try:
                docs.append(extractor.page_segmenter(decoded.text))
                kept.append(item)
            except InputError:
                pass
    groups = range(0, len(docs), GROUP)
    with clocks["features"].run():
        parts = [p for k in groups for p in extractor.prepare_pages(docs[k : k + GROUP])]
    results = []
    with clocks["model"].run():
        for k in groups:
            prepared = extractor.prepared_from(docs[k : k + GROUP], parts[k : k + GROUP])
            results += extractor.finish(prepared, extractor.forward(prepared))
    with clocks["output"].run():
        shards = ShardWriter(out, "parquet")
        for n, (item, ex) in enumerate(zip(kept, results, strict=True)):
            job = Job(key=f"bench/{n:07d}", url=item.url, record_id=item.record_id, language=item.language)
            shards.add("bench", n, page_row(job, ex, None))
        shards.close()
    n = len(results)
    stages = {k: {"cpu_ms": round(1000 * c.cpu / n, 2), "wall_ms": round(1000 * c.wall / n, 2)}
              for k, c in clocks.items()}
    return {"pages": n, "stages": stages, "cpu_ms_total": round(sum(s["cpu_ms"] for s in stages.values()), 2)}


LOADS: list[float] = []  # the machine's 1-minute load average after each timed run (a shared machine)


def _tree_cpu(root: int) -> dict[tuple[int, str], float]:
    """CPU seconds (user + system) of process `root` and every process below it, by (pid, start time); Linux
    /proc, so that the other work on a shared machine is not counted."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # state, ppid, ..., utime (12th), stime, ..., starttime
        pid = int(entry)
        parent[pid] = int(fields[1])
        cpu[pid, fields[19]] = (int(fields[11]) + int(fields[12])) / tick
    below = {root}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in below and pid not in below:
                below.add(pid)
                grew = True
    return {key: seconds for key, seconds in cpu.items() if key[0] in below}


@contextmanager
def tree_clock(into: dict[str, float]) -> Iterator[None]:
    """Wall seconds and the CPU seconds of this process and all below it (the Ray processes, the CLI's
    workers) for what runs inside, sampled every 0.2 s (a process that ends keeps its last sample)."""
    import threading

    first, last = _tree_cpu(os.getpid()), {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            last.update(_tree_cpu(os.getpid()))

    thread = threading.Thread(target=sample, daemon=True)
    t = time.perf_counter()
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        last.update(_tree_cpu(os.getpid()))
        into["wall"] = time.perf_counter() - t
        into["cpu"] = sum(v - first.get(k, 0.0) for k, v in last.items())
        LOADS.append(os.getloadavg()[0])


def cli_run(warcs: list[Path], out: Path, workers: int) -> dict[str, float]:
    """Wall and CPU seconds of `bodyblocks extract WARC... --format parquet --workers N` in a fresh process."""
    cmd = [sys.executable, "-m", "bodyblocks", "extract", *map(str, warcs), "--out", str(out), "--format",
           "parquet", "--no-progress", "--workers", str(workers)]
    took: dict[str, float] = {}
    with tree_clock(took):
        subprocess.run(cmd, check=False, capture_output=True, cwd=REPO_ROOT)
    return took


def ray_runs(warcs: dict[str, list[Path]], tmp: Path, cpus: int) -> dict[tuple[str, int], dict[str, float]]:
    """Wall and CPU seconds of run_ray on a local Ray of `cpus` CPUs with 1 and 2 CPU-stage workers, per WARC
    (after a warm-up run: imports, worker processes); the CPU of every Ray process, the driver's included."""
    import ray

    from bodyblocks.batch.runner import BatchOptions
    from bodyblocks.scale.pipeline import RayOptions, run_ray

    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    try:
        opts = BatchOptions(extractor="ensemble", fmt="parquet")
        run_ray(warcs["warm"], tmp / "ray-warm", opts, RayOptions(workers=2, progress=False))
        took: dict[tuple[str, int], dict[str, float]] = {}
        for size in ("small", "large"):
            for workers in (1, 2):
                took[size, workers] = {}
                with tree_clock(took[size, workers]):
                    run_ray(warcs[size], tmp / f"ray-{size}-{workers}", opts,
                            RayOptions(workers=workers, progress=False))
        return took
    finally:
        ray.shutdown()


def differing(a: Path, b: Path) -> int:
    """Pages whose row differs between two output folders' shards."""
    from bodyblocks.batch.columnar import read_shard

    rows = [{r["id"]: r for p in sorted(d.glob("*.parquet")) for r in read_shard(p)} for d in (a, b)]
    return sum(rows[0].get(k) != rows[1].get(k) for k in rows[0].keys() | rows[1].keys())


def estimate(cpu_ms: float, efficiency: float, node_cpus: int, nodes: list[int]) -> list[dict[str, Any]]:
    """Hours for one snapshot on each cluster size: the stages' core-seconds / (cores x efficiency), and at an
    efficiency of 1 (the stages' cost alone)."""
    core_hours = SNAPSHOT_PAGES * cpu_ms / 1000 / 3600
    return [{"nodes": n, "cores": n * node_cpus, "hours": round(core_hours / (n * node_cpus * efficiency), 1),
             "hours_at_full_use": round(core_hours / (n * node_cpus), 1)} for n in nodes]


def _load_note(r: dict[str, Any]) -> str:
    """What the machine's load says about the wall figures (the runs' CPU time is this benchmark's own)."""
    lo, hi = r["load_average"]["min"], r["load_average"]["max"]
    cpus = os.cpu_count() or 1
    ray1, ray2 = r["runs"]["Ray, 1 CPU worker"], r["runs"]["Ray, 2 CPU workers"]
    ray_gain = ray2["pages_per_s"] / ray1["pages_per_s"] if ray1["pages_per_s"] else 0.0
    if hi > 1.5 * cpus:
        head = (f"This machine was shared with other work while it ran: its 1-minute load average after the runs was "
                f"{lo:.1f} to {hi:.1f} on {cpus} cores, so the wall times and pages/s are slower than an idle "
                "machine's.")
    else:
        head = (f"The machine ran nothing else (1-minute load average {lo:.1f} to {hi:.1f} on {cpus} cores, this "
                "benchmark's own processes).")
    return (head + f" A second Ray CPU worker gives {ray_gain:.2f}x the pages/s of one here: on {cpus} cores Ray's "
            "own processes (driver, raylet, object store, the model actor) take the CPU a second worker would use, "
            "as the CPU per page of the Ray runs against the stages' cost shows. Ray's gain is across nodes, where "
            "every node's cores run CPU-stage tasks; the CPU milliseconds count only this benchmark's processes and "
            "are what the estimate rests on.")


def report(r: dict[str, Any]) -> str:
    """docs/SCALE.md's measured part (its `scale` section) from the measurements."""
    s, w, c = r["stages"], r["warc"], r["cluster"]
    rows = "\n".join(f"| {k} | {v['cpu_ms']:.2f} | {v['wall_ms']:.2f} |" for k, v in s["stages"].items())
    runs = "\n".join(f"| {name} | {v['wall_s']:.1f} | {v['pages_per_s']:.1f} | {v['marginal_pages_per_s']:.1f} | "
                     f"{v['cpu_ms_per_page']:.1f} | {v['marginal_cpu_ms_per_page']:.1f} |"
                     for name, v in r["runs"].items())
    sizes = "\n".join(f"| {e['nodes']} | {e['cores']:,} | {e['hours']:,} | {e['hours_at_full_use']:,} |"
                      for e in c["table"])
    small = r["small_pages"]
    return f"""# At scale: WARC in, Parquet out, Ray Data across nodes

Every number from here to [the datatrove step](#in-a-datatrove-pipeline) comes from `{r['command']}`
({r['machine']}); `runs/reports/scale.json` holds them all.

## What was measured

{w['pages']} pages from ../shared/datasets ({', '.join(w['datasets'])}; round-robin) in {w['files']} WARC
files, one gzip member per record with its request record: {w['html_bytes_per_page']:,} bytes of HTML and
{w['warc_bytes_per_page']:,} bytes of WARC per page. The shipped ensemble on ONNX Runtime (one thread), no GPU.

**CPU milliseconds per page, by stage** (one process, the stages as the Ray pipeline splits them):

| stage | CPU ms/page | wall ms/page |
|---|---|---|
{rows}
| **total** | **{s['cpu_ms_total']:.2f}** | |

`read+decode` is the WARC reader (gzip member by member, warcio's parsing) and the decoder; `segment` the parse,
the walk and the heuristic's vote; `features` the model's inputs and the boosted trees (`prepare_pages`: the
end of the CPU stage); `model` the Transformer's forward pass, the blend and the decision rule (the model
actor); `output` the row, its Markdown and the Parquet write.

**The whole set of WARCs**, single-process CLI (`--format parquet --workers N`, a fresh process) and Ray (`--ray-workers
N` on a local Ray of 2 CPUs started before the clock, after a warm-up run; planning, actor start-up and the
shuffle by shard included; a WARC file is read and prepared by one task, so the files give the parallelism).
Each also ran on the same number of files holding the first {small} pages: "once started" is the rate of the
difference, (pages - {small}) / (time - time on {small} pages), which leaves out the fixed start-up cost. CPU is
that of every process of the run (the CLI's workers; Ray's driver, raylet, workers and actors), read from /proc:

| run | wall s | pages/s | pages/s once started | CPU ms/page | CPU ms/page once started |
|---|---|---|---|---|---|
{runs}

The Ray runs' rows differ from the single-process CLI's on {r['differing']} of {w['pages']} pages.

{_load_note(r)}

## One Common Crawl snapshot

The Ray pipeline with 2 workers spent **{c['ray_cpu_ms']:.1f} CPU ms per page once started**, all its processes
counted; the pages' own work (the stages above) is {s['cpu_ms_total']:.2f} ms of it, an efficiency of
{c['efficiency']:.2f} (the rest: serialising rows between stages, the object store, the shuffle by shard,
Ray's processes). Assumptions, each of which scales the answer in proportion:
- {SNAPSHOT_PAGES:,} HTML pages, each costing what these dataset pages cost; Common Crawl's pages are of other
  sizes and kinds: scale by their mean HTML size against {w['html_bytes_per_page']:,} bytes here;
- CPU nodes of {c['node_cpus']} cores, every core busy with the pipeline (Ray schedules CPU-stage tasks on all
  of them) at the per-page CPU cost measured here; the model on ONNX Runtime in CPU actors (the shipped
  model is small: it needs no GPU);
- the WARC files read from storage at least as fast as the cores consume them ({w['warc_bytes_per_page']:,}
  bytes per page here: {c['input_tb']:.0f} TB for the snapshot, about
  {c['input_tb'] * 1e12 / (c['core_hours'] * 3600) / 1e6 * c['node_cpus']:.0f} MB/s per {c['node_cpus']}-core
  node);
- nothing for retries, stragglers, the Ray head or idle time between jobs.

{SNAPSHOT_PAGES:,} pages x {c['ray_cpu_ms']:.1f} ms = **{c['core_hours']:,} core-hours**:

| nodes | cores | hours | hours at the stages' cost alone |
|---|---|---|---|
{sizes}

The last column is the bound that the pages' own work sets ({s['cpu_ms_total']:.2f} ms/page): no Ray overhead.

## The GPU stage

**No GPU figure was measured in this session: no GPU was available.** On a cluster with GPUs the model stage
runs as one actor per GPU on the torch engine in bf16, {r['gpu_batch']} pages per forward pass
(`scale/pipeline.py`). For the shipped model that stage is {s['stages']['model']['cpu_ms']:.2f} of the
{s['cpu_ms_total']:.2f} CPU ms per page here, so a GPU would take at most that share off the CPU nodes: the CPU
stage (decode, segment, features) dominates. A GPU matters for models that read XLM-R vectors; their
model-stage figure comes from `python -m benchmarks.throughput --pages 2000 --extractor model --gpu-xlmr
--device cuda --workers 14 --batch-size 64 --no-peer` on a GPU machine, and has not been measured.
"""


def main() -> None:
    ap = arguments(__doc__, root=True, pages=600, write=True)
    ap.add_argument("--small", type=int, default=100, help="pages of the small WARCs (the runs' fixed cost)")
    ap.add_argument("--files", type=int, default=4, help="WARC files the pages are split into")
    ap.add_argument("--node-cpus", type=int, default=64, help="cores per node of the cluster estimate")
    args = ap.parse_args()
    need_root(args.root, "benchmarks.scale")
    tmp = Path(tempfile.mkdtemp(prefix="bb-scale-"))
    # the large WARCs are measured; the small ones (their first --small pages) give the runs' fixed cost, and the
    # difference their rate per page once started (a cluster's runs last hours: the fixed cost is nothing there)
    warcs: dict[str, list[Path]] = {}
    warcs["large"], info = make_warcs(args.root, args.pages, tmp / "large", args.files)
    warcs["small"], small_info = make_warcs(args.root, args.small, tmp / "small", args.files)
    warcs["warm"], _ = make_warcs(args.root, 16, tmp / "warm", 2)
    small = small_info["pages"]
    print(f"WARC: {info}", flush=True)
    stages = stage_costs(warcs["large"], tmp / "stages", warcs["warm"])
    print(f"stages: {stages}", flush=True)
    took = {(f"CLI, {w} worker{'s' * (w > 1)}", size): cli_run(warcs[size], tmp / f"cli-{size}-{w}", w)
            for size in ("small", "large") for w in (1, 2)}
    print(f"CLI: {took}", flush=True)
    took |= {(f"Ray, {w} CPU worker{'s' * (w > 1)}", size): t for (size, w), t in ray_runs(warcs, tmp, 2).items()}
    print(f"runs: {took}", flush=True)
    diff = differing(tmp / "cli-large-2", tmp / "ray-large-2")
    n, extra = info["pages"], info["pages"] - small
    rates = {}
    for name in dict.fromkeys(name for name, _ in took):
        large, little = took[name, "large"], took[name, "small"]
        rates[name] = {"wall_s": round(large["wall"], 2), "pages_per_s": round(n / large["wall"], 2),
                       "small_wall_s": round(little["wall"], 2),
                       "marginal_pages_per_s": round(extra / max(large["wall"] - little["wall"], 1e-9), 2),
                       "cpu_ms_per_page": round(1000 * large["cpu"] / n, 2),
                       "marginal_cpu_ms_per_page": round(1000 * (large["cpu"] - little["cpu"]) / extra, 2)}
    ray_ms = rates["Ray, 2 CPU workers"]["marginal_cpu_ms_per_page"]
    efficiency = min(1.0, stages["cpu_ms_total"] / ray_ms)  # the pages' own work over all the Ray run's CPU
    cluster = {"node_cpus": args.node_cpus, "efficiency": round(efficiency, 3), "ray_cpu_ms": ray_ms,
               "core_hours": round(SNAPSHOT_PAGES * ray_ms / 1000 / 3600),
               "input_tb": SNAPSHOT_PAGES * info["warc_bytes_per_page"] / 1e12,
               "table": estimate(stages["cpu_ms_total"], efficiency, args.node_cpus, [10, 100, 500, 1000])}
    from bodyblocks.scale.pipeline import GPU_BATCH

    result = {"command": "python -m benchmarks.scale " + " ".join(sys.argv[1:]),
              "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, no GPU",
              "warc": info, "small_pages": small, "stages": stages, "runs": rates, "differing": diff,
              "cluster": cluster, "gpu": None, "gpu_batch": GPU_BATCH,
              "load_average": {"min": min(LOADS), "max": max(LOADS)}}
    print(json.dumps(result, indent=1))
    write_json(REPORTS / "scale.json", result)
    write_report(args.write, report(result))


if __name__ == "__main__":
    main()
