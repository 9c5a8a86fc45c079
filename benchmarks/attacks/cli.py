"""The command line as a new user meets it: an unknown or misspelt option, a dataset path that is not there or
is written as the README writes it, --no-progress, the segment table and the help's extractor list.

Each check runs `python -m bodyblocks` as a subprocess from the repository root (as the README's commands are
run), with the heuristic extractor where a run extracts (no model to load), and its datasets root under `root`.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

from bodyblocks.runtime.files import REPO_ROOT

Target = tuple[str, bool, str]
PAGE = ("<html><head><title>Ferry timetable | Harbour News</title></head><body><nav><a href='/'>Home</a> "
        "<a href='/news'>News</a></nav><article><h1>Ferry timetable changes</h1>"
        + "".join(f"<p>The winter ferry timetable starts on Monday, paragraph {i}, with a later first sailing and "
                  "an extra crossing on Friday evenings.</p>" for i in range(5))
        + "</article><footer>Copyright Harbour News</footer></body></html>")
SUMMARY = ("bodyblocks extract: ", "1 extracted, ")


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bodyblocks", *args], capture_output=True, text=True, cwd=REPO_ROOT,
                          timeout=300, env={**os.environ, **(env or {})})


def _one_line(res: subprocess.CompletedProcess[str], *wanted: str) -> tuple[bool, str]:
    """Exit status 2, one line on stderr holding every `wanted` string, no traceback."""
    lines = res.stderr.strip().splitlines()
    met = res.returncode == 2 and len(lines) == 1 and all(w in lines[0] for w in wanted) and "Traceback" not in \
        res.stderr
    return met, f"rc {res.returncode}: {res.stderr.strip()[:200]!r}"


def _tiny_dataset(folder: Path) -> None:
    """A dataset of one page in the shared layout (pages.jsonl, html/<id>.html.gz, gold/<id>.txt)."""
    (folder / "html").mkdir(parents=True)
    (folder / "gold").mkdir()
    (folder / "html" / "p1.html.gz").write_bytes(gzip.compress(PAGE.encode("utf-8"), mtime=0))
    body = [f"The winter ferry timetable starts on Monday, paragraph {i}, with a later first sailing and an extra "
            "crossing on Friday evenings." for i in range(5)]
    (folder / "gold" / "p1.txt").write_text("\n".join(body) + "\n", encoding="utf-8")
    record = {"id": "p1", "url": None, "lang": "en", "split": "test", "html": "html/p1.html.gz",
              "gold": "gold/p1.txt", "snippets": None, "page_type": None, "labels": None, "note": None}
    (folder / "pages.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")


def scenarios(root: Path) -> list[Target]:
    pages = root / "in"
    pages.mkdir()
    (pages / "ferry.html").write_text(PAGE, encoding="utf-8")
    targets: list[Target] = []

    out = root / "out-unknown"
    res = _cli("extract", str(pages), "--out", str(out), "--bogus-option", "--extractor", "heuristic")
    met, detail = _one_line(res, "unknown option --bogus-option")
    targets.append(("cli: an unknown option is named, one line", met and not out.exists(), detail))

    res = _cli("extract", str(pages), "--out", str(root / "out-typo"), "--wokers", "1")
    targets.append(("cli: a misspelt option gets the nearest one", *_one_line(res, "did you mean --workers?")))

    res = _cli("extract", str(pages), "--wokers", "1")  # --out missing too: the unknown option is still named
    targets.append(("cli: unknown option named before a missing one", *_one_line(res, "unknown option --wokers")))

    nowhere = root / "no-datasets-root"
    res = _cli("evaluate", "../nowhere/dragnet", "--extractor", "heuristic", "--no-progress",
               env={"BODYBLOCKS_DATASETS": str(nowhere)})
    met, detail = _one_line(res, "looked in", str((REPO_ROOT / "../nowhere/dragnet").resolve()),
                            str(nowhere / "dragnet"))
    targets.append(("cli: evaluate's missing dataset names where it looked", met and "None" not in res.stderr, detail))

    datasets = root / "datasets"
    _tiny_dataset(datasets / "tiny")
    res = _cli("evaluate", "../shared/datasets/tiny", "--extractor", "heuristic", "--workers", "0", "--no-progress",
               env={"BODYBLOCKS_DATASETS": str(datasets)})
    met = res.returncode == 0 and "tiny" in res.stdout and "heuristic" in res.stdout
    targets.append(("cli: evaluate ../shared/datasets/NAME as the README", met,
                    f"rc {res.returncode}: {(res.stdout + res.stderr).strip()[-200:]!r}"))

    res = _cli("extract", str(pages), "--out", str(root / "out-quiet"), "--extractor", "heuristic", "--no-progress",
               "--workers", "1")
    noise = [ln for ln in res.stderr.splitlines() if not ln.startswith(SUMMARY)]
    met = res.returncode == 0 and noise == [] and "\r" not in res.stderr
    targets.append(("cli: --no-progress keeps stderr to the run's lines", met,
                    f"rc {res.returncode}, {len(res.stderr.splitlines())} lines, other: {noise[:2]!r}"))
    txt = (root / "out-quiet" / "ferry.txt").read_text(encoding="utf-8") if met else ""
    targets.append(("cli: a txt output starts with the headline", txt.startswith("Ferry timetable"),
                    repr(txt[:60])))

    res = _cli("segment", str(pages / "ferry.html"), "--format", "table", "--no-model")
    lines = res.stdout.splitlines()
    met = res.returncode == 0 and len(lines) > 2 and lines[1].split()[:4] == ["#", "link", "P(body)", "kept"]
    targets.append(("cli: segment's table has a header row", met, repr(lines[:2])))

    from bodyblocks.loading.registry import extractor_names

    res = _cli("evaluate", "--help")
    text = " ".join(res.stdout.split())
    missing = [n for n in extractor_names() if n not in text]
    targets.append(("cli: evaluate --help lists every extractor", res.returncode == 0 and not missing,
                    f"missing {missing}" if missing else f"{len(extractor_names())} names"))
    return targets
