"""Builds against the shipped ensemble on the sources' own test splits: token F1 / acc@0.9 per source, in one run.

    python -m benchmarks.build_compare --build default=runs/build-default --build small=runs/build-2x128 \
        --write docs/MODELS.md#build-compare

Each `--build NAME=DIR` is a folder that `bodyblocks build` wrote. Rows: the shipped ensemble; each build as built
(its blend and rule chosen on the validation pages); each build's model and trees under the shipped ensemble's
blend and rule (`NAME, shipped blend`: what the new parts are worth apart from the blend); each build's trees
alone (the boosted trees, the simple learner a Transformer must beat). Daniel's Chinese pages are a column of
their own (in daniel's figure too). The test pages only report: nothing here chooses a setting.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import write_report
from bodyblocks.evaluation.evaluate import ALL, EvalConfig, evaluate
from bodyblocks.loading.checkpoints import shipped

SOURCES = ("wcxb-dev", "dragnet", "cleaneval-en", "l3s-gn1", "cleanportaleval", "daniel")


def shipped_blend(build: Path, into: Path) -> Path:
    """An ensemble folder with the shipped ensemble's blend and rule over BUILD's model and trees."""
    source = shipped("ensemble")
    assert source is not None, "the shipped ensemble is missing"
    meta = json.loads((source / "config.json").read_text(encoding="utf-8"))
    meta.update(model=str((build / "model").resolve()), gbt=str((build / "gbt").resolve()))
    meta.pop("metrics", None)
    into.mkdir(parents=True, exist_ok=True)
    (into / "config.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return into


def scores(extractor: str, checkpoint: Path | None, sources: Sequence[str], split: str, workers: int,
           limit: int | None) -> dict[str, tuple[float, float]]:
    """(token F1, acc@0.9) per source, and daniel's Chinese pages as "daniel zh"."""
    opts = {extractor: {"checkpoint": str(checkpoint)}} if checkpoint else {}
    cfg = EvalConfig(list(sources), [extractor], split, limit, workers, extractor_opts=opts)
    report, _ = evaluate(cfg, progress=lambda msg: print(msg, file=sys.stderr), bar=False)
    out: dict[str, tuple[float, float]] = {}
    for row in report["summary"]:
        if row["dataset"] == ALL:
            continue
        name = row["dataset"] if row["lang"] == ALL else f"{row['dataset']} {row['lang']}"
        if row["lang"] in (ALL, "zh") and row.get("token_f1") is not None:
            out[name] = (float(row["token_f1"]), float(row["acc@0.90"]))
    return out


def table(rows: dict[str, dict[str, tuple[float, float]]], sources: Sequence[str]) -> str:
    """Markdown: a row per extractor, a column per source, daniel zh, and the mean over the sources."""
    cols = [*sources, *(["daniel zh"] if "daniel" in sources else [])]
    lines = ["| extractor | " + " | ".join(cols) + " | mean |", "|---|" + "---|" * (len(cols) + 1)]
    for name, got in rows.items():
        cells = [f"{got[c][0]:.4f} / {got[c][1]:.4f}" if c in got else "-" for c in cols]
        have = [got[s] for s in sources if s in got]
        mean = (sum(f for f, _ in have) / len(have), sum(a for _, a in have) / len(have)) if have else None
        lines.append(f"| {name} | " + " | ".join(cells) + (f" | {mean[0]:.4f} / {mean[1]:.4f} |" if mean else " | - |"))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", default=[], metavar="NAME=DIR", help="a build folder (repeatable)")
    ap.add_argument("--sources", nargs="+", default=list(SOURCES))
    ap.add_argument("--split", default="test")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="at most N pages a source (a quick look)")
    ap.add_argument("--write", default=None, metavar="FILE#SECTION", help="write the table there too")
    args = ap.parse_args(argv)
    builds: dict[str, Path] = {}
    for spec in args.build:
        name, _, folder = spec.partition("=")
        if not folder or not (Path(folder) / "config.json").is_file():
            ap.error(f"--build {spec}: NAME=DIR, DIR a folder that bodyblocks build wrote")
        builds[name] = Path(folder)
    rows: dict[str, dict[str, tuple[float, float]]] = {}
    run = lambda ex, ckpt: scores(ex, ckpt, args.sources, args.split, args.workers, args.limit)  # noqa: E731
    rows["shipped ensemble"] = run("ensemble", None)
    tmp = Path(tempfile.mkdtemp(prefix="build-compare-"))
    try:
        for name, folder in builds.items():
            rows[f"{name}, as built"] = run("ensemble", folder)
            rows[f"{name}, shipped blend"] = run("ensemble", shipped_blend(folder, tmp / name))
            rows[f"{name}, trees alone"] = run("gbt", folder / "gbt")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows["shipped trees alone"] = run("gbt", None)
    what: dict[str, Any] = {n: json.loads((f / "build.json").read_text(encoding="utf-8")).get("seconds")
                            for n, f in builds.items() if (f / "build.json").is_file()}
    command = "python -m benchmarks.build_compare " + " ".join(sys.argv[1:] if argv is None else argv)
    markdown = (f"Token F1 / acc@0.9 on the `{args.split}` split of each source. Command: `{command}`\n\n"
                + table(rows, args.sources)
                + "\n\nBuild seconds per stage (wall, on the machine that built it): "
                + "; ".join(f"{n}: {s}" for n, s in what.items()))
    print(markdown)
    if args.write:
        write_report(args.write, markdown, {"rows": rows, "seconds": what})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
