"""Issue 44's attacks other than on the inputs' walk: review links, annotate's writes, checkpoint checks,
Ctrl-C to the process group, charset labels."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from bodyblocks.batch import BatchOptions, run_batch

ARTICLE = ("<html><head><title>Relief</title></head><body><nav><a href='/'>Home</a></nav><article><h1>Relief "
           "convoys reach the valley</h1><p>Relief convoys reached the valley on Tuesday, after three days of rain "
           "had closed the mountain roads, and residents queued for water.</p><p>Engineers said a temporary "
           "crossing would be built upstream within a month if the river kept falling.</p></article></body></html>")


def _dataset(root: Path, ids: list[str]) -> Path:
    """A dataset folder (pages.jsonl + html/) with one article page per id."""
    (root / "html").mkdir(parents=True)
    lines = []
    for n, page_id in enumerate(ids):
        (root / "html" / f"p{n}.html.gz").write_bytes(gzip.compress(ARTICLE.encode(), mtime=0))
        lines.append(json.dumps({"id": page_id, "html": f"html/p{n}.html.gz"}))
    (root / "pages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


# ------------------------------------------------------------------------------------------ review pages
def test_review_links_are_relative_and_encoded_and_no_key_takes_the_index(tmp_path: Path) -> None:
    ids = ["javascript:alert(document.domain)", "index", "sub/index", "//evil.example/x", 'q"><script>x</script>']
    out = tmp_path / "out"
    run_batch([_dataset(tmp_path / "ds", ids)], out, BatchOptions(extractor="heuristic", review=1.0,
                                                                 progress=False, workers=1))
    index = (out / "review" / "index.html").read_text(encoding="utf-8")
    hrefs = re.findall(r'href="([^"]*)"', index)
    assert len(hrefs) == len(ids), index
    assert all(h.startswith("./pages/") and ":" not in h and "<" not in h for h in hrefs), hrefs
    assert "./pages/javascript%3Aalert%28document.domain%29.html" in hrefs
    assert "./pages/sub/index.html" in hrefs and "./pages/index.html" in hrefs
    assert "<script>" not in index
    assert index.startswith("<!doctype html>") and "pages to review" in index  # the index is the index
    own = (out / "review" / "pages" / "index.html").read_text(encoding="utf-8")
    assert "Relief convoys reached the valley" in own  # the page with id `index` keeps its own review page
    assert (out / "review" / "pages" / "sub" / "index.html").is_file()


# ------------------------------------------------------------------------------------------ decoding
def test_a_charset_label_outside_the_whatwg_standard_is_not_honoured() -> None:
    from bodyblocks.decode import decode_bytes

    page = ('<html><head><meta charset="cp037"></head><body><p>The council approved the budget on Monday, '
            "and the works begin in spring.</p></body></html>")
    d = decode_bytes(page.encode("ascii"))
    assert d.encoding not in ("cp037", "cp500") and "The council approved the budget" in d.text
    assert not d.replaced and d.declared == ["cp037"]


def test_whatwg_labels_map_as_browsers_read_them() -> None:
    from bodyblocks.decode import _codec

    assert {label: _codec(label) for label in ("gb2312", "GBK", "latin1", "iso-8859-1", "us-ascii", "shift_jis",
                                               "euc-kr", "big5", "koi8-r", "windows-1251", "cp037", "utf-7",
                                               "ebcdic-cp-us", "iso-2022-kr")} == {
        "gb2312": "gb18030", "GBK": "gb18030", "latin1": "cp1252", "iso-8859-1": "cp1252", "us-ascii": "cp1252",
        "shift_jis": "cp932", "euc-kr": "cp949", "big5": "big5hkscs", "koi8-r": "koi8-r",
        "windows-1251": "cp1251", "cp037": None, "utf-7": None, "ebcdic-cp-us": None, "iso-2022-kr": None}


def test_a_gb2312_page_with_broken_bytes_is_read_as_chinese_and_flagged() -> None:
    from bodyblocks.decode import decode_bytes

    paragraphs = "".join(f"<p>第{i}段：救援车队周二抵达山谷，此前连续三天的降雨冲毁了山路，官员表示道路已经重新开放。"
                         "居民们一直在山脊上等待物资，第一批卡车运来了饮用水、大米、毛毯和药品。</p>"
                         for i in range(60))
    page = f'<html><head><meta charset="gb2312"><title>救援</title></head><body>{paragraphs}</body></html>'
    data = bytearray(page.encode("gb18030"))
    body = data.index(b"<body>")
    step = (len(data) - body) // 13
    for k in range(1, 13):  # 12 broken bytes: a lead byte followed by an invalid trail byte
        at = body + k * step
        while data[at] < 0x80:
            at += 1
        data[at + 1] = 0x7F if data[at] >= 0x81 else data[at + 1]
        data[at] = 0xFF
    d = decode_bytes(bytes(data))
    assert d.encoding == "gb18030", d.encoding
    assert d.replaced and 1 <= d.text.count("\ufffd") <= 24
    assert "官员表示道路已经重新开放" in d.text and "Ã" not in d.text and "¡" not in d.text


# ------------------------------------------------------------------------------------------ signals
def _interrupted_run(src: Path, out: Path, delay_s: float, extra: list[str]) -> tuple[int | None, str]:
    """A real `bodyblocks extract` in its own process group, given Ctrl-C (SIGINT to the group) three times once
    its first outputs are written; (exit status, stderr)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    cmd = [sys.executable, "-m", "bodyblocks", "extract", str(src), "--out", str(out), "--no-progress", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and not any(out.glob("p*.txt")):
            time.sleep(0.02)
        time.sleep(delay_s)
        for _ in range(3):
            if proc.poll() is not None:
                break
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.03)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err


def test_ctrl_c_to_the_process_group_prints_no_worker_traceback(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    body = "".join(f"<p>Paragraph {i}: the relief convoys reached the valley after three days of rain, and the "
                   "drivers signed for water, rice and blankets.</p>" for i in range(300))
    for i in range(600):
        (src / f"p{i:03d}.html").write_text(f"<html><body><article>{body}</article></body></html>", encoding="utf-8")
    interrupted = 0
    for n, delay in enumerate((0.0, 0.05, 0.15, 0.3, 0.5, 0.02)):
        status, err = _interrupted_run(src, tmp_path / f"out{n}", delay, ["--extractor", "heuristic",
                                                                          "--workers", "2"])
        assert "Traceback" not in err and "KeyboardInterrupt" not in err and "ForkProcess" not in err, err
        assert status in (0, 130), (status, err)  # stopped with its report (or done first), never killed by it
        interrupted += status == 130
    assert interrupted >= 4  # the runs were stopped by the signal (not finished before it came)


# ------------------------------------------------------------------------------------------ annotate
def test_annotate_never_rewrites_pages_jsonl_and_every_record_is_kept(tmp_path: Path) -> None:
    from bodyblocks.annotate.store import AnnotationStore
    from bodyblocks.segment import segment
    from bodyblocks.training.datasets import read_dataset, read_records

    ds = tmp_path / "ds"
    (ds / "html").mkdir(parents=True)
    for name in ("a", "b", "a2"):
        (ds / "html" / f"{name}.html.gz").write_bytes(gzip.compress(ARTICLE.replace("Tuesday", name).encode()))
    raw = ('{"id": "a",  "html": "html/a.html.gz", "note": "\\u957f\\u6c5f"}\n'  # spacing, escapes: kept as they are
           '{"html": "html/b.html.gz", "id": "b", "gold": null}\n'
           '{"id": "../escape", "html": "html/a.html.gz"}\n'  # left out by annotate (a warning)
           '\n'
           '{"id": "out", "html": "../outside.html.gz"}\n'  # left out: its file leaves the dataset
           '{"id": "a", "html": "html/a2.html.gz", "split": "test"}\n'  # a duplicate id
           '{"id": "c d", "html": "html/b.html.gz"}\n')  # left out: its id is no plain name
    (ds / "pages.jsonl").write_bytes(raw.encode("utf-8"))
    store = AnnotationStore(ds)
    assert store.ids() == ["a", "b"]
    blocks = segment(store.page("b").html).blocks
    labels = [int("Relief convoys reached" in b.text) for b in blocks]
    store.save("b", blocks, labels, done=True, kind="news")  # marking one page done
    store.save("a", segment(store.page("a").html).blocks, [0] * len(segment(store.page("a").html).blocks))
    assert (ds / "pages.jsonl").read_bytes() == raw.encode("utf-8")  # byte for byte
    assert len(read_records(ds)) == 6
    assert (ds / "gold" / "b.txt").read_text(encoding="utf-8").startswith("Relief convoys reached the valley")
    page_b = next(p for p in read_dataset(ds) if p.id == "b")
    assert page_b.gold and page_b.gold.startswith("Relief convoys reached") and page_b.block_labels is not None
    assert not list(ds.rglob(".*.tmp"))
    store.save("b", blocks, labels, done=False)  # un-done: the tool's gold goes, pages.jsonl still untouched
    assert not (ds / "gold" / "b.txt").exists() and (ds / "pages.jsonl").read_bytes() == raw.encode("utf-8")
    assert next(p for p in read_dataset(ds) if p.id == "b").gold is None
