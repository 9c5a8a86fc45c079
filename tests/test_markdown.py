"""Markdown output keeps the body's structure: headings by level, lists, tables, code, quotes; the title once."""

from __future__ import annotations

import json
import random

import pytest

from bodyblocks.batch.outputs import render
from bodyblocks.page.markdown import block_kind, to_markdown
from bodyblocks.page.segment import segment
from bodyblocks.training.labels import align_blocks
from bodyblocks.training.synth import synth_page
from bodyblocks.types import Extraction

PAGE = """<html><head><title>Quay works</title></head><body><article><h1>Quay works</h1><h2>Costs</h2>
<p>The council published the figures.</p><blockquote><p>We expect it to reopen in spring.</p></blockquote>
<ul><li>piles</li><li>deck <b>boards</b><ul><li>oak</li></ul></li></ul><ol start="3"><li>third</li><li>fourth</li></ol>
<table><thead><tr><th>Item</th><th>Cost</th></tr></thead><tbody><tr><td>Piles|steel</td><td>4,000</td></tr>
<tr><td>Deck</td><td></td></tr></tbody></table><pre><code>total = piles + deck
print(total)</code></pre><p>First line<br>second line</p><p># a hash, not a heading</p></article></body></html>"""


def test_every_structure_renders_as_markdown() -> None:
    md = to_markdown("Quay works", segment(PAGE, marks=True).blocks)
    assert md.count("Quay works") == 1 and md.startswith("# Quay works\n\n## Costs\n\n")
    assert "\n> We expect it to reopen in spring.\n" in md
    assert "\n- piles\n- deck **boards**\n  - oak\n\n3. third\n4. fourth\n" in md  # two lists, the nesting kept
    assert "| Item | Cost |\n|---|---|\n| Piles\\|steel | 4,000 |\n| Deck |  |\n" in md
    assert "```\ntotal = piles + deck\nprint(total)\n```" in md
    assert "First line  \nsecond line" in md and "\\# a hash, not a heading" in md


def test_block_kinds() -> None:
    kinds = [block_kind(b) for b in segment(PAGE).blocks]
    assert kinds[:4] == ["heading", "heading", "paragraph", "quote"]
    assert kinds.count("table-row") == 3 and kinds.count("list-item") == 5 and kinds.count("code") == 1


def test_table_cells_are_apart_in_the_text_too() -> None:
    rows = [b.text for b in segment(PAGE).blocks if block_kind(b) == "table-row"]
    assert rows == ["Item\tCost", "Piles|steel\t4,000", "Deck"]


@pytest.mark.parametrize("seed", range(40))
def test_synthetic_pages_body_structures_survive_in_markdown(seed: int) -> None:
    """Synthetic pages carry tables, ordered lists and code (training/synth._structures): rendered from the
    blocks their gold labels keep, each appears with its structure."""
    html, gold, _ = synth_page(random.Random(seed))
    doc = segment(html)
    labels = align_blocks(doc.blocks, gold).labels
    md = to_markdown(doc.title, [b for b, keep in zip(doc.blocks, labels, strict=True) if keep])
    for line in gold.splitlines():
        if "\t" in line:  # a table row of the gold: a Markdown table row with the same cells
            assert "| " + " | ".join(line.split("\t")) + " |" in md
        elif line.startswith("curl "):
            assert "```\n" + line in md
    if "\t" in gold:
        assert "|---|---|---|" in md


def test_json_output_names_each_block_kind_and_md_uses_kept_blocks() -> None:
    doc = segment(PAGE)
    kept = [i for i, b in enumerate(doc.blocks) if block_kind(b) in ("table-row", "heading")]
    ex = Extraction(text="\n".join(doc.blocks[i].text for i in kept), title="Quay works", blocks=doc.blocks,
                    probabilities=[0.5] * len(doc.blocks), kept=kept)
    rec = json.loads(render(ex, "json", "k"))
    assert {b["kind"] for b in rec["blocks"] if b["kept"]} == {"heading", "table-row"}
    assert render(ex, "md", "k").startswith("# Quay works\n\n## Costs\n\n| Item | Cost |")


def test_md_of_an_extractor_without_blocks_keeps_the_title_once() -> None:
    ex = Extraction(text="Quay works\nOne paragraph.\nAnother one.", title="Quay works")
    assert render(ex, "md", "k") == "# Quay works\n\nOne paragraph.\n\nAnother one.\n"
