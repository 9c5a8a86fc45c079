"""The evaluation run on a tiny hand-made dataset: selection, failures, time limits, outputs and the CLI."""

from __future__ import annotations

import csv
import gzip
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from bodyblocks.cli import main
from bodyblocks.evaluation.evaluate import ALL, EvalConfig, default_factory, evaluate, run_tasks, select, spread
from bodyblocks.evaluation.report import format_table, write_outputs
from bodyblocks.loading.registry import Extractor
from bodyblocks.types import Extraction

PARAS = [
    "The city council approved the new transport plan on Tuesday, after a debate that lasted six hours.",
    "Under the plan, three new tram lines will connect the northern suburbs with the old town by 2030.",
    "Critics said the budget, estimated at 2.4 billion euros, was far too optimistic for such a project.",
]
ZH = ["北京市政府今天公布了新的交通规划，三条有轨电车线路将在二零三零年前建成。",
      "批评者认为预算过于乐观，市长则表示第一条线路将由区域政府出资建设。",
      "工程预计明年春天开工，届时最终的环境评估将会完成并向社会公布。"]
NAV = '<div class="nav"><a href="/">Home</a> <a href="/w">World</a> <a href="/b">Business</a></div>'


def page_html(paras: list[str]) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paras)
    return f"<html><body>{NAV}<div class='content'>{body}</div></body></html>".encode()


def make_dataset(root: Path) -> Path:
    """Five pages: English, Chinese, empty gold, snippets only, and an unreadable gzip file."""
    ds = root / "tiny"
    (ds / "html").mkdir(parents=True)
    (ds / "gold").mkdir()
    spec: list[tuple[str, str, str | None, bytes, str | None, dict[str, Any] | None]] = [
        ("en1", "en", "test", page_html(PARAS), "\n".join(PARAS), None),
        ("zh1", "zh", "train", page_html(ZH), "\n".join(ZH), None),
        ("empty", "en", "test", page_html(PARAS), "", None),
        ("snip", None, "test", page_html(PARAS), None, {"with": [PARAS[1]], "without": ["World"]}),
        ("broken", "en", "test", b"", "x", None),
    ]
    records = []
    for pid, lang, split, html, gold, snippets in spec:
        data = gzip.compress(html) if pid != "broken" else gzip.compress(b"<p>cut</p>" * 40)[:25]
        (ds / "html" / f"{pid}.html.gz").write_bytes(data)
        if gold is not None:
            (ds / "gold" / f"{pid}.txt").write_text(gold, encoding="utf-8")
        records.append({"id": pid, "url": None, "lang": lang, "split": split, "html": f"html/{pid}.html.gz",
                        "gold": f"gold/{pid}.txt" if gold is not None else None, "snippets": snippets,
                        "page_type": None, "labels": None, "note": None})
    (ds / "pages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return ds


class Slow:
    name = "slow"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        time.sleep(30)
        return Extraction("never", extractor=self.name)


class Crash:
    name = "crash"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        raise RuntimeError("a bug")


class Die:
    name = "die"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        os._exit(3)


def factory(name: str, opts: dict[str, Any]) -> Extractor:
    """Test extractors by name, else the real ones."""
    fakes = {"slow": Slow, "crash": Crash, "die": Die}
    return fakes[name]() if name in fakes else default_factory(name, opts)


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    return make_dataset(tmp_path)


def rows_by(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(r["extractor"], r["dataset"], r["lang"]): r for r in report["summary"]}


def test_spread_is_even_and_deterministic() -> None:
    assert spread(10, None) == list(range(10))
    assert spread(10, 5) == [0, 2, 4, 6, 8]
    assert spread(3, 10) == [0, 1, 2]
    assert spread(5, 0) == []


def test_select_by_source_split_when_no_split_files(tiny: Path) -> None:
    positions, note = select(str(tiny), "train", None)
    assert positions == [1] and note["pages"] == 1 and "source" in note["split_source"]
    positions, note = select(str(tiny), None, 2)
    assert positions == [0, 2] and note["pages_in_dataset"] == 5


def test_evaluate_scores_counts_and_failures(tiny: Path) -> None:
    report, results = evaluate(EvalConfig([str(tiny)], ["heuristic", "regex"], workers=0))
    rows = rows_by(report)
    h = rows[("heuristic", "tiny", ALL)]
    assert (h["pages"], h["scored"], h["skipped_no_gold"], h["failed"]) == (5, 3, 2, 1)
    assert h["failures_by_reason"] == {"unreadable": 1}
    # en1 and zh1 are perfect; the unreadable page scores as an empty extraction (ratio 0)
    assert h["mean_ratio"] == pytest.approx(2 / 3)
    assert h["snippet_precision"] == 1.0 and h["snippet_recall"] == 1.0
    assert rows[("heuristic", "tiny", "zh")]["acc@0.90"] == 1.0
    r = rows[("regex", "tiny", ALL)]
    assert r["mean_ratio"] < h["mean_ratio"] and r["snippet_precision"] == 0.5  # "World" from the nav
    assert len(results) == 10 and len(report["failures"]) == 2


def test_workers_give_the_same_scores(tiny: Path) -> None:
    cfg = EvalConfig([str(tiny)], ["heuristic"], workers=0)
    in_process, _ = evaluate(cfg)
    cfg.workers = 2
    pooled, _ = evaluate(cfg)
    strip = lambda rows: {k: {x: y for x, y in v.items() if x != "seconds_per_page"}  # noqa: E731
                          for k, v in rows_by(rows).items()}
    assert strip(in_process) == strip(pooled)


def test_timeouts_crashes_and_dead_workers_are_recorded(tiny: Path) -> None:
    # 3 s per page: far below Slow's 30 s, far above what the heuristic needs even on a loaded machine
    cfg = EvalConfig([str(tiny)], ["crash", "die", "slow", "heuristic"], workers=1, timeout_s=3.0)
    start = time.monotonic()
    report, _ = evaluate(cfg, factory=factory)
    assert time.monotonic() - start < 60
    rows = rows_by(report)
    assert rows[("crash", "tiny", ALL)]["failures_by_reason"] == {"crash": 4, "unreadable": 1}
    assert rows[("die", "tiny", ALL)]["failures_by_reason"] == {"worker-died": 4, "unreadable": 1}
    assert rows[("slow", "tiny", ALL)]["failures_by_reason"] == {"timeout": 4, "unreadable": 1}
    assert rows[("slow", "tiny", ALL)]["mean_ratio"] == 0.0
    assert rows[("heuristic", "tiny", ALL)]["failed"] == 1  # the pool recovered after each kill


def test_run_tasks_reports_an_extractor_that_cannot_be_built() -> None:
    with pytest.raises(RuntimeError, match="cannot build extractor"):
        list(run_tasks(iter([]), ["no-such-extractor"], {}, workers=1, timeout_s=1))


def test_outputs_and_table(tiny: Path, tmp_path: Path) -> None:
    report, results = evaluate(EvalConfig([str(tiny)], ["heuristic", "longest"], workers=0))
    out = tmp_path / "out"
    written = write_outputs(report, results, out, command="bodyblocks evaluate tiny")
    assert {p.name for p in written} == {"report.json", "pages.csv", "accuracy.png", "report.md"}
    saved = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert saved["config"]["extractors"] == ["heuristic", "longest"] and saved["summary"]
    with open(out / "pages.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 10 and {r["status"] for r in rows} == {"ok", "failed"}
    assert (out / "accuracy.png").read_bytes()[:4] == b"\x89PNG"
    table = format_table(report["summary"])
    assert "heuristic" in table and "longest" in table and "@0.90" in table
    assert "| zh |" in (out / "report.md").read_text(encoding="utf-8")


def test_cli_evaluate(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js = tmp_path / "r.json"
    code = main(["evaluate", str(tiny), "--extractor", "heuristic", "scorer", "--split", "test",
                 "--workers", "0", "--json", str(js), "--out", str(tmp_path / "o")])
    assert code == 0
    printed = capsys.readouterr().out
    assert "heuristic" in printed and "scorer" in printed
    report = json.loads(js.read_text(encoding="utf-8"))
    assert report["selection"]["tiny"]["pages"] == 4 and (tmp_path / "o" / "pages.csv").exists()


def test_synthetic_anchor_naive_baselines_far_below_the_pipeline(tmp_path: Path) -> None:
    """The sanity anchor on a small synthetic corpus: tag stripping and longest block lose clearly."""
    from bodyblocks.training.synth import generate_corpus

    generate_corpus(tmp_path / "synth", pages=40, seed=3)
    report, _ = evaluate(EvalConfig([str(tmp_path / "synth")], ["heuristic", "regex", "longest"], workers=0))
    f1 = {r["extractor"]: r["token_f1"] for r in report["summary"] if r["lang"] == ALL and r["dataset"] != ALL}
    assert f1["heuristic"] >= 0.98
    assert f1["regex"] < f1["heuristic"] - 0.15 and f1["longest"] < f1["heuristic"] - 0.3


@pytest.mark.datasets
def test_quality_floor_on_shared_pages(shared_datasets: Path) -> None:
    """A pinned floor on 20 L3S pages: the heuristic pipeline must stay well above tag stripping."""
    report, _ = evaluate(EvalConfig([str(shared_datasets / "l3s-gn1")], ["heuristic", "regex"], limit=20,
                                    workers=0))
    ratio = {r["extractor"]: r["mean_ratio"] for r in report["summary"] if r["lang"] == ALL}
    assert ratio["heuristic"] >= 0.75 and ratio["regex"] < ratio["heuristic"] - 0.1
