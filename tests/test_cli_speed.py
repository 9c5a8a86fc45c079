"""benchmarks/cli_speed.py: the commands it times and the ratios it reports."""

import argparse

from benchmarks import cli_speed
from benchmarks.cli_speed import FAST, Run

from bodyblocks.loading import checkpoints


def test_the_fast_preset_is_timed_when_it_is_shipped(tmp_path, monkeypatch):
    cmds = cli_speed.commands(tmp_path / "pages", tmp_path / "out")
    assert (FAST in cmds) == (checkpoints.shipped("fast") is not None)
    monkeypatch.setattr(checkpoints, "SHIPPED", tmp_path)  # nothing shipped: the four commands only
    assert list(cli_speed.commands(tmp_path / "pages", tmp_path / "out")) == [
        "bodyblocks", "trafilatura", "bodyblocks --workers 2", "trafilatura --parallel 2"]


def test_the_report_holds_the_preset_against_trafilaturas_defaults():
    def by(ours: float, fast: float, theirs: float) -> dict[str, list[Run]]:
        return {"bodyblocks": [Run(ours, ours, 100.0)], "trafilatura": [Run(theirs, theirs, 50.0)],
                "bodyblocks --workers 2": [Run(ours, ours, 100.0)],
                "trafilatura --parallel 2": [Run(theirs, theirs, 50.0)],
                FAST: [Run(fast, fast, 90.0)]}

    args = argparse.Namespace(kind="news,mix", sizes="1,1001", rounds=1, big_rounds=1)
    text = cli_speed.report({("page", 1): by(0.5, 0.5, 0.3), ("news", 1001): by(20.5, 15.5, 30.3),
                             ("mix", 1001): by(20.5, 15.5, 30.3)},
                            {("page", 1): 1, ("news", 1001): 1001, ("mix", 1001): 1001}, args)
    assert "| 1001 | news | `--checkpoint fast` against trafilatura's defaults | 1.95 | 1.95 |" in text
    assert "| 1001 | mix | defaults | 1.48 | 1.48 |" in text
    assert "| 1001 | news | `bodyblocks` | 20.50 | 20.50 | 1.00 | 100 |" in text  # cores busy: CPU / wall
    assert f"- news, 1001 pages, `{FAST}`: 15.0 ms" in text and "- mix, 1001 pages, `bodyblocks`: 20.0 ms" in text
    assert "- news, 1001 pages, `trafilatura`: 30.0 ms" in text


def test_the_news_folder_holds_article_pages_only(tmp_path, monkeypatch):
    from bodyblocks.runtime.files import datasets_root

    root = datasets_root()
    if root is None or not (root / "wcxb-dev" / "pages.jsonl").exists():
        import pytest

        pytest.skip("no shared datasets")
    assert cli_speed.write_folder("news", tmp_path, 40) == 40
    names = sorted(p.name for p in tmp_path.iterdir())
    assert {n.split("-")[0] for n in names} <= {"l3s", "dragnet", "daniel", "wcxb", "cleanportaleval"}
    from bodyblocks.training.datasets import read_records

    articles = {r["id"] for r in read_records(root / "wcxb-dev") if r["page_type"] == "article"}
    assert all(n[len("wcxb-dev-"):-len(".html")] in articles for n in names if n.startswith("wcxb-dev-"))


def test_the_modern_folder_holds_wcxb_dev_and_trafilatura_eval_pages(tmp_path):
    from bodyblocks.runtime.files import datasets_root

    root = datasets_root()
    if root is None or not all((root / d / "pages.jsonl").exists() for d, _ in cli_speed.MODERN):
        import pytest

        pytest.skip("no shared datasets")
    assert cli_speed.write_folder("modern", tmp_path, 10) == 10
    names = sorted(p.name for p in tmp_path.iterdir())
    assert sum(n.startswith("wcxb-dev-") for n in names) == 5
    assert sum(n.startswith("trafilatura-eval-") for n in names) == 5
