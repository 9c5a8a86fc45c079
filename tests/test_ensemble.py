"""The ensemble of the block Transformer and the boosted trees: folder, tuning, extractor, batching, CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from bodyblocks.baselines.heuristic import HeuristicExtractor, heuristic_text
from bodyblocks.baselines.pruning import body_text
from bodyblocks.batch import BatchOptions, run_batch, stem_of
from bodyblocks.classify.blend import Blend
from bodyblocks.cli import main
from bodyblocks.config import EnsembleConfig, GbtConfig, load_config
from bodyblocks.extraction import extractor as blocks_module
from bodyblocks.extraction.segmenting import segment_page
from bodyblocks.extraction.vote import VOTE, heuristic_vote
from bodyblocks.loading.checkpoints import load_extractor, read_ensemble, shipped
from bodyblocks.loading.options import ExtractOptions
from bodyblocks.loading.registry import get_extractor
from bodyblocks.metrics import levenshtein_ratio
from bodyblocks.page.segment import segment, segment_tree
from bodyblocks.training.fit_trees import train_and_save
from bodyblocks.training.loop import train
from bodyblocks.training.synth import generate_corpus
from bodyblocks.training.tune import make_ensemble

WEIGHTS, HEURISTIC_WEIGHTS = EnsembleConfig().weights, EnsembleConfig().vote_weights

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(corpus root, model checkpoint, gbt checkpoint) trained on one synthetic corpus."""
    root = tmp_path_factory.mktemp("ens")
    generate_corpus(root / "synth", pages=40, seed=5)
    data = [f"data.root={root}", "data.datasets=[synth]", f"data.cache_dir={root / 'cache'}", "data.max_pages=0"]
    cfg = load_config(CONFIGS / "debug.yaml", [*data, f"train.out_dir={root / 'run'}", "train.max_steps=0",
                                               "train.epochs=3", "train.lr=3e-3"])
    train(cfg, progress=False)
    train_and_save(cfg.data, root / "gbt", GbtConfig(max_iter=30, min_samples_leaf=5, n_iter_no_change=0))
    return root, root / "run" / "best", root / "gbt"


def test_blend_is_the_weighted_mean() -> None:
    a, b = [np.array([1.0, 0.0]), np.zeros(0)], [np.array([0.0, 0.5]), np.zeros(0)]
    out = Blend(0.3)(a, b)
    assert np.allclose(out[0], [0.3, 0.35]) and out[1].shape == (0,) and out[0].dtype == np.float32
    votes = [np.array([0.0, 1.0]), np.zeros(0)]
    out = Blend(0.5, 0.2)(a, b, votes)  # 0.5 model + 0.2 vote + 0.3 trees
    assert np.allclose(out[0], [0.5, 0.2 + 0.15]) and out[1].shape == (0,)
    assert Blend(1.0)(a, None) == a and Blend(0.0)(None, b) == b  # a part alone is returned as it is
    with pytest.raises(ValueError, match="model \\+ vote <= 1"):
        Blend(0.8, 0.3)


def test_the_vote_marks_the_blocks_whose_text_is_in_the_heuristics_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    html = ("<html><body><nav><a href='/'>Home</a> <a href='/a'>Shop all</a></nav><div class='grid'>"
            + "".join(f"<div><h3>Trail boot model {i}</h3><div>$1{i}0.00</div><p>A sturdy leather boot, size "
                      f"{i}, with a waterproof lining.<br>Rubber sole, lugged for grip</p></div>" for i in range(6))
            + "</div><footer>Copyright 2026 Example Outfitters</footer></body></html>")
    doc = segment(html)
    answer = HeuristicExtractor().extract(html).text
    vote = heuristic_vote(doc.blocks, answer)
    texts = {b.text: v for b, v in zip(doc.blocks, vote, strict=True)}
    two_lines = "A sturdy leather boot, size 3, with a waterproof lining.\nRubber sole, lugged for grip"
    assert texts["Trail boot model 3"] == 1.0 and texts[two_lines] == 1.0
    assert texts["$130.00"] == 0.0  # the heuristic keeps no line under 10 characters, so it does not vote for it
    assert texts["Home Shop all"] == 0.0 and texts["Copyright 2026 Example Outfitters"] == 0.0
    assert np.array_equal(segment_page(html, voting=True).extra[VOTE], vote)  # the heuristic on the segmenter's tree
    deep = "<html><body>" + "<div>" * 3000 + "<p>Deep paragraph of body text.</p>" + "</div>" * 3000 + "</body></html>"
    deep_doc, tree = segment_tree(deep)
    assert tree is None  # BeautifulSoup parsed it: the heuristic parses the page itself
    deep_vote = segment_page(deep, voting=True).extra[VOTE]
    assert deep_vote.tolist() == heuristic_vote(deep_doc.blocks, heuristic_text(deep)).tolist() and deep_vote.any()
    # a control character in text the heuristic moves: lxml refuses it, so the heuristic parses the page itself
    vt = ("<html><body><div><nav>Home</nav>\x0b Body text of the article, long enough to keep.<p>More body "
          "text in a paragraph of its own here.</p></div></body></html>")
    with pytest.raises(ValueError, match="XML compatible"):
        body_text(segment_tree(vt)[1])
    vt_vote = segment_page(vt, voting=True).extra[VOTE]
    assert vt_vote.tolist() == heuristic_vote(segment(vt).blocks, heuristic_text(vt)).tolist() and vt_vote.any()
    assert not heuristic_vote(doc.blocks, "").any()
    monkeypatch.setattr("bodyblocks.extraction.vote.VOTE_SEARCH_LIMIT", 0)  # a huge page: whole lines only
    lines = {b.text: v for b, v in zip(doc.blocks, heuristic_vote(doc.blocks, answer), strict=True)}
    assert lines["Trail boot model 3"] == 1.0 and lines[two_lines] == 0.0


def test_make_ensemble_tunes_weights_and_rule_and_the_extractor_blends(parts: tuple[Path, Path, Path],
                                                                       tmp_path: Path) -> None:
    root, model, gbt = parts
    result = make_ensemble(model, gbt, tmp_path / "ens")
    meta = read_ensemble(tmp_path / "ens")
    assert meta["weight"] in WEIGHTS and meta["weight"] == result["weight"]
    assert meta["heuristic"] in HEURISTIC_WEIGHTS and meta["heuristic"] == result["heuristic"]
    assert meta["model_path"].resolve() == model.resolve() and meta["gbt_path"].resolve() == gbt.resolve()
    by_weight = result["by_weight"]
    assert len(by_weight) == sum(w + h <= 1 + 1e-9 for w in WEIGHTS for h in HEURISTIC_WEIGHTS)
    assert result["val_page_f1"] == max(by_weight.values())  # the best weights on validation were kept
    assert by_weight["1.0/0.0"] == result["model_alone"] and by_weight["0.0/0.0"] == result["gbt_alone"]
    assert result["without_vote"]["val_page_f1"] == max(by_weight[f"{w}/0.0"] for w in WEIGHTS)
    for h in (0.0, 0.3):  # the tuned folder, then one whose vote has a weight whatever validation said
        meta = json.loads((tmp_path / "ens" / "config.json").read_text())
        meta["heuristic"], meta["weight"] = h, 0.4
        (tmp_path / "ens" / "config.json").write_text(json.dumps(meta))
        ex = load_extractor("ensemble", tmp_path / "ens", device="cpu")
        assert (ex.rule.threshold, ex.rule.rescue, ex.name) == (meta["threshold"], meta["rescue"], "ensemble")
        page = next((root / "synth" / "html").glob("*.html.gz")).read_bytes()
        doc = ex.page_segmenter(page)
        assert (VOTE in doc.extra) == bool(h)  # without a weight the heuristic never runs
        p_model = load_extractor("model", model, device="cpu").probabilities([doc])[0]
        p_gbt = get_extractor("gbt", checkpoint=gbt).gbt.model.page_probabilities(doc.blocks)
        vote = heuristic_vote(doc.blocks, body_text(segment_tree(page)[1]))
        expected = 0.4 * p_model + h * vote + (0.6 - h) * p_gbt
        assert np.allclose(ex.probabilities([doc])[0], expected, atol=1e-6)
        result = ex.extract(page)
        assert result.extractor == "ensemble" and result.text and len(result.probabilities or []) == len(doc.blocks)
        assert np.allclose(result.probabilities or [], expected, atol=1e-6)
    fast = load_extractor("ensemble", tmp_path / "ens", device="cpu", vote=False)  # blend and rule tuned without it
    wv = meta["without_vote"]
    assert (fast.blend.vote, fast.blend.model, fast.rule.threshold, fast.rule.rescue) == (
        0.0, wv["weight"], wv["threshold"], wv["rescue"])
    assert VOTE not in fast.page_segmenter(page).extra
    p_fast = wv["weight"] * p_model + (1 - wv["weight"]) * p_gbt
    assert np.allclose(fast.probabilities([segment(page)])[0], p_fast, atol=1e-6)
    plain = segment(page)  # a page segmented without the vote: refused, its source given or not
    with pytest.raises(ValueError, match="lack the heuristic's vote"):
        ex.probabilities([plain])
    with pytest.raises(ValueError, match="lack the heuristic's vote: segment them with the extractor's"):
        ex.extract_documents([plain], [lambda: page])
    assert VOTE not in plain.extra
    again = ex.extract_documents([ex.page_segmenter(page)], [lambda: page])[0]
    assert again.probabilities == result.probabilities
    # a threshold given by hand turns the tuned rescue off, as for the model
    assert load_extractor("ensemble", tmp_path / "ens", device="cpu", threshold=0.9).rule.rescue is None
    meta["weight"] = 0.9
    (tmp_path / "ens" / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="model \\+ vote <= 1"):
        load_extractor("ensemble", tmp_path / "ens", device="cpu")
    with pytest.raises(ValueError, match="of kind 'ensemble', not 'model'"):
        load_extractor("model", tmp_path / "ens")


def test_batch_workers_segment_with_the_vote(parts: tuple[Path, Path, Path], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Parsing workers in other processes give the ensemble pages with the vote: the same answers as extract."""
    from bodyblocks.extraction import segmenting

    calls: list[int] = []
    real = segmenting.vote_on_tree

    def vote_on_tree(doc, tree, text):  # noqa: ANN001, ANN202
        if text is not blocks_module._WARM_PAGE:  # the batch runner warms the extractor up before it forks
            calls.append(os.getpid())
        return real(doc, tree, text)

    monkeypatch.setattr(segmenting, "vote_on_tree", vote_on_tree)
    root, model, gbt = parts
    make_ensemble(model, gbt, tmp_path / "ens")
    meta = json.loads((tmp_path / "ens" / "config.json").read_text())
    meta["heuristic"], meta["weight"] = 0.3, 0.4
    (tmp_path / "ens" / "config.json").write_text(json.dumps(meta))
    pages = sorted((root / "synth" / "html").glob("*.html.gz"))[:4]
    opts = ExtractOptions(checkpoint=str(tmp_path / "ens"), device="cpu")
    for workers in (1, 2):
        calls.clear()  # (tuning made votes too)
        out = tmp_path / f"out{workers}"
        totals = run_batch(pages, out, BatchOptions(extractor="ensemble", options=opts, workers=workers,
                                                    fmt="json", progress=False))
        assert totals.ok == 4
        # one worker parses in this process; two parse in theirs, so the vote is never made again here
        assert calls.count(os.getpid()) == (4 if workers == 1 else 0)
        ex = load_extractor("ensemble", tmp_path / "ens", device="cpu")
        for page in pages:
            rec = json.loads((out / f"{stem_of(page)}.json").read_text())
            assert rec["text"] == ex.extract(page.read_bytes()).text


def test_cli_ensemble_and_tune(parts: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    _, model, gbt = parts
    out = tmp_path / "ens"
    assert main(["ensemble", str(model), str(gbt), "--out", str(out)]) == 0
    made = json.loads(capsys.readouterr().out)
    meta = json.loads((out / "config.json").read_text())
    meta["weight"], meta["heuristic"], meta["threshold"] = 0.0, 0.3, 0.99  # poor settings that `tune` must replace
    (out / "config.json").write_text(json.dumps(meta))
    assert main(["tune", str(out)]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert (tuned["weight"], tuned["heuristic"], tuned["threshold"]) == (made["weight"], made["heuristic"],
                                                                         made["threshold"])
    assert main(["ensemble", str(model), str(tmp_path / "missing"), "--out", str(tmp_path / "e2")]) == 2
    root = parts[0]
    data = [f"data.root={root}", "data.datasets=[synth]", f"data.cache_dir={root / 'cache'}"]
    no_vote = ["--set", "ensemble.vote_weights=[0.0]", *(x for d in data for x in ("--set", d))]
    assert main(["ensemble", str(model), str(gbt), "--out", str(tmp_path / "e3"), *no_vote]) == 0  # --set: the grid
    assert json.loads(capsys.readouterr().out)["heuristic"] == 0.0 < made["heuristic"]
    assert main(["ensemble", str(model), str(gbt), "--out", str(tmp_path / "e4"), "--set", "ensemble.nope=1"]) == 2
    page = next((parts[0] / "synth" / "html").glob("*.html.gz"))
    meta = json.loads((out / "config.json").read_text())
    meta["heuristic"], meta["weight"] = 0.3, 0.4  # a vote with a weight, so that leaving it out shows
    (out / "config.json").write_text(json.dumps(meta))
    seen = []
    for flags, vote in (([], True), (["--no-vote"], False)):
        dest = tmp_path / f"x{vote}"
        assert main(["extract", str(page), "--out", str(dest), "--extractor", "ensemble", "--checkpoint", str(out),
                     "--format", "json", "--no-progress", *flags]) == 0
        rec = json.loads((dest / f"{stem_of(page)}.json").read_text())
        want = load_extractor("ensemble", out, device="cpu", vote=vote).extract(page.read_bytes()).probabilities
        assert np.allclose([b["p_body"] for b in rec["blocks"]], want, atol=1e-6)
        seen.append(want)
    assert not np.allclose(seen[0], seen[1])
    monkeypatch.setenv("BODYBLOCKS_MODEL", str(out))  # the default extractor's folder, named or not
    for flags in ([], ["--extractor", "ensemble"]):
        dest = tmp_path / f"env{len(flags)}"
        assert main(["extract", str(page), "--out", str(dest), "--format", "json", "--no-progress", *flags]) == 0
        rec = json.loads((dest / f"{stem_of(page)}.json").read_text())
        assert np.allclose([b["p_body"] for b in rec["blocks"]], seen[0], atol=1e-6)
    monkeypatch.delenv("BODYBLOCKS_MODEL")
    assert main(["extract", str(page), "--out", str(tmp_path / "h"), "--extractor", "heuristic", "--no-vote"]) == 2
    with pytest.raises(ValueError, match="not an ensemble"):
        read_ensemble(model)


def test_batched_probabilities_do_not_depend_on_the_other_pages(parts: tuple[Path, Path, Path]) -> None:
    """A page longer than the window runs alone: its windows would otherwise follow a longer companion's."""
    _, model, _ = parts
    ex = load_extractor("model", model, device="cpu", batch_size=8)
    window = ex.model.cfg.window

    def page(n: int, word: str) -> str:
        return "<html><body>" + "".join(f"<p>{word} paragraph {i}, some text.</p>" for i in range(n)) + "</body></html>"

    docs = [segment(page(n, w)) for n, w in ((window - 40, "short"), (window + 30, "long"), (2 * window, "longer"))]
    alone = [ex.probabilities([d])[0] for d in docs]
    together = ex.probabilities(docs)
    for a, b in zip(alone, together, strict=True):
        assert np.allclose(a, b, atol=1e-5)
    assert ex.model.batches(docs) == [[0], [1], [2]]
    ex.model.batch_size = 1
    assert ex.model.batches([docs[0], docs[0]]) == [[0], [1]]


@pytest.mark.skipif(shipped("ensemble") is None, reason="checkpoints/ensemble is not shipped in this checkout")
@pytest.mark.parametrize("name", ["article-utf8", "news-gbk-undeclared"])
def test_shipped_ensemble_finds_the_body_of_the_sample_pages(name: str) -> None:
    result = get_extractor("ensemble", device="cpu").extract((SAMPLES / f"{name}.html").read_bytes())
    gold = (SAMPLES / f"{name}.gold.txt").read_text(encoding="utf-8")
    assert levenshtein_ratio(gold, result.text) > 0.9 and not result.low_confidence


def test_cli_evaluate_takes_the_checkpoint_of_the_one_trained_extractor(parts: tuple[Path, Path, Path],
                                                                        tmp_path: Path) -> None:
    root, model, gbt = parts
    make_ensemble(model, gbt, tmp_path / "ens")
    base = ["evaluate", str(root / "synth"), "--limit", "3", "--workers", "0", "--json", str(tmp_path / "r.json")]
    assert main([*base, "--extractor", "ensemble", "--checkpoint", str(tmp_path / "ens")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert {r["extractor"] for r in report["summary"]} == {"ensemble"}
    assert main([*base, "--extractor", "model", "gbt", "--checkpoint", str(model)]) == 2


@pytest.mark.skipif(shipped("ensemble") is None, reason="checkpoints/ensemble is not shipped in this checkout")
def test_one_page_extract_overlapping_the_forward_pass_gives_the_batch_answer() -> None:
    """extract() runs the forward pass on a second thread while it makes the vote and the trees' scores: the
    same text, kept blocks and probabilities as extract_documents on the page."""
    import random

    from bodyblocks.loading.checkpoints import load_extractor
    from bodyblocks.training.synth import synth_page

    ex = load_extractor("ensemble", device="cpu", threads=1)
    for seed in range(6):
        html = synth_page(random.Random(seed))[0]
        one = ex.extract(html)
        batch = ex.extract_documents([ex.page_segmenter(html)], [lambda h=html: h])[0]
        assert (one.text, one.kept, one.low_confidence) == (batch.text, batch.kept, batch.low_confidence)
        assert one.probabilities == batch.probabilities
