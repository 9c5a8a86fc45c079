"""Where a page's time goes in `bodyblocks extract` on CPU: segmentation, model inputs, forward pass, the rest.

    python benchmarks/profile_stages.py --pages 150

Same page sample as benchmarks/throughput.py, one process, one torch thread, pages read into memory first.
Prints ms/page per stage, and the time of segmenting and classifying the same pages on two threads at
once (the overlap `bodyblocks extract` uses by default) against one after the other.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(os.environ.get("BODYBLOCKS_DATASETS",
                                                                     REPO.parent / "shared" / "datasets")))
    ap.add_argument("--pages", type=int, default=150)
    ap.add_argument("--checkpoint", default=None)
    args = ap.parse_args()

    import torch
    from throughput import pick_pages

    from bodyblocks.decode import read_bytes
    from bodyblocks.model import collate, prepare_page
    from bodyblocks.predict import ModelExtractor
    from bodyblocks.segment import segment

    torch.set_num_threads(1)
    files = pick_pages(args.root, args.pages, Path(tempfile.mkdtemp(prefix="bb-profile-")))
    raw = [read_bytes(f) for f in files]
    ex = ModelExtractor(args.checkpoint, device="cpu")
    n = len(raw)

    def clock(fn) -> float:  # noqa: ANN001
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) / n * 1000

    docs = [segment(r) for r in raw]  # warm-up (imports, caches)
    seg = clock(lambda: [segment(r) for r in raw])
    inputs: list = []
    prep = clock(lambda: inputs.extend(prepare_page(d.blocks, ex.cfg) for d in docs))
    batches = [collate([i]) for i in inputs]
    with torch.inference_mode():
        fwd = clock(lambda: [ex.model(b) for b in batches])
    whole = clock(lambda: [ex.extract_documents([d]) for d in docs])
    blocks = sum(len(d.blocks) for d in docs) / n

    def overlapped() -> None:
        worker = threading.Thread(target=lambda: [ex.extract_documents([d]) for d in docs])
        worker.start()
        for r in raw:
            segment(r)
        worker.join()

    both = clock(overlapped)
    print(f"{n} pages, {blocks:.0f} blocks/page on average, ms/page:")
    print(f"  segment (decode + parse + walk)     {seg:6.1f}")
    print(f"  classify (inputs + forward + rule)  {whole:6.1f}")
    print("    of which, measured alone:")
    print(f"    model inputs (features, n-grams)  {prep:6.1f}")
    print(f"    forward pass (embed + Transformer){fwd:6.1f}")
    print(f"  one after the other                 {seg + whole:6.1f}")
    print(f"  on two threads at once              {both:6.1f}")


if __name__ == "__main__":
    main()
