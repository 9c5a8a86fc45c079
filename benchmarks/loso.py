"""Leave-one-source-out: every learned part trained without one source, evaluated on that source's test pages.

    python -m benchmarks.loso                                        # every fold; finished stages are kept
    python -m benchmarks.loso --folds cleanportaleval --parts gbt    # the trees alone, one fold
    python -m benchmarks.loso --report-only                          # runs/loso/generalization.md from what is done
    python -m benchmarks.loso --redo gbt ensemble shipped            # a new recipe for some stages, the rest kept

Per fold S (runs/loso/S/), with the recipe of configs/default.yaml (or --config) and only the other sources' pages,
less any page from a site of S's pages (data.exclude_sites_of=[S]: sites matched by registrable domain,
training/hosts.py; a page with no host left out too, as it cannot be shown to come from another site):
  1. model/    the block Transformer trained on the others' train pages, its epoch and decision rule chosen on
               the others' validation pages (the config's epochs, or --epochs);
  2. gbt/      the boosted trees (the config's gbt section), the same pages;
  3. ensemble/ the blend of the two and the heuristic's vote, weights and rule tuned on the others'
               validation pages (the grid of the ensemble section);
  4. eval-NAME.json  `bodyblocks evaluate`'s report of each extractor on S's test pages (data/splits): the fold's
               ensemble, model and gbt, the heuristic, trafilatura, readability-lxml and gne, and, for reference, the
               shipped ensemble (which was trained with S's training pages: not a LOSO figure). Each extraction is
               scored twice (evaluate's headline "both"): with the tool's own headline and byline put back where S's
               gold holds them (evaluate.scored_text), and its body alone (rows NAME:body).
No learned part of a fold sees a page of S, tuning included. daniel's Chinese pages are reported on their own.
`--hosts` writes runs/loso/hosts.json: per source, its pages with no host and how many of them are kept out.

Stage 3 is the validation-tuned recipe, which does worse on unseen sources than a blend chosen across folds: the
shipped ensemble's blend is chosen across the folds' models and trees instead, by benchmarks/loso_blend.py
(docs/GENERALIZATION.md).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments, write_report
from bodyblocks.config import Config, load_config
from bodyblocks.evaluation.evaluate import ALL, BODY_ONLY, EvalConfig, evaluate
from bodyblocks.loading.checkpoints import shipped
from bodyblocks.runtime.files import REPO_ROOT, write_atomic, write_json

SOURCES = ("wcxb-dev", "dragnet", "cleaneval-en", "l3s-gn1", "cleanportaleval", "daniel")  # labelled, full gold
PARTS = ("model", "gbt", "ensemble")
PEERS = ("heuristic", "trafilatura", "readability", "gne")
SHIPPED = "ensemble-shipped"  # the shipped default, trained with every source: a reference, not LOSO
METRICS = ("token_f1", "acc@0.90", "token_precision", "token_recall")
DEFAULT_CONFIG = REPO_ROOT / "configs" / "default.yaml"  # the shipped recipe


def fold_config(source: str, root: Path, fold: Path, epochs: int | None,
                overrides: list[str] | None = None, config: Path = DEFAULT_CONFIG) -> Config:
    """CONFIG (with `overrides`, KEY=VALUE, "{fold}" in a value standing for the source) and the other sources'
    pages only, less those of a site of the source's pages (data.exclude_sites_of)."""
    others = ",".join(s for s in SOURCES if s != source)
    return load_config(config, [
        f"data.exclude_sites_of=[{source}]",
        *(o.replace("{fold}", source) for o in overrides or []),
        f"data.root={root}", f"data.datasets=[{others}]",
        f"train.out_dir={fold / 'run'}", *([f"train.epochs={epochs}"] if epochs else []),
    ])


def host_report(root: Path) -> dict[str, Any]:
    """Per source: its pages, those with no url, those with no host at all (datasets.site_of: no url, no host its
    source names, no canonical link, og:url or <base>, no dominant link host) and of those the ones whose links name
    a domain (hosts.link_domains, which then joins the source's held-out domains); per fold: the other sources'
    train and val pages that the fold keeps out of training, for a host of the source and for having none."""
    from bodyblocks.training.datasets import read_dataset, site_of
    from bodyblocks.training.hosts import link_domains, registrable, source_domains
    from bodyblocks.training.splits import split_of

    pages: dict[str, list[tuple[str, str | None]]] = {}  # source -> (split, domain) of each page
    sources: dict[str, dict[str, int]] = {}
    for source in SOURCES:
        split = split_of(root / source)
        row = {"pages": 0, "no_url": 0, "no_host": 0, "no_host_linked": 0}
        pages[source] = []
        for page in read_dataset(root / source):
            domain = registrable(site_of(page))
            row["pages"] += 1
            row["no_url"] += not page.url
            if domain is None:
                row["no_host"] += 1
                row["no_host_linked"] += bool(link_domains(page.html))
            pages[source].append((split.get(page.id, "?"), domain))
        sources[source] = row
    folds = {}
    for source in SOURCES:
        held, _, _ = source_domains(root / source)
        kept_out = {"train_val_pages": 0, "host_of_source": 0, "no_host": 0}
        for other in SOURCES:
            for split, domain in pages[other] if other != source else ():
                if split in ("train", "val"):
                    kept_out["train_val_pages"] += 1
                    kept_out["no_host" if domain is None else "host_of_source"] += domain is None or domain in held
        folds[source] = kept_out
    return {"sources": sources, "folds": folds}


def host_table(hosts: dict[str, Any]) -> str:
    """hosts.json as a markdown table."""
    lines = ["| source | pages | no url | no host | of which links name a domain | fold's training pages (others' "
             "train + val) | kept out: a host of the source | kept out: no host |", "|---|" + "---|" * 7]
    for source in SOURCES:
        s, f = hosts["sources"][source], hosts["folds"][source]
        lines.append(f"| {source} | {s['pages']} | {s['no_url']} | {s['no_host']} | {s['no_host_linked']} | "
                     f"{f['train_val_pages']} | {f['host_of_source']} | {f['no_host']} |")
    return "\n".join(lines)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


REDO = (*PARTS, "shipped")


def redo_parts(cfg: Config, fold: Path, redo: tuple[str, ...]) -> None:
    """Make stages of a fold run again with today's recipe: the model's decision rule re-tuned (its weights
    kept: training it again is `rm -r FOLD/model`), the trees and the ensemble rebuilt, and their evaluations
    (`shipped`: the shipped ensemble's) redone."""
    import shutil

    if "model" in redo and (fold / "model" / "model.safetensors").exists():
        from bodyblocks.training.tune import retune

        log(f"{fold.name}: re-tuning the model's decision rule")
        retune(fold / "model", cfg.data)
    for part in ("gbt", "ensemble"):
        if part in redo and (fold / part).exists():
            shutil.rmtree(fold / part)
    for part in redo:
        (fold / f"eval-{SHIPPED if part == 'shipped' else part}.json").unlink(missing_ok=True)


def train_parts(cfg: Config, fold: Path, parts: tuple[str, ...]) -> None:
    """Stages 1-3 of a fold; a stage whose output exists is kept (a killed run resumes)."""
    if "model" in parts and not (fold / "model" / "model.safetensors").exists():
        from bodyblocks.training.loop import train

        log(f"{fold.name}: training the model ({cfg.train.epochs} epochs)")
        train(cfg, resume=(fold / "run" / "last" / "optimizer.safetensors").exists(), progress=False)
        (fold / "model").mkdir(parents=True, exist_ok=True)
        for name in ("config.json", "model.safetensors"):  # best/ by validation, as the shipped recipe
            (fold / "model" / name).write_bytes((fold / "run" / "best" / name).read_bytes())
    if "gbt" in parts and not (fold / "gbt" / "model.safetensors").exists():
        from bodyblocks.training.fit_trees import train_and_save

        log(f"{fold.name}: training the trees")
        train_and_save(cfg.data, fold / "gbt", cfg.gbt)
    if "ensemble" in parts and not (fold / "ensemble" / "config.json").exists():
        from bodyblocks.training.tune import make_ensemble

        log(f"{fold.name}: tuning the ensemble")
        make_ensemble(fold / "model", fold / "gbt", fold / "ensemble", cfg.data, cfg.ensemble)


def extractors_of(fold: Path, parts: tuple[str, ...]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Report name -> (extractor name, options) of everything evaluated on the fold's test pages."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for part in parts:
        torch_opts = {"device": "cpu", "threads": 1} if part != "gbt" else {}
        out[part] = (part, {"checkpoint": str(fold / part), **torch_opts})
    out.update({name: (name, {}) for name in PEERS})
    if shipped("ensemble") is not None:
        out[SHIPPED] = ("ensemble", {"device": "cpu", "threads": 1})
    return out


def evaluate_fold(source: str, root: Path, fold: Path, parts: tuple[str, ...], limit: int | None,
                  with_shipped: bool = True) -> None:
    """Stage 4: each extractor on the source's test pages, its report in eval-NAME.json (kept when present)."""
    for label, (name, opts) in extractors_of(fold, parts).items():
        if label == SHIPPED and not with_shipped:
            continue
        path = fold / f"eval-{label}.json"
        if path.exists():
            continue
        log(f"{source}: evaluating {label}")
        cfg = EvalConfig([str(root / source)], [name], split="test", limit=limit, workers=1,
                         extractor_opts={name: opts} if opts else {}, headline="both")
        report, _ = evaluate(cfg)
        write_json(path, {"summary": report["summary"], "selection": report["selection"],
                          "failures": len(report["failures"])})


def fold_rows(fold: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """label -> {"all": summary row, "zh": the Chinese pages' row when there are any} from the eval files; a file's
    rows scored on the body alone (evaluate.BODY_ONLY) under label + BODY_ONLY."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted(fold.glob("eval-*.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))["summary"]
        label = path.stem.removeprefix("eval-")
        for suffix in ("", BODY_ONLY):
            mine = [r for r in summary if r["dataset"] != ALL and r["extractor"].endswith(BODY_ONLY) == bool(suffix)]
            if not mine:
                continue
            rows = {"all": next(r for r in mine if r["lang"] == ALL)}
            zh = [r for r in mine if r["lang"] == "zh"]
            if zh:
                rows["zh"] = zh[0]
            out[label + suffix] = rows
    return out


def _cell(row: dict[str, Any] | None) -> str:
    if row is None or row.get("token_f1") is None:
        return "–"
    return f"{row['token_f1']:.3f} / {row['acc@0.90']:.3f}"


ORDER = tuple(x + suffix for x in ("ensemble", "ensemble-xs", "model", "gbt", "heuristic", "trafilatura",
                                    "readability", "gne", SHIPPED) for suffix in ("", BODY_ONLY))


def report(out: Path, doc: Path, epochs: int, note: str = "") -> dict[str, Any]:
    """The folds' report (runs/loso/generalization.md, .json): a table per fold and the mean over folds."""
    folds = {s: fold_rows(out / s) for s in SOURCES if (out / s).is_dir()}
    labels = [x for x in ORDER if any(x in rows for rows in folds.values())]
    columns = [(s, "all") for s in folds] + [("daniel", "zh")] * ("daniel" in folds)
    head = ["left-out source (its test pages)", *labels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for source, part in columns:
        name = f"{source}, Chinese only" if part == "zh" else source
        fold = folds[source]
        pages = next((fold[x][part]["pages"] for x in labels if part in fold.get(x, {})), 0)
        cells = [_cell(fold.get(x, {}).get(part)) for x in labels]
        lines.append(f"| {name} ({pages}) | " + " | ".join(cells) + " |")
    means: dict[str, dict[str, float]] = {}
    for x in labels:
        rows = [folds[s][x]["all"] for s in folds if x in folds[s]]
        if len(rows) == len(folds):  # a mean over every fold only
            means[x] = {m: sum(r[m] for r in rows) / len(rows) for m in METRICS}
    if means:
        lines.append("| **mean over folds** | " + " | ".join(_cell(means.get(x)) for x in labels) + " |")
    write_json(doc.with_suffix(".json"), {"epochs": epochs, "folds": folds, "means": means})
    where = "".join(f" {flag} {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}"
                    for flag, path, default in (("--out", out, REPO_ROOT / "runs" / "loso"),
                                                ("--doc", doc, REPO_ROOT / "runs" / "loso" / "generalization.md"))
                    if path.resolve() != default.resolve())
    text = [
        "# Generalization: leave-one-source-out",
        "",
        "Generated by `python -m benchmarks.loso` (see its docstring for the folds; this page: "
        f"`python -m benchmarks.loso --report-only --epochs {epochs}{where}`). Each learned part of a fold (the",
        f"Transformer, {epochs} epochs; the trees; the ensemble's weights and decision rule) is trained and tuned",
        "on the other sources only, then scored on the left-out source's test pages (data/splits) beside the",
        "heuristic and the peers on the same pages. `ensemble-shipped` is the shipped default, which was trained",
        "with every source's training pages: an in-source reference, not a LOSO figure. Each tool is scored with its",
        "own headline and byline put back where the left-out source's gold holds them (evaluate.scored_text), and",
        f"on its body alone (`NAME{BODY_ONLY}`).",
        *([note, ""] if note else [""]),
        "Token F1 / accuracy at Levenshtein ratio ≥ 0.9 (white space removed); pages in brackets.",
        "",
        *lines,
        "",
    ]
    write_atomic(doc, "\n".join(text))
    return means


def main() -> int:
    ap = arguments(__doc__, root=True, out=REPO_ROOT / "runs" / "loso", threads=1,
                   write=REPO_ROOT / "runs" / "loso" / "generalization.md", doc_flag="--doc")
    ap.add_argument("--folds", nargs="+", choices=SOURCES, default=list(SOURCES))
    ap.add_argument("--parts", nargs="*", choices=PARTS, default=list(PARTS),
                    help="learned parts to train and evaluate (the ensemble needs the model and the trees; "
                         "none: the peers and the heuristic alone)")
    ap.add_argument("--config", type=Path, default=DEFAULT_CONFIG,
                    help="the recipe of every fold (default configs/default.yaml, the shipped one)")
    ap.add_argument("--epochs", type=int, default=None,
                    help="the Transformer's epochs per fold (default: the config's)")
    ap.add_argument("--limit", type=int, default=None, help="at most N test pages per fold (evenly spread)")
    ap.add_argument("--report-only", action="store_true", help="write the doc from the finished folds")
    ap.add_argument("--note", default="", help="a paragraph added to the doc (how and when the folds were run)")
    ap.add_argument("--train-only", action="store_true",
                    help="stages 1-3 only (e.g. a second process training models while the first evaluates)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="a change to the config for every fold (an ablation, e.g. model.n_layers=1)")
    ap.add_argument("--no-shipped", action="store_true", help="leave the shipped ensemble's reference out")
    ap.add_argument("--redo", nargs="+", choices=REDO, default=[],
                    help="run these stages again (model: its rule re-tuned; gbt, ensemble: rebuilt; shipped: its "
                         "evaluation)")
    ap.add_argument("--section", metavar="FILE#SECTION",
                    help="also put the page (less its title) into that section of a manual page, e.g. "
                         "docs/GENERALIZATION.md#loso-peers")
    ap.add_argument("--hosts", action="store_true",
                    help="write OUT/hosts.json (each source's pages with no host, each fold's pages kept out) and stop")
    ap.add_argument("--wait-for-models", action="store_true",
                    help="let another process (--parts model --train-only) train each fold's model: wait for it")
    args = ap.parse_args()
    args.doc = Path(args.doc)
    if args.root is None:
        raise SystemExit("no datasets folder (set BODYBLOCKS_DATASETS or pass --root)")
    if args.hosts:
        hosts = host_report(args.root)
        write_json(args.out / "hosts.json", hosts)
        print(host_table(hosts))
        return 0
    parts = tuple(p for p in PARTS if p in args.parts)
    if "ensemble" in parts and not {"model", "gbt"} <= set(parts):
        raise SystemExit("--parts ensemble needs model and gbt too")
    if args.epochs is None:
        args.epochs = load_config(args.config).train.epochs
    if not args.report_only:
        import torch

        torch.set_num_threads(args.threads)
        for source in args.folds:
            fold = args.out / source
            while args.wait_for_models and not (fold / "model" / "model.safetensors").exists():
                time.sleep(30)
            cfg = fold_config(source, args.root, fold, args.epochs, args.overrides, args.config)
            if args.redo:
                redo_parts(cfg, fold, tuple(args.redo))
            train_parts(cfg, fold, parts)
            if not args.train_only:
                evaluate_fold(source, args.root, fold, parts, args.limit, not args.no_shipped)
                report(args.out, args.doc, args.epochs, args.note)
    means = report(args.out, args.doc, args.epochs, args.note)
    print(args.doc.read_text(encoding="utf-8"))
    if args.section:
        write_report(args.section, args.doc.read_text(encoding="utf-8"))
    print(json.dumps(means, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
