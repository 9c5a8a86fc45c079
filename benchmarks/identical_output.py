"""Does a change keep the default extractor's output? Dump it on dataset pages, then compare two dumps.

    python -m benchmarks.identical_output dump before.jsonl [--pages 1000]   # on the old code
    python -m benchmarks.identical_output dump after.jsonl                   # on the new code
    python -m benchmarks.identical_output compare before.jsonl after.jsonl

The old code: a tree of it first on PYTHONPATH, e.g. `git archive REV src checkpoints | tar -x -C /tmp/old`
(its checkpoints beside its src, where it looks for them), then, from this repository's root,
`PYTHONPATH=/tmp/old/src python -m benchmarks.identical_output dump before.jsonl --root ../shared/datasets`
(--root, or $BODYBLOCKS_DATASETS: a version from before bodyblocks.runtime.files.datasets_root knows no default).

Pages: every k-th record of each dataset under the datasets root (k chosen so that about --pages pages are
taken), in a stable order. Each page goes through both user paths: the Python API (`bodyblocks.extract`)
and the command line (`bodyblocks extract DIR --format json`, one process, its defaults). A dump line holds,
per page and path, the body text, the title, the flags and P(body) of every block; `compare` reports the
pages whose text differs and the largest |ΔP| over all blocks, and exits 1 unless both are zero.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import arguments


def _records(folder: Path) -> list[dict[str, Any]]:
    with open(folder / "pages.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def sample_pages(root: Path, pages: int) -> list[tuple[str, Path]]:
    """(name, html file) of about `pages` pages spread evenly over every dataset under root (read here, not
    through the package, so that one script checks any two versions of it)."""
    folders = sorted(p for p in root.iterdir() if (p / "pages.jsonl").is_file())
    records = [(folder, rec) for folder in folders for rec in _records(folder) if rec.get("html")]
    step = max(1, len(records) // pages)
    return [(f"{folder.name}__{rec['id']}".replace("/", "_"), folder / rec["html"])
            for folder, rec in records[::step][:pages]]


def _api(html: Path) -> dict[str, Any]:
    import bodyblocks

    data = html.read_bytes()
    ex = bodyblocks.extract(gzip.decompress(data) if html.name.endswith(".gz") else data)
    return {"text": ex.text, "title": ex.title, "no_body": ex.no_body, "low_confidence": ex.low_confidence,
            "p": ex.probabilities}


def _cli(pages: list[tuple[str, Path]]) -> dict[str, dict[str, Any]]:
    """The command line's JSON output of every page, by name."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "in", Path(tmp) / "out"
        src.mkdir()
        for name, html in pages:
            # copied, not linked: `bodyblocks extract` refuses a link that leads out of its input
            shutil.copyfile(html, src / (name + ".html.gz"))
        cmd = ["bodyblocks", "extract", str(src), "--out", str(out), "--format", "json", "--no-progress"]
        subprocess.run(cmd, check=False)
        found = {}
        for name, _ in pages:
            path = out / (name + ".json")
            if path.exists():
                rec = json.loads(path.read_text(encoding="utf-8"))
                found[name] = {"text": rec["text"], "title": rec["title"], "no_body": rec["no_body"],
                               "low_confidence": rec["low_confidence"],
                               "p": [b["p_body"] for b in rec.get("blocks", [])]}
        return found


def default_root() -> Path | None:
    """bodyblocks.runtime.files.datasets_root(); with a version of the package from before it: $BODYBLOCKS_DATASETS."""
    try:
        from bodyblocks.runtime.files import datasets_root
    except ImportError:
        env = os.environ.get("BODYBLOCKS_DATASETS")
        return Path(env) if env else None
    return datasets_root()


def dump(path: Path, pages: int, root: Path | None = None) -> None:
    root = root or default_root()
    if root is None or not root.is_dir():
        raise SystemExit(f"no datasets folder at {root} (set BODYBLOCKS_DATASETS or pass --root)")
    chosen = sample_pages(root, pages)
    cli = _cli(chosen)
    with open(path, "w", encoding="utf-8") as fh:
        for name, html in chosen:
            try:
                api: dict[str, Any] | None = _api(html)
            except ValueError as exc:  # InputError: a page the extractor refuses, the same way each time
                api = {"error": f"{type(exc).__name__}: {exc}"}
            fh.write(json.dumps({"page": name, "api": api, "cli": cli.get(name)}, ensure_ascii=False) + "\n")
    print(f"{len(chosen)} pages ({len(cli)} through the CLI) -> {path}")


def _read(path: Path) -> dict[str, dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return {rec["page"]: rec for rec in map(json.loads, fh)}


def compare(a: Path, b: Path) -> int:
    old, new = _read(a), _read(b)
    if old.keys() != new.keys():
        print(f"different pages: {len(old.keys() ^ new.keys())} in one dump only")
        return 1
    text_diff, dp, blocks = [], 0.0, 0
    for name in old:
        for path in ("api", "cli"):
            x, y = old[name][path], new[name][path]
            if (x is None) != (y is None) or (x and {k: v for k, v in x.items() if k != "p"}
                                                != {k: v for k, v in y.items() if k != "p"}):
                text_diff.append(f"{path}:{name}")
                continue
            if x and "p" in x:
                if len(x["p"] or []) != len(y["p"] or []):
                    text_diff.append(f"{path}:{name} (block count)")
                    continue
                blocks += len(x["p"] or [])
                dp = max([dp, *(abs(p - q) for p, q in zip(x["p"] or [], y["p"] or [], strict=True))])
    print(f"{len(old)} pages x 2 paths: {len(text_diff)} differ in text, title or flags; "
          f"{blocks} block probabilities, max |dP| = {dp:.3g}")
    for item in text_diff[:20]:
        print("  differs:", item)
    return 0 if not text_diff and dp == 0.0 else 1


def main() -> int:
    ap = arguments(__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--pages", type=int, default=1000)
    d.add_argument("--root", type=Path, default=None,
                   help="datasets root (default: bodyblocks.runtime.files.datasets_root)")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.command == "dump":
        dump(args.out, args.pages, args.root)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
