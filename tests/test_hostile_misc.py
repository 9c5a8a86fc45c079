"""Attacks other than on the inputs' walk: review links, annotate's writes, checkpoint checks,
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
    from bodyblocks.page.decode import decode_bytes

    page = ('<html><head><meta charset="cp037"></head><body><p>The council approved the budget on Monday, '
            "and the works begin in spring.</p></body></html>")
    d = decode_bytes(page.encode("ascii"))
    assert d.encoding not in ("cp037", "cp500") and "The council approved the budget" in d.text
    assert not d.replaced and d.declared == ["cp037"]


def test_whatwg_labels_map_as_browsers_read_them() -> None:
    from bodyblocks.page.detect import _codec

    assert {label: _codec(label) for label in ("gb2312", "GBK", "latin1", "iso-8859-1", "us-ascii", "shift_jis",
                                               "euc-kr", "big5", "koi8-r", "windows-1251", "cp037", "utf-7",
                                               "ebcdic-cp-us", "iso-2022-kr")} == {
        "gb2312": "gb18030", "GBK": "gb18030", "latin1": "cp1252", "iso-8859-1": "cp1252", "us-ascii": "cp1252",
        "shift_jis": "cp932", "euc-kr": "cp949", "big5": "big5hkscs", "koi8-r": "koi8-r",
        "windows-1251": "cp1251", "cp037": None, "utf-7": None, "ebcdic-cp-us": None, "iso-2022-kr": None}


def test_a_gb2312_page_with_broken_bytes_is_read_as_chinese_and_flagged() -> None:
    from bodyblocks.page.decode import decode_bytes

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
def _interrupted_run(src: Path, out: Path, delay_s: float, extra: list[str]) -> tuple[int | None, str, str]:
    """A real `bodyblocks extract` in its own process group, given Ctrl-C (SIGINT to the group) three times once
    its first outputs are written; (exit status, stderr, what the run had done when the first signal went)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    cmd = [sys.executable, "-m", "bodyblocks", "extract", str(src), "--out", str(out), "--no-progress", *extra]
    start = time.monotonic()
    # as from a terminal: a test run started in the background (CI, `cmd &`) has SIGINT ignored, and a child
    # inherits that, so the command would rightly go on through Ctrl-C
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = "no signal sent: the run had ended"
    try:
        deadline = start + 60
        while time.monotonic() < deadline and proc.poll() is None and not any(out.glob("p*.txt")):
            time.sleep(0.02)
        time.sleep(delay_s)
        for k in range(3):
            if proc.poll() is not None:
                break
            if k == 0:
                seen = f"{len(list(out.glob('p*.txt')))} outputs after {time.monotonic() - start:.2f} s"
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.03)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err, seen


def test_ctrl_c_to_the_process_group_prints_no_worker_traceback(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    for i in range(2000):  # distinct pages, enough that a run lasts seconds after its first output (~1.5 ms each)
        body = "".join(f"<p>Paragraph {j} of report {i}: the relief convoys reached the valley after three days of "
                       "rain, and the drivers signed for water, rice and blankets.</p>" for j in range(300))
        (src / f"p{i:04d}.html").write_text(f"<html><body><article>{body}</article></body></html>", encoding="utf-8")
    runs = []
    for n, delay in enumerate((0.0, 0.05, 0.15, 0.3, 0.5, 0.02)):
        status, err, seen = _interrupted_run(src, tmp_path / f"out{n}", delay, ["--extractor", "heuristic",
                                                                                "--workers", "2"])
        assert "Traceback" not in err and "KeyboardInterrupt" not in err and "ForkProcess" not in err, err
        assert status in (0, 130), (status, err)  # stopped with its report (or done first), never killed by it
        runs.append((status, seen))
    # the runs were stopped by the signal (not finished before it came)
    assert sum(status == 130 for status, _ in runs) >= 4, runs


def test_the_command_ignores_ctrl_c_once_its_work_is_done(monkeypatch) -> None:
    # a Ctrl-C while the interpreter exits would end the process by the signal (exit -2, no word of it): the
    # console entry point returns main's status with SIGINT ignored from then on
    import signal

    import bodyblocks.cli as cli

    monkeypatch.setattr(cli, "main", lambda: 7)
    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        assert cli.console() == 7
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


# ------------------------------------------------------------------------------------------ annotate
def test_annotate_never_rewrites_pages_jsonl_and_every_record_is_kept(tmp_path: Path) -> None:
    from bodyblocks.annotate.store import AnnotationStore
    from bodyblocks.page.segment import segment
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


# ------------------------------------------------------------------------------------------ checkpoints
SHIPPED_CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"


def _copy_checkpoint(tmp_path: Path, name: str) -> Path:
    import shutil

    dst = tmp_path / name
    shutil.copytree(SHIPPED_CHECKPOINTS / name, dst)
    return dst


def _cli(*argv: str) -> tuple[int, str]:
    """`bodyblocks ARGV` in a subprocess: (exit status, stderr)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "bodyblocks", *argv], capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stderr


def test_shipped_cpu_checkpoints_record_the_digest_of_every_weight_file() -> None:
    from bodyblocks.classify.integrity import file_sha256, read_config

    for name, files in (("default", ("model.safetensors", "embed.onnx", "context.onnx")),
                        ("fast", ("model.safetensors", "embed.onnx", "context.onnx")),
                        ("gbt", ("model.safetensors", "trees.onnx"))):
        recorded = read_config(SHIPPED_CHECKPOINTS / name / "config.json")["sha256"]
        assert recorded == {f: file_sha256(SHIPPED_CHECKPOINTS / name / f) for f in files}, name


def test_a_tampered_context_onnx_is_refused_in_one_line(tmp_path: Path) -> None:
    import pytest

    from bodyblocks.classify.integrity import CheckpointError
    from bodyblocks.classify.onnx_model import CONTEXT, export_metadata
    from bodyblocks.loading.checkpoints import load_extractor

    folder = _copy_checkpoint(tmp_path, "default")
    before = export_metadata(folder / CONTEXT)
    data = bytearray((folder / CONTEXT).read_bytes())
    at = len(data) // 2  # inside the weights: 4 KB flipped, the file's metadata kept
    data[at : at + 4096] = bytes(b ^ 0xFF for b in data[at : at + 4096])
    (folder / CONTEXT).write_bytes(bytes(data))
    assert export_metadata(folder / CONTEXT) == before  # still made from these weights, as far as it says
    with pytest.raises(CheckpointError, match="context.onnx is not the file its config.json records"):
        load_extractor("model", folder, engine="onnx")
    page = tmp_path / "page.html"
    page.write_text(ARTICLE, encoding="utf-8")
    status, err = _cli("extract", str(page), "--out", str(tmp_path / "out"), "--extractor", "model", "--checkpoint",
                       str(folder), "--no-progress")
    assert status == 2 and len(err.strip().splitlines()) == 1 and "SHA-256 differs" in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_tampered_safetensors_is_refused_by_torch_and_the_trees(tmp_path: Path) -> None:
    import pytest

    from bodyblocks.classify.integrity import CheckpointError
    from bodyblocks.classify.model import BlockClassifier
    from bodyblocks.classify.trees import GbtModel

    for name, load in (("fast", BlockClassifier.load), ("gbt", GbtModel.load)):
        folder = _copy_checkpoint(tmp_path, name)
        data = bytearray((folder / "model.safetensors").read_bytes())
        data[-64:] = bytes(b ^ 0x55 for b in data[-64:])
        (folder / "model.safetensors").write_bytes(bytes(data))
        with pytest.raises(CheckpointError, match="SHA-256 differs"):
            load(folder)


def test_a_config_that_contradicts_its_weights_is_refused_before_the_model_is_built(tmp_path: Path) -> None:
    import resource

    import pytest

    from bodyblocks.classify.integrity import CheckpointError
    from bodyblocks.classify.model import BlockClassifier
    from bodyblocks.loading.checkpoints import load_extractor

    folder = _copy_checkpoint(tmp_path, "default")
    meta = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    meta["model"]["d_model"] = 4096  # in range, but the weights are 256 wide
    (folder / "config.json").write_text(json.dumps(meta), encoding="utf-8")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CheckpointError,
                       match=r"does not match model.safetensors: tensor embed.0.weight is \[256, 120\]"):
        BlockClassifier.load(folder)
    with pytest.raises(CheckpointError, match="d_model 4096"):
        load_extractor("model", folder, engine="onnx")
    with pytest.raises(CheckpointError, match="d_model 4096"):
        load_extractor("model", folder, engine="torch")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 500_000  # KiB: nothing 4096 wide was built
    meta["model"]["d_model"], meta["model"]["n_layers"] = 256, 2
    (folder / "config.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(CheckpointError, match="3 context layers in the weights, n_layers 2"):
        load_extractor("model", folder, engine="onnx")


def test_a_malformed_config_is_refused_in_one_line_that_says_what(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text(ARTICLE, encoding="utf-8")
    good = json.loads((SHIPPED_CHECKPOINTS / "default" / "config.json").read_text(encoding="utf-8"))
    cases = {
        "list": ("[1, 2, 3]", "holds a JSON list, not the object"),
        "null-threshold": (json.dumps({**good, "threshold": None}), "'threshold' must be a number between 0 and 1"),
        "deep": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        "deep-object": ('{"a": ' * 50_000 + "1" + "}" * 50_000, "nested too deeply"),
        "no-model": (json.dumps({k: v for k, v in good.items() if k != "model"}), 'has no "model" object'),
        "model-list": (json.dumps({**good, "model": [1]}), 'has a list for its "model" object'),
        "bad-digest": (json.dumps({**good, "sha256": {"../x": "0" * 64}}), "names '../x', not a file of the folder"),
        "string-rescue": (json.dumps({**good, "rescue": "0.2"}), "'rescue' must be a number between 0 and 1"),
    }
    for name, (text, said) in cases.items():
        folder = _copy_checkpoint(tmp_path / name, "default")
        (folder / "config.json").write_text(text, encoding="utf-8")
        status, err = _cli("extract", str(page), "--out", str(tmp_path / name / "out"), "--extractor", "model",
                           "--checkpoint", str(folder), "--no-progress")
        lines = err.strip().splitlines()
        assert status == 2 and len(lines) == 1 and said in err, (name, err)
        assert "internal error" not in err and "Traceback" not in err and err.strip() != "bodyblocks extract: 'model'"
    ensemble = tmp_path / "ens"
    ensemble.mkdir()
    (ensemble / "config.json").write_text(json.dumps({"format_version": 1, "kind": "ensemble", "gbt": "../gbt",
                                                      "weight": 0.5, "threshold": 0.4}), encoding="utf-8")
    status, err = _cli("extract", str(page), "--out", str(tmp_path / "ens-out"), "--checkpoint", str(ensemble),
                       "--no-progress")
    assert status == 2 and "'model' must name the model folder" in err and len(err.strip().splitlines()) == 1, err
