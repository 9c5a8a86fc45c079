"""e5-small's vectors of what one leave-one-source-out fold's noisy-student run needs, into the encoder's disk cache.

    python -m benchmarks.teacher_embed wcxb-dev --max-pages 250 --tokens 32

`bodyblocks data embed` takes whole datasets (567 k distinct texts for all eight: hours on one shared CPU thread).
This takes, in order: the train and validation pages of the other five labelled sources (at most --max-pages per
dataset and split, none from a site of the fold's source: what the fold's teacher trains on), the pages to label
(trafilatura-eval, gne-pages) and the fold's test pages (the teacher's own figure). A rerun resumes.
"""

from __future__ import annotations

import sys

from benchmarks.common import arguments
from benchmarks.loso import SOURCES
from bodyblocks.config import DataConfig, load_config
from bodyblocks.files import REPO_ROOT


def main() -> int:
    ap = arguments(__doc__, threads=1)
    ap.add_argument("fold", choices=SOURCES)
    ap.add_argument("--max-pages", type=int, default=250, help="per dataset and split (0: all)")
    ap.add_argument("--tokens", type=int, default=32, help="e5's max_length")
    ap.add_argument("--label", nargs="*", default=["trafilatura-eval", "gne-pages"], help="the pages to label")
    args = ap.parse_args()
    import torch

    from bodyblocks.encoders import make_encoder
    from bodyblocks.training.cache import load_cached
    from bodyblocks.training.data import load_pages
    from bodyblocks.training.embed import cached_frozen_encoder, embed_texts

    torch.set_num_threads(args.threads)
    cfg = load_config(REPO_ROOT / "configs" / "e5.yaml", [f"model.encoder.max_length={args.tokens}",
                                                          "model.encoder.precision=bf16"])
    encoder = make_encoder(cached_frozen_encoder(cfg, "configs/e5.yaml"), device="cpu")
    others = [s for s in SOURCES if s != args.fold]
    splits = load_pages(DataConfig(datasets=others, max_pages=args.max_pages, exclude_sites_of=[args.fold]))
    stages = [("teacher train/val", [cp for k in ("train", "val") for cp in splits[k]]),
              ("pages to label", [cp for s in args.label for cp in load_cached(s)]),
              (f"{args.fold} test", load_pages(DataConfig(datasets=[args.fold]))["test"])]
    for name, pages in stages:
        texts = [b.text for cp in pages for b in cp.blocks]
        print(f"{name}: {len(pages)} pages, {len(texts)} blocks", flush=True)
        done = embed_texts(encoder, texts, chunk=10_000, progress=lambda m: print(m, flush=True))
        print(f"{name}: {done.distinct} distinct, {done.computed} computed in {done.seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
