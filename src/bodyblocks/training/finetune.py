"""Fine-tuning on a user's own labelled pages: `bodyblocks finetune DATASET --from CHECKPOINT --out DIR`.

Stages (each writes into OUT and is skipped when its output is there, so a rerun resumes):
  1. pages: the dataset's annotated pages (annotate/store.py; block labels taken as they are) are split by
     site into a held-out part (`held_out` of the pages, never trained or tuned on) and the rest, whose sites
     are split again into training and validation pages; a share of the base model's own training and
     validation pages is mixed in (`mix` pages of each), and the user's training pages are repeated until
     they make up `user_share` of the training pages. The split is written to OUT/split.json;
  2. model: the Transformer continues from the base ensemble's model weights (training/loop.py with
     train.init), a few epochs at a low learning rate, best epoch by validation per-page F1, shipped (fp16)
     and exported for ONNX Runtime into OUT/model;
  3. trees: the boosted trees retrained on the same pages into OUT/gbt (and exported);
  4. blend: the blend and decision rule tuned on the validation pages (OUT/tuned), the user's validation
     pages repeated so that they weigh as much as the base model's; then the user's headline convention: the
     rule's headline step (keep the block that matches the page's title) is on when it scores higher on the
     user's validation pages;
  5. choice: the tuned ensemble replaces the base one only when its mean token F1 on the validation pages
     (the mean of the user's pages' and the base pages' means) is higher; OUT/ensemble points at the one
     kept (OUT/choice.json says which, with both scores);
  6. before and after: the base ensemble and OUT/ensemble on the held-out pages (token F1, accuracy at
     Levenshtein ratio 0.7 / 0.8 / 0.9), printed and written to OUT/finetune.json (and the tuned one's
     figures too when the base was kept).
"""

from __future__ import annotations

import json
import math
import random
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.classify.blend import Blend
from bodyblocks.config import Config, DataConfig, EnsembleConfig, GbtConfig, ModelConfig, TrainConfig, from_dict
from bodyblocks.metrics import score_page, summarize
from bodyblocks.page.segment import segment
from bodyblocks.runtime.files import write_json
from bodyblocks.training.cache import CachedPage, process_page
from bodyblocks.training.data import load_pages, recorded_data
from bodyblocks.training.datasets import annotated_pages
from bodyblocks.types import Document, Page

STAGES = ("pages", "model", "trees", "ensemble", "choose", "report")
SplitAdjuster = Callable[[dict[str, Any], list[CachedPage], dict[str, list[CachedPage]]], dict[str, Any]]


def split_sites(pages: Sequence[CachedPage], share: float, seed: int, kinds: dict[str, str | None]
                ) -> tuple[list[CachedPage], list[CachedPage]]:
    """(rest, held-out): whole sites, about `share` of the pages held out, for each kind of site apart (so that
    news and government sites are on both sides; a site's kind is the one most of its pages have). Sites are
    taken in a seeded order; each goes to the held-out side while that stays below its target."""
    rest: list[CachedPage] = []
    held: list[CachedPage] = []
    by_site: dict[str, list[CachedPage]] = {}
    for cp in pages:
        by_site.setdefault(cp.site, []).append(cp)
    site_kind = {site: Counter(kinds.get(cp.id) or "" for cp in group).most_common(1)[0][0]
                 for site, group in by_site.items()}  # a site is one kind: the kind most of its pages have
    for kind in sorted(set(site_kind.values())):
        sites = {site: group for site, group in by_site.items() if site_kind[site] == kind}
        order = sorted(sites, key=lambda s: (zlib.crc32(f"{seed}|{s}".encode()), s))
        target = share * sum(len(g) for g in sites.values())
        n_held = 0
        for k, site in enumerate(order):
            group = sites[site]
            # the first site goes to the held-out side when a side must get one; then fill it to its target
            if n_held + len(group) / 2 <= target or (k == len(order) - 1 and n_held == 0 and len(order) > 1):
                held.extend(group)
                n_held += len(group)
            else:
                rest.extend(group)
    return rest, held


def user_pages(dataset: str | Path, labels: str | Path | None) -> tuple[list[CachedPage], dict[str, Page]]:
    """The dataset's annotated pages, segmented and labelled from their annotations (pages with no body
    block are kept for the before/after figures but not trained on)."""
    cached: list[CachedPage] = []
    raw: dict[str, Page] = {}
    if labels is not None and not Path(labels).is_dir():
        raise ValueError(f"--labels {labels}: no such folder")
    unfit = 0
    for page, ann in annotated_pages(dataset, labels):
        cp = process_page(page)
        if cp.error:
            continue
        if cp.method != "blocks":  # the segmenter's blocks moved since the labels were made
            unfit += 1
            continue
        cp.meta["kind"] = ann.kind
        cached.append(cp)
        raw[page.id] = page
    if unfit:
        print(f"bodyblocks finetune: {unfit} annotated pages left out: their labels no longer fit the segmenter's "
              "blocks (open them in bodyblocks annotate and save them again)", file=sys.stderr)
    if not cached:
        raise ValueError(f"{dataset}: no annotated page marked done (label some with `bodyblocks annotate`)")
    return cached, raw


def _sample(pages: Sequence[CachedPage], n: int, rng: random.Random) -> list[CachedPage]:
    return list(pages) if n >= len(pages) else rng.sample(list(pages), n)


def repeats(base_train: int, train: int, base_val: int, val: int, user_share: float) -> tuple[int, int]:
    """How often the user's training pages are repeated (to make up `user_share` of the training pages) and
    the user's validation pages (to weigh as much as the base pages: each part's score is a mean over pages)."""
    repeat = 1
    if base_train and train and user_share > 0:
        repeat = max(1, math.ceil(user_share * base_train / ((1 - user_share) * train)))
    return repeat, max(1, round(base_val / val)) if val and base_val else 1


def make_split(dataset: str | Path, labels: str | Path | None, pages: list[CachedPage],
               base: dict[str, list[CachedPage]], *, held_out: float, mix: int, user_share: float, seed: int
               ) -> dict[str, Any]:
    """Stage 1: the pages of every part, as ids (what OUT/split.json records), from the user's pages
    (user_pages) and the base model's (load_pages)."""
    kinds = {cp.id: cp.meta.get("kind") for cp in pages}
    trainable = [cp for cp in pages if any(cp.labels)]
    rest, held = split_sites(pages, held_out, seed, kinds)
    held_ids = {cp.id for cp in held}
    rest = [cp for cp in rest if cp.id not in held_ids and any(cp.labels)]
    fit, val = split_sites(rest, 0.25, seed + 1, kinds)  # a quarter of the rest's sites for validation
    if not fit:
        raise ValueError(f"{dataset}: {len(trainable)} labelled pages with body text leave none to train on")
    if not val:
        print("bodyblocks finetune: too few sites to keep some of yours for validation: the model, the blend and "
              "the choice are tuned on the base model's pages alone", file=sys.stderr)
    if sum(cp.site.startswith("page:") for cp in pages) > len(pages) // 2:
        print("bodyblocks finetune: most pages have no URL or canonical link, so each is its own site: pages of "
              "one site may be on both sides of the split", file=sys.stderr)
    rng = random.Random(seed)
    own = Path(dataset).resolve().name
    sites = {cp.site for cp in pages}
    if any(cp.dataset == own for part in base.values() for cp in part):
        print(f"bodyblocks finetune: the base model's data includes the dataset {own!r}: its pages are left out of "
              "the mix, but the base model may have been trained on them, so 'before' is not a held-out figure",
              file=sys.stderr)
    # none of the user's pages or sites in the mix (held-out pages least of all)
    allowed = {part: [cp for cp in base[part] if cp.dataset != own and cp.site not in sites]
               for part in ("train", "val")}
    mixed_train = _sample(allowed["train"], mix, rng)
    mixed_val = _sample(allowed["val"], max(1, mix // 3), rng)
    repeat, val_repeat = repeats(len(mixed_train), len(fit), len(mixed_val), len(val), user_share)
    return {
        "dataset": str(Path(dataset).resolve()), "labels": str(Path(labels).resolve()) if labels else None,
        "seed": seed, "held_out": [cp.id for cp in held], "train": [cp.id for cp in fit],
        "val": [cp.id for cp in val], "repeat": repeat, "val_repeat": val_repeat,
        "sites": {part: sorted({cp.site for cp in group}) for part, group in
                  (("held_out", held), ("train", fit), ("val", val))},
        "kinds": kinds, "base_train": [[cp.dataset, cp.id] for cp in mixed_train],
        "base_val": [[cp.dataset, cp.id] for cp in mixed_val],
    }


def validation(parts: dict[str, Any]) -> list[CachedPage]:
    """The validation pages: the base model's, then the user's repeated so that both weigh alike."""
    return parts["base_val"] + parts["val"] * parts["val_repeat"]


def validation_score(folder: Path, parts: dict[str, Any], base_data: DataConfig) -> dict[str, float]:
    """An ensemble's mean token F1 on the user's validation pages and on the base pages (their gold text),
    and their mean: what decides whether the fine-tuned ensemble replaces the base one."""
    from bodyblocks.loading.plan import load
    from bodyblocks.training.annotations import derived_gold
    from bodyblocks.training.tune import validation_html

    ex = load(folder)
    html = validation_html(parts["base_val"], base_data) if parts["base_val"] else {}
    user = [score_page(derived_gold(cp.blocks, cp.labels), ex.extract(parts["raw"][cp.id].html).text).token_f1
            for cp in parts["val"]]
    base = [score_page(cp.gold, ex.extract(html[(cp.dataset, cp.id)]).text).token_f1 for cp in parts["base_val"]]
    user_f1 = float(np.mean([f for f in user if f is not None])) if user else 0.0
    base_f1 = float(np.mean([f for f in base if f is not None])) if base else user_f1
    return {"user_val_f1": user_f1, "base_val_f1": base_f1, "score": (user_f1 + base_f1) / 2}


def _resolve_split(split: dict[str, Any], pages: list[CachedPage], raw: dict[str, Page],
                   base: dict[str, list[CachedPage]]) -> dict[str, Any]:
    """The split's ids as pages again: user pages by part, base pages, the raw user pages."""
    by_id = {cp.id: cp for cp in pages}
    base_by_key = {(cp.dataset, cp.id): cp for part in base.values() for cp in part}
    return {
        "train": [by_id[i] for i in split["train"]], "val": [by_id[i] for i in split["val"]],
        "held_out": [by_id[i] for i in split["held_out"]],
        "base_train": [base_by_key[tuple(k)] for k in split["base_train"]],
        "base_val": [base_by_key[tuple(k)] for k in split["base_val"]], "raw": raw,
        "val_repeat": split.get("val_repeat", 1),
    }


def _model_config(folder: Path) -> ModelConfig:
    from bodyblocks.loading.checkpoints import read_meta

    return from_dict(ModelConfig, read_meta(folder)["model"], prefix="model.")


def train_model(parts: dict[str, Any], base_model: Path, out: Path, train: TrainConfig, repeat: int,
                progress: bool) -> Path:
    """Stage 2: continue the base model's training; OUT/model is the best epoch, shipped and exported."""
    from bodyblocks.training.loop import train as train_loop
    from bodyblocks.training.ship import ship_model

    splits = {"train": parts["base_train"] + parts["train"] * repeat, "val": validation(parts), "test": []}
    steps = math.ceil(len(splits["train"]) / train.batch_pages) * train.epochs
    warmup = max(1, min(train.warmup_steps, steps // 10))  # a few dozen pages make a few steps: warm up briefly
    cfg = Config(model=_model_config(base_model), train=replace(train, out_dir=str(out / "run"),
                                                                 init=str(base_model), warmup_steps=warmup))
    train_loop(cfg, resume=(out / "run" / "last").is_dir(), progress=progress, splits=splits)
    ship_model(out / "run" / "best", out / "model", check_documents(parts))
    return out / "model"


def check_documents(parts: dict[str, Any]) -> list[Document]:
    """The pages the ONNX exports are checked on: the user's pages, segmented."""
    return [segment(page.html) for page in parts["raw"].values()]


def train_trees(parts: dict[str, Any], base_gbt: Path, out: Path, repeat: int) -> Path:
    """Stage 3: the trees on the same pages, with the base trees' settings."""
    from bodyblocks.loading.checkpoints import read_meta
    from bodyblocks.training.export import export_trees
    from bodyblocks.training.fit_trees import train_gbt

    cfg = from_dict(GbtConfig, read_meta(base_gbt)["gbt"], prefix="gbt.")
    model = train_gbt(parts["base_train"] + parts["train"] * repeat, validation(parts), cfg)
    model.save(out / "gbt", extra={"finetune": {"base": str(base_gbt)}})
    export_trees(out / "gbt", check_documents(parts))
    return out / "gbt"


def _votes(user: Sequence[CachedPage], base: Sequence[CachedPage], raw: dict[str, Page], base_data: DataConfig
           ) -> list[np.ndarray]:
    """The heuristic's vote on the base pages (HTML read from their datasets), then on the user's pages."""
    from bodyblocks.extraction.segmenting import vote_on_blocks
    from bodyblocks.training.tune import validation_html

    html = validation_html(base, base_data) if base else {}
    sources = [html[(cp.dataset, cp.id)] for cp in base] + [raw[cp.id].html for cp in user]
    return [vote_on_blocks(f"{cp.dataset}/{cp.id}", [b.text for b in cp.blocks], src)
            for cp, src in zip([*base, *user], sources, strict=True)]


def tune_blend(parts: dict[str, Any], model: Path, gbt: Path, folder: Path, base_data: DataConfig,
               grid: EnsembleConfig) -> Path:
    """Stage 4: the ensemble's blend and rule, tuned on the validation pages."""
    from bodyblocks.training.tune import choose_blend, gbt_probabilities, model_probabilities, write_ensemble_folder

    val = validation(parts)
    votes = _votes(parts["val"], parts["base_val"], parts["raw"], base_data)
    votes = votes[: len(parts["base_val"])] + votes[len(parts["base_val"]):] * parts["val_repeat"]
    p_model, p_gbt = model_probabilities(model, val), gbt_probabilities(gbt, val)
    chosen = choose_blend(val, p_model, p_gbt, votes, grid)
    chosen.pop("scores")
    metrics = {"val_page_f1": chosen.pop("val_page_f1"),
               "val_page_f1_without_container": chosen.pop("without_container"), "val_pages": len(val)}
    mine = slice(len(parts["base_val"]), len(parts["base_val"]) + len(parts["val"]))  # the user's pages, once
    chosen["headline"], metrics["headline"] = headline_convention(
        parts["val"], Blend(chosen["weight"], chosen["heuristic"])(p_model[mine], p_gbt[mine], votes[mine]), chosen)
    return write_ensemble_folder(folder, model, gbt, {**chosen, "metrics": metrics})


def headline_convention(pages: Sequence[CachedPage], probs: Sequence[np.ndarray], rule: dict[str, Any]
                        ) -> tuple[bool, dict[str, float]]:
    """Whether the user's labels count the headline as body: the decision rule's headline step (decision.py step 4:
    keep the block that matches the page's title) is turned on when it raises the mean per-page F1 of the
    tuned rule on the user's validation pages. Returns the choice and both scores."""
    from bodyblocks.training.tune import decision_f1

    scores = {str(on).lower(): decision_f1(pages, probs, rule["threshold"], rule["rescue"], rule["container"], on)
              for on in (False, True)}
    return scores["true"] > scores["false"] + 1e-9, scores


def before_after(parts: dict[str, Any], base: Path, new: Path) -> dict[str, Any]:
    """Stage 5: the base and the new ensemble on the held-out pages, against the gold their labels make."""
    from bodyblocks.loading.plan import load
    from bodyblocks.training.annotations import derived_gold

    held = parts["held_out"]
    out: dict[str, Any] = {"pages": len(held), "ids": [cp.id for cp in held]}
    for name, folder in (("before", base), ("after", new)):
        ex = load(folder)
        scores, by_kind = [], {}
        for cp in held:
            gold = derived_gold(cp.blocks, cp.labels)
            s = score_page(gold, ex.extract(parts["raw"][cp.id].html).text)
            scores.append(s)
            by_kind.setdefault(cp.meta.get("kind") or "unknown", []).append(s)
        out[name] = _figures(summarize(scores))
        out[name]["by_kind"] = {k: _figures(summarize(v)) for k, v in sorted(by_kind.items())}
    return out


def _figures(summary: dict[str, Any]) -> dict[str, Any]:
    keep = ("pages", "scored", "token_f1", "token_precision", "token_recall", "line_recall", "mean_ratio",
            "acc@0.70", "acc@0.80", "acc@0.90")
    return {k: summary.get(k) for k in keep}


def finetune(dataset: str | Path, out: str | Path, *, base: str | Path | None = None, labels: str | Path | None = None,
             held_out: float = 0.5, mix: int = 300, user_share: float = 0.3, epochs: int = 4, lr: float = 1e-4,
             seed: int = 0, progress: bool = True, say: Callable[[str], None] = print,
             adjust_split: SplitAdjuster | None = None) -> dict[str, Any]:
    """Fine-tune the ensemble at `base` (default: the shipped one) on a dataset's annotated pages; module
    docstring. Returns what OUT/finetune.json holds.

    `adjust_split(split, pages, base_pages)` changes the split of stage 1 before it is written (the variants
    of benchmarks/finetune_gne.py); its name is one of the run's options, so that a resume is the same run.
    """
    from tqdm import tqdm

    from bodyblocks.loading.checkpoints import read_ensemble, resolve
    from bodyblocks.training.tune import write_ensemble_folder

    if not 0.0 < held_out < 1.0 or not 0.0 <= user_share < 1.0 or mix < 0:
        raise ValueError("held_out must be in (0, 1), user_share in [0, 1) and mix >= 0")
    base_folder = resolve(base or "ensemble")
    meta = read_ensemble(base_folder)
    base_model, base_gbt = Path(meta["model_path"]).resolve(), Path(meta["gbt_path"]).resolve()
    from bodyblocks.loading.checkpoints import read_meta

    base_data = recorded_data(read_meta(base_model))
    options = {"dataset": str(Path(dataset).resolve()), "labels": str(Path(labels).resolve()) if labels else None,
               "base": str(base_folder.resolve()), "held_out": held_out, "mix": mix, "user_share": user_share,
               "epochs": epochs, "lr": lr, "seed": seed}
    if adjust_split is not None:
        options["adjust_split"] = adjust_split.__name__
    out = Path(out)
    state_path = out / "stages.json"
    state = json.loads(state_path.read_text(encoding="utf-8")) if state_path.is_file() else None
    if state is not None and state.get("options") != options:
        before = state.get("options", {})
        changed = sorted(k for k in {*options, *before} if before.get(k) != options.get(k))
        raise ValueError(f"{out} holds a fine-tuning run with other options ({', '.join(changed)}): give another "
                         "--out, or remove it to start again")
    if state is None and out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty and holds no fine-tuning run: give another --out")
    state = state or {"options": options, "done": []}
    out.mkdir(parents=True, exist_ok=True)

    def done(stage: str) -> bool:
        return stage in state["done"]

    def finished(stage: str) -> None:  # the stage's outputs are complete; every later stage is to be made again
        state["done"] = [s for s in STAGES[: STAGES.index(stage)] if s in state["done"]] + [stage]
        write_json(state_path, state)

    train_cfg = TrainConfig(epochs=epochs, lr=lr, warmup_steps=20, patience=2, select="f1", seed=seed, batch_pages=16)
    bar = tqdm(total=len(STAGES), desc="finetune", unit="stage", disable=not progress)
    split_path = out / "split.json"
    # read once for the split and its pages (a resumed run's options are checked to be this run's, above)
    pages, raw = user_pages(dataset, labels)
    base_pages = load_pages(base_data) if mix else {"train": [], "val": []}
    if not done("pages"):
        split = make_split(dataset, labels, pages, base_pages, held_out=held_out, mix=mix, user_share=user_share,
                           seed=seed)
        if adjust_split is not None:
            split = adjust_split(split, pages, base_pages)
        write_json(split_path, split)
        finished("pages")
    split = json.loads(split_path.read_text(encoding="utf-8"))
    parts = _resolve_split(split, pages, raw, base_pages)
    say(f"pages: {len(parts['train'])} to train on (x{split['repeat']}), {len(parts['val'])} to validate, "
        f"{len(parts['held_out'])} held out; {len(parts['base_train'])} + {len(parts['base_val'])} of the base "
        "model's own pages mixed in")
    bar.update()
    model = out / "model"
    if not done("model"):
        train_model(parts, base_model, out, train_cfg, split["repeat"], progress)
        finished("model")
    bar.update()
    gbt = out / "gbt"
    if not done("trees"):
        train_trees(parts, base_gbt, out, split["repeat"])
        finished("trees")
    bar.update()
    tuned = out / "tuned"
    if not done("ensemble"):
        tune_blend(parts, model, gbt, tuned, base_data, EnsembleConfig())
        finished("ensemble")
    bar.update()
    choice_path = out / "choice.json"
    ens = out / "ensemble"
    if not done("choose"):
        choice = {"base": validation_score(base_folder, parts, base_data),
                  "tuned": validation_score(tuned, parts, base_data)}
        choice["kept"] = "tuned" if choice["tuned"]["score"] > choice["base"]["score"] else "base"
        write_json(choice_path, choice)
        source = tuned if choice["kept"] == "tuned" else base_folder
        settings = read_ensemble(source)
        parts_of = (settings.pop("model_path"), settings.pop("gbt_path"))
        for key in ("model", "gbt", "kind", "format_version"):
            settings.pop(key)
        write_ensemble_folder(ens, *parts_of, settings)
        finished("choose")
    choice = json.loads(choice_path.read_text(encoding="utf-8"))
    say(f"validation (token F1, your pages / the base model's pages): base {choice['base']['user_val_f1']:.3f} / "
        f"{choice['base']['base_val_f1']:.3f}, fine-tuned {choice['tuned']['user_val_f1']:.3f} / "
        f"{choice['tuned']['base_val_f1']:.3f}: "
        + ("the fine-tuned ensemble is kept" if choice["kept"] == "tuned" else
           "no better than the base, which is kept (OUT/ensemble points at it; OUT/tuned is the fine-tuned one)"))
    bar.update()
    report = {"base": str(base_folder), "out": str(ens), "split": str(split_path), "choice": choice,
              "held_out": before_after(parts, base_folder, ens)}
    if choice["kept"] == "base":
        report["held_out_tuned"] = before_after(parts, base_folder, tuned)
    write_json(out / "finetune.json", report)
    finished("report")
    bar.update()
    bar.close()
    say(format_report(report["held_out"]))
    return report


def format_report(res: dict[str, Any]) -> str:
    """The before / after table of the held-out pages (markdown)."""
    rows = [f"held-out pages: {res['pages']}", "",
            "| held-out pages | model | token F1 | acc@0.7 | acc@0.8 | acc@0.9 |", "|---|---|---|---|---|---|"]
    kinds = sorted(set(res["before"]["by_kind"]) | set(res["after"]["by_kind"]))
    for group in ["all", *kinds]:
        for name in ("before", "after"):
            f = res[name] if group == "all" else res[name]["by_kind"].get(group)
            if not f:
                continue
            rows.append(f"| {group} ({f['pages']}) | {name} | {f['token_f1'] or 0:.3f} | {f['acc@0.70'] or 0:.3f} | "
                        f"{f['acc@0.80'] or 0:.3f} | {f['acc@0.90'] or 0:.3f} |")
    return "\n".join(rows)
