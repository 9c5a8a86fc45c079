"""Screenshots of `bodyblocks annotate` for docs/ANNOTATION.md, taken with headless Chromium at 1400x900.

The server runs in this process on a dataset's pages with the shipped model's labels as the starting point and
a temporary labels folder (removed at the end), so nothing is written into the dataset. Chinese pages need a
CJK font for Chromium (`apt-get install fonts-wqy-microhei`); the script refuses to run without one. PNGs are
reduced to 256 colours to stay small.

    python -m benchmarks.annotation_screenshots                       # ../shared/datasets/gne-pages
    python -m benchmarks.annotation_screenshots --out /tmp/shots --dataset DIR --pages ID1 ID2
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.common import arguments

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = ROOT.parent / "shared" / "datasets" / "gne-pages"
MAX_BYTES = 300_000


def _driver(profile: str) -> Any:
    from selenium import webdriver

    from bodyblocks.capture.chromium import CHROMIUM_FLAGS, QUIET_FLAGS
    from bodyblocks.capture.settings import CHROMEDRIVER, CHROMIUM

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    flags = [f for f in CHROMIUM_FLAGS if f != "--headless"]
    for flag in (*flags, *QUIET_FLAGS, "--headless=new", "--window-size=1400,900", "--hide-scrollbars",
                 "--force-device-scale-factor=1", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    drv = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    drv.set_window_size(1400, 900)
    inner = drv.execute_script("return [innerWidth, innerHeight]")
    drv.set_window_size(1400 + 1400 - inner[0], 900 + 900 - inner[1])  # the viewport itself 1400x900
    return drv


def _wait(drv: Any, script: str, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not drv.execute_script(script):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def _open(drv: Any, base: str, page_id: str) -> None:
    drv.get(f"{base}/#{page_id}")
    _wait(drv, f"return typeof page !== 'undefined' && page && page.id === {page_id!r} && renderEls.length > 0",
          f"page {page_id} and its render")


def _keys(drv: Any, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(drv)
    for k in keys:
        chain.send_keys(k)
    chain.perform()
    time.sleep(0.2)


def _shot(drv: Any, path: Path) -> int:
    """A screenshot reduced to 256 colours; its size in bytes."""
    from PIL import Image

    time.sleep(0.4)  # scrolling and painting settle
    img = Image.open(io.BytesIO(drv.get_screenshot_as_png())).convert("RGB")
    small = img.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    path.parent.mkdir(parents=True, exist_ok=True)
    small.save(path, optimize=True)
    size = path.stat().st_size
    print(f"{path} {img.size[0]}x{img.size[1]} {size // 1000} KB", file=sys.stderr)
    if size > MAX_BYTES:
        raise SystemExit(f"{path}: {size} bytes, over {MAX_BYTES}")
    return size


def _kept(drv: Any) -> list[int]:
    """The blocks the model keeps (its starting labels)."""
    kept = drv.execute_script("return page.blocks.filter(b => b.model === 1).map(b => b.i)")
    if not kept:
        raise SystemExit("the model keeps no block of this page: pick another")
    return [int(i) for i in kept]


def _text(drv: Any, i: int) -> str:
    return str(drv.execute_script("return page.blocks[arguments[0]].text", i))


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, out=ROOT / "docs" / "annotation")
    ap.add_argument("--dataset", default=str(DEFAULT_DATASET))
    ap.add_argument("--pages", nargs=2, default=["gne-163-1", "gne-cmse-1"], metavar="ID",
                    help="a news page (the block list) and a government page (container selection, help)")
    args = ap.parse_args(argv)

    if not subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True).stdout.strip():
        raise SystemExit("no CJK font for Chromium: apt-get install fonts-wqy-microhei")
    import bodyblocks
    from bodyblocks.annotate.server import Annotator, make_server
    from bodyblocks.annotate.store import AnnotationStore

    out = Path(args.out)
    news, gov = args.pages
    with tempfile.TemporaryDirectory(prefix="bb-shots-") as tmp:
        store = AnnotationStore(args.dataset, Path(tmp) / "labels")  # labels elsewhere: the dataset is only read
        server = make_server(Annotator(store, bodyblocks.load()), "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        drv = _driver(str(Path(tmp) / "profile"))
        try:
            # 1. the block list beside the render, on the article: the "原标题" line the model kept is set to
            #    not body (the guidelines' rule), which marks it as differing from the model; autosaved
            _open(drv, base, news)
            kept = _kept(drv)
            original_title = next((i for i in kept if _text(drv, i).startswith("（原标题")), kept[0])
            drv.execute_script("setCur(arguments[0] + 3, {center: true}); setCur(arguments[0], {center: true})",
                               original_title)
            _keys(drv, "n", "j", "j")
            _wait(drv, "return document.body.dataset.save === 'saved'", "the autosave")
            _shot(drv, out / "annotate-blocks.png")
            # 2. container selection on the government page: c on a paragraph of the notice
            _open(drv, base, gov)
            drv.execute_script("setCur(arguments[0], {center: true})", _kept(drv)[min(4, len(_kept(drv)) - 1)])
            _keys(drv, "c")
            _shot(drv, out / "annotate-container.png")
            # 3. the keys
            _keys(drv, "\ue00c", "?")  # Escape, then ?
            _shot(drv, out / "annotate-help.png")
        finally:
            drv.quit()
            server.shutdown()
            server.server_close()
            shutil.rmtree(Path(tmp) / "profile", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
