"""bodyblocks finetune: the site split, training from the shipped weights, the rebuilt trees and ensemble, the
before/after report, resuming; on a synthetic corpus labelled through the annotation store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from bodyblocks.annotate.store import AnnotationStore  # noqa: E402
from bodyblocks.loading.checkpoints import SHIPPED  # noqa: E402
from bodyblocks.page.segment import segment  # noqa: E402
from bodyblocks.training.cache import CachedPage  # noqa: E402
from bodyblocks.training.finetune import finetune, repeats, split_sites  # noqa: E402
from bodyblocks.training.labels import align_blocks  # noqa: E402
from bodyblocks.training.synth import generate_corpus  # noqa: E402


def _labelled_corpus(folder: Path, pages: int) -> Path:
    """A synthetic corpus whose pages are labelled in FOLDER/annotations from their gold (as an annotator would
    mark them), kinds alternating news / government by site."""
    generate_corpus(folder, pages=pages, seed=3)
    store = AnnotationStore(folder)
    for page_id in store.ids():
        page = store.page(page_id)
        blocks = segment(page.html).blocks
        labels = align_blocks(blocks, page.gold).labels
        site = json.loads(store.entry(page_id).record["note"])["site"]
        kind = "government" if sum(map(ord, site)) % 3 == 0 else "news"
        store.save(page_id, blocks, labels, done=True, kind=kind)
    return folder


def _cp(pid: str, site: str) -> CachedPage:
    return CachedPage(id=pid, dataset="d", lang="zh", source_split=None, site=site, title="", blocks=[], labels=[],
                      scores=[], gold=None)


def test_split_sites_keeps_sites_whole_and_holds_out_about_the_share() -> None:
    pages = [_cp(f"p{i}", f"s{i % 7}") for i in range(40)]
    kinds = {cp.id: ("government" if i % 4 == 0 else "news") for i, cp in enumerate(pages)}
    rest, held = split_sites(pages, 0.5, seed=0, kinds=kinds)
    assert len(rest) + len(held) == 40 and {c.id for c in rest}.isdisjoint({c.id for c in held})
    by_kind = {k: [c for c in held if kinds[c.id] == k] for k in ("news", "government")}
    assert all(by_kind.values())  # both kinds on the held-out side
    for kind in ("news", "government"):
        sites_held = {c.site for c in held if kinds[c.id] == kind}
        sites_rest = {c.site for c in rest if kinds[c.id] == kind}
        assert sites_held.isdisjoint(sites_rest)
    assert 12 <= len(held) <= 28
    assert [c.id for c in split_sites(pages, 0.5, 0, kinds)[1]] == [c.id for c in held]  # deterministic
    # a site whose pages have two kinds is still on one side
    mixed = [_cp(f"m{i}", "site-a") for i in range(5)] + [_cp(f"n{i}", f"s{i}") for i in range(6)]
    kinds = {cp.id: ("government" if cp.id == "m0" else "news") for cp in mixed}
    for seed in range(8):
        rest, held = split_sites(mixed, 0.5, seed, kinds)
        assert not ({c.site for c in rest} & {c.site for c in held})


def test_finetune_end_to_end_and_resume(tmp_path: Path) -> None:
    data = _labelled_corpus(tmp_path / "mine", 24)
    out = tmp_path / "ft"
    lines: list[str] = []
    report = finetune(data, out, mix=0, epochs=1, held_out=0.4, progress=False, say=lines.append)
    split = json.loads((out / "split.json").read_text())
    assert set(split["held_out"]).isdisjoint(split["train"] + split["val"])
    assert set(split["sites"]["held_out"]).isdisjoint(split["sites"]["train"])
    assert split["train"] and split["val"] and split["held_out"]
    for part in ("model", "gbt"):
        assert (out / part / "model.safetensors").is_file()
    assert (out / "model" / "embed.onnx").is_file() and (out / "gbt" / "trees.onnx").is_file()
    ens = json.loads((out / "ensemble" / "config.json").read_text())
    choice = json.loads((out / "choice.json").read_text())
    assert choice["kept"] in ("tuned", "base") and report["choice"] == choice
    kept_model = (out / "model") if choice["kept"] == "tuned" else SHIPPED / "default"
    assert ens["kind"] == "ensemble" and (out / "ensemble" / ens["model"]).resolve() == kept_model.resolve()
    assert (choice["kept"] == "tuned") == (choice["tuned"]["score"] > choice["base"]["score"])
    tuned_meta = json.loads((out / "tuned" / "config.json").read_text())  # the user's headline convention, chosen
    scores = tuned_meta["metrics"]["headline"]  # on their validation pages
    assert tuned_meta["headline"] == (scores["true"] > scores["false"] + 1e-9)
    held = report["held_out"]
    assert held["pages"] == len(split["held_out"])
    for name in ("before", "after"):
        assert 0.0 <= held[name]["token_f1"] <= 1.0 and held[name]["pages"] == held["pages"]
    assert "| all (" in lines[-1] and "before" in lines[-1] and "after" in lines[-1]
    # trained from the shipped weights: the run's first epoch starts there, so the weights moved but stay close
    import bodyblocks

    shipped = bodyblocks.load("ensemble", engine="onnx")
    tuned = bodyblocks.load(out / "tuned", engine="onnx")
    page = (data / "html" / f"{split['held_out'][0]}.html.gz").read_bytes()
    p0, p1 = shipped.extract(page).probabilities, tuned.extract(page).probabilities
    assert p0 != p1 and len(p0) == len(p1)
    # a rerun resumes: nothing is trained again, the report is the same
    stamp = (out / "model" / "model.safetensors").stat().st_mtime_ns
    again = finetune(data, out, mix=0, epochs=1, held_out=0.4, progress=False, say=lambda _: None)
    assert (out / "model" / "model.safetensors").stat().st_mtime_ns == stamp
    assert again["held_out"]["after"] == held["after"]


def test_a_run_folder_is_not_reused_with_other_options(tmp_path: Path) -> None:
    data = _labelled_corpus(tmp_path / "mine", 12)
    out = tmp_path / "ft"
    (out / "stages.json").parent.mkdir()
    (out / "stages.json").write_text(json.dumps({"options": {"dataset": str(data), "seed": 5}, "done": ["pages"]}))
    with pytest.raises(ValueError, match="other options"):
        finetune(data, out, mix=0, epochs=1, progress=False, say=lambda _: None)
    other = tmp_path / "busy"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty"):
        finetune(data, other, mix=0, epochs=1, progress=False, say=lambda _: None)


def test_finetune_needs_annotated_pages(tmp_path: Path) -> None:
    generate_corpus(tmp_path / "bare", pages=4, seed=1)
    with pytest.raises(ValueError, match="no annotated page"):
        finetune(tmp_path / "bare", tmp_path / "ft", mix=0, epochs=1, progress=False, say=lambda _: None)


def test_init_refuses_another_model_config(tmp_path: Path) -> None:
    from bodyblocks.classify.model import BlockClassifier
    from bodyblocks.config import ModelConfig
    from bodyblocks.loading.checkpoints import SHIPPED
    from bodyblocks.training.loop import init_from

    small = BlockClassifier(ModelConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64))
    with pytest.raises(ValueError, match="another model config"):
        init_from(small, SHIPPED / "default")


def test_repeats_make_up_the_user_share_and_weigh_validation_alike() -> None:
    assert repeats(300, 22, 100, 8, 0.3) == (6, 12)  # 22 x 6 = 132 of 432 training pages: >= 0.3
    assert repeats(0, 22, 0, 8, 0.3) == (1, 1)  # no mix: the user's pages once
    assert repeats(300, 22, 100, 0, 0.0) == (1, 1)


def test_an_adjusted_split_is_the_one_written_and_is_part_of_the_run(tmp_path: Path) -> None:
    data = _labelled_corpus(tmp_path / "mine", 16)
    out = tmp_path / "ft"

    def first_held_out_page_trained(split: dict, pages: list, base: dict) -> dict:
        moved = split["held_out"][0]
        return {**split, "train": split["train"] + [moved], "held_out": split["held_out"][1:]}

    report = finetune(data, out, mix=0, epochs=1, held_out=0.4, progress=False, say=lambda _: None,
                      adjust_split=first_held_out_page_trained)
    split = json.loads((out / "split.json").read_text())
    assert split["train"][-1] not in split["held_out"] and report["held_out"]["ids"] == split["held_out"]
    options = json.loads((out / "stages.json").read_text())["options"]
    assert options["adjust_split"] == "first_held_out_page_trained"
    with pytest.raises(ValueError, match="adjust_split"):  # the same folder without it is another run
        finetune(data, out, mix=0, epochs=1, held_out=0.4, progress=False, say=lambda _: None)
