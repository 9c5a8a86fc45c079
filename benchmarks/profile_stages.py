"""Where a page's time goes in `bodyblocks extract` on CPU: segmentation, model inputs, forward pass, trees.

    python -m benchmarks.profile_stages --pages 300

Same page sample as benchmarks/throughput.py, one process, pages read into memory first. Prints ms/page per
stage: segmenting, classifying with the model alone (torch, with the usable cores; --threads to change) and
with the ensemble as `bodyblocks extract` runs it on a CPU (ONNX Runtime), and what the parts cost when
measured alone; and the forward pass one page at a time: torch eager and traced (inference/traced.py), alone
and while a second thread runs Python (the torch engine's staged path), and on ONNX Runtime on one thread.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bodyblocks.files import datasets_root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=datasets_root())
    ap.add_argument("--pages", type=int, default=150)
    ap.add_argument("--checkpoint", default=None, help="model checkpoint (default: the shipped one)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: the usable cores)")
    args = ap.parse_args()

    import torch

    from benchmarks.throughput import pick_pages
    from bodyblocks.batch import default_threads
    from bodyblocks.decode import read_bytes
    from bodyblocks.inference.checkpoints import load_extractor, shipped
    from bodyblocks.inference.model import collate, prepare_page
    from bodyblocks.segment import segment

    threads = args.threads or default_threads(1)
    files = pick_pages(args.root, args.pages, Path(tempfile.mkdtemp(prefix="bb-profile-")))
    raw = [read_bytes(f) for f in files]
    ex = load_extractor("model", args.checkpoint, device="cpu", threads=threads, engine="torch")
    scorer = ex.model  # the ModelScorer: .model the BlockClassifier, .single its traced one-page forward pass
    from bodyblocks.inference.checkpoints import choose_engine, resolve

    on_onnx = None  # the same model on ONNX Runtime (one thread), when the folder has its export
    if choose_engine(resolve(args.checkpoint or "model"), "auto", "cpu") == "onnx":
        on_onnx = load_extractor("model", args.checkpoint, device="cpu", engine="onnx")
    n = len(raw)

    def clock(fn) -> float:  # noqa: ANN001
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) / n * 1000

    docs = [segment(r) for r in raw]  # warm-up (imports, caches)
    seg = clock(lambda: [segment(r) for r in raw])
    inputs: list = []
    prep = clock(lambda: inputs.extend(prepare_page(d.blocks, scorer.cfg) for d in docs))
    batches = [collate([i]) for i in inputs]
    with torch.inference_mode():
        fwd = clock(lambda: [scorer.model(b) for b in batches])
    traced = clock(lambda: [scorer.single(b) for b in batches]) if scorer.single is not None else None
    onnx_fwd = clock(lambda: [on_onnx.model.page_probabilities(i) for i in inputs]) if on_onnx else None
    beside = _beside_busy_thread(clock, scorer, batches)
    whole = clock(lambda: [ex.extract_documents([d]) for d in docs])
    blocks = sum(len(d.blocks) for d in docs) / n
    print(f"{n} pages, {blocks:.0f} blocks/page on average, {threads} torch threads, ms/page:")
    print(f"  segment (decode + parse + walk)        {seg:6.1f}")
    print(f"  classify, model (inputs+forward+rule)  {whole:6.1f}")
    print(f"    model inputs (features, n-grams)     {prep:6.1f}")
    print(f"    forward pass (embed + Transformer)   {fwd:6.1f}")
    if traced is not None:
        print(f"    forward pass, traced (one page)      {traced:6.1f}")
    if onnx_fwd is not None:
        print(f"    forward pass, ONNX Runtime, 1 thread {onnx_fwd:6.1f}")
    for name, ms in beside.items():
        print(f"    forward pass, {name:6s} beside a busy Python thread (GIL) {ms:6.1f}")
    if shipped("ensemble") is not None and args.checkpoint is None:
        ens = load_extractor("ensemble", device="cpu")  # as bodyblocks extract runs it on a CPU (ONNX Runtime)
        pairs = list(zip(docs, inputs, strict=True))
        trees = clock(lambda: [ens.gbt.model.page_probabilities(d.blocks, i.features) for d, i in pairs])
        voted: list = []
        vote = clock(lambda: voted.extend(ens.page_segmenter(r) for r in raw))  # segment + the heuristic
        both = clock(lambda: [ens.extract_documents([d]) for d in voted])
        print(f"  segment + the heuristic's vote         {vote:6.1f}")
        print(f"  classify, ensemble (model+trees+vote, {ens.model.engine}) {both:6.1f}")
        print(f"    trees (their features and walk)      {trees:6.1f}")
        print(f"  segment + classify: model {seg + whole:.1f}, ensemble {vote + both:.1f} "
              f"(without the vote {seg + both:.1f})")
    else:
        print(f"  segment + classify: model {seg + whole:.1f}")


def _beside_busy_thread(clock, scorer, batches) -> dict[str, float]:  # noqa: ANN001
    """ms/page of the forward pass while another thread runs Python (as the batch runner's main thread does
    while it parses the next pages), eager and traced, at the batch runner's GIL switch interval."""
    import threading

    import torch

    from bodyblocks.inference.blocks import overlapping

    runs = {"eager": lambda: [scorer.model.probabilities(b) for b in batches]}
    if scorer.single is not None:
        runs["traced"] = lambda: [scorer.single(b) for b in batches]
    out = {}
    with overlapping():
        for name, run in runs.items():
            stop = threading.Event()

            def busy(stop: threading.Event = stop) -> None:
                while not stop.is_set():
                    sum(range(200))

            thread = threading.Thread(target=busy)
            thread.start()
            with torch.inference_mode():
                out[name] = clock(run)
            stop.set()
            thread.join()
    return out


if __name__ == "__main__":
    main()
