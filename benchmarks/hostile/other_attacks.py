"""Attacks that are no input of the main run: review links, annotate's writes, tampered and
malformed checkpoints, Ctrl-C to the process group."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.hostile.content import PARAGRAPHS, article, clip, sentence
from benchmarks.hostile.folders import snapshot
from bodyblocks.runtime.files import REPO_ROOT


def other_attacks(root: Path) -> list[tuple[str, bool, str]]:
    """Targets of the attacks that are no input of the main run: review links, annotate's writes, tampered
    and malformed checkpoints, Ctrl-C to the process group. Each: nothing outside its own --out written, no
    traceback on stderr."""
    from bodyblocks.annotate.store import AnnotationStore
    from bodyblocks.page.segment import segment

    def cli(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "bodyblocks", *argv], cwd=REPO_ROOT, capture_output=True,
                              text=True, errors="replace", timeout=300)

    targets = []
    ds = root / "review-ds"  # review pages: ids that are links elsewhere, or the index's name
    (ds / "html").mkdir(parents=True)
    ids = ["javascript:alert(document.domain)", "index", "sub/index"]
    for n, _ in enumerate(ids):
        (ds / "html" / f"r{n}.html.gz").write_bytes(gzip.compress(article(f"rv-{n}").encode(), mtime=0))
    (ds / "pages.jsonl").write_text("".join(json.dumps({"id": i, "html": f"html/r{n}.html.gz"}) + "\n"
                                            for n, i in enumerate(ids)), encoding="utf-8")
    before = snapshot(ds, ds / "none")
    proc = cli("extract", str(ds), "--out", str(root / "review-out"), "--no-progress", "--extractor", "heuristic",
               "--review", "1")
    index = root / "review-out" / "review" / "index.html"
    hrefs = re.findall(r'href="([^"]*)"', index.read_text(encoding="utf-8")) if index.is_file() else []
    own = root / "review-out" / "review" / "pages" / "index.html"
    ok = (len(hrefs) == 3 and all(h.startswith("./pages/") and ":" not in h for h in hrefs)
          and "./pages/sub/index.html" in hrefs and own.is_file() and sentence("rv-1") in own.read_text("utf-8")
          and snapshot(ds, ds / "none") == before and "Traceback" not in proc.stderr)
    targets.append(("review links relative, encoded; index no page's", ok,
                    f"{len(hrefs)} links: {clip(' '.join(hrefs), 60)}"))

    ds = root / "annotate-ds"  # annotate: marking a page done rewrote pages.jsonl from 6 lines to 2
    (ds / "html").mkdir(parents=True)
    (ds / "html" / "a.html.gz").write_bytes(gzip.compress(article("an-a").encode(), mtime=0))
    raw = "".join(json.dumps(r) + "\n" for r in (
        {"id": "a", "html": "html/a.html.gz"}, {"id": "../skip", "html": "html/a.html.gz"},
        {"id": "b c", "html": "html/a.html.gz"}, {"id": "out", "html": "../x.html.gz"},
        {"id": "a", "html": "html/a.html.gz", "split": "dup"}, {"id": "c", "html": "html/a.html.gz"})).encode()
    (ds / "pages.jsonl").write_bytes(raw)
    store = AnnotationStore(ds)
    blocks = segment(store.page("a").html).blocks
    store.save("a", blocks, [int("Relief convoys reached" in b.text) for b in blocks], done=True)
    kept = (ds / "pages.jsonl").read_bytes() == raw
    targets.append(("annotate keeps pages.jsonl byte for byte", kept, f"{len(raw.splitlines())} lines, "
                    + ("unchanged" if kept else "REWRITTEN")))

    page = root / "page.html"  # checkpoints: each refused at load, in one line, before the output folder
    page.write_text(article("ck"), encoding="utf-8")
    shipped = REPO_ROOT / "checkpoints" / "default"
    good = json.loads((shipped / "config.json").read_text(encoding="utf-8"))
    cases = {"tampered context.onnx": None, "d_model 4096 against 256": {**good, "model": {**good["model"],
             "d_model": 4096}}, "config a JSON list": [1, 2], "threshold null": {**good, "threshold": None},
             "no model key": {k: v for k, v in good.items() if k != "model"}, "deep nesting": "[" * 100_000}
    refused = []
    for name, config in cases.items():
        folder = root / "ck" / re.sub(r"\W+", "-", name)
        shutil.copytree(shipped, folder)
        if config is None:
            data = bytearray((folder / "context.onnx").read_bytes())
            data[len(data) // 2 : len(data) // 2 + 4096] = bytes(b ^ 0xFF for b in data[len(data) // 2 :
                                                                                           len(data) // 2 + 4096])
            (folder / "context.onnx").write_bytes(bytes(data))
        else:
            (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
        proc = cli("extract", str(page), "--out", str(folder / "out"), "--no-progress", "--extractor", "model",
                   "--checkpoint", str(folder))
        lines = proc.stderr.strip().splitlines()
        if proc.returncode == 2 and len(lines) == 1 and "internal error" not in proc.stderr \
                and not (folder / "out").exists():
            refused.append(name)
        else:
            print(f"  checkpoint {name}: exit {proc.returncode}, {len(lines)} stderr lines: {clip(proc.stderr, 200)}")
    targets.append(("bad checkpoints refused in one line", len(refused) == len(cases),
                    f"{len(refused)}/{len(cases)}"))

    src = root / "sigint-in"  # Ctrl-C to the process group, three times, in five runs
    src.mkdir()
    for n in range(400):
        (src / f"p{n:03d}.html").write_text(article(f"int-{n}", extra="".join(f"<p>{p}</p>" for p in PARAGRAPHS * 20)),
                                            encoding="utf-8")
    quiet, statuses = 0, []
    for run_no, delay in enumerate((0.0, 0.05, 0.1, 0.3, 0.6)):
        out = root / f"sigint-out{run_no}"
        proc = subprocess.Popen([sys.executable, "-m", "bodyblocks", "extract", str(src), "--out", str(out),
                                 "--no-progress", "--extractor", "heuristic", "--workers", "2"], cwd=REPO_ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                                start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and not any(out.glob("p*.txt")):
            time.sleep(0.02)
        time.sleep(delay)
        for _ in range(3):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
                time.sleep(0.03)
        _, err = proc.communicate(timeout=120)
        statuses.append(proc.returncode)
        quiet += "Traceback" not in err and "ForkProcess" not in err and proc.returncode in (0, 130)
    targets.append(("Ctrl-C x3 to the process group: no traceback", quiet == len(statuses),
                    f"{quiet}/{len(statuses)} quiet, exit {statuses}"))
    return targets
