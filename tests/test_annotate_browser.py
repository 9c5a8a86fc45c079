"""The labelling page of `bodyblocks annotate` in headless Chromium: clicks and keys label blocks, the labels are
saved (autosave and `s`), survive a reload, reach the label store and the derived gold; writes need the token."""

from __future__ import annotations

import json
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.test_capture import _MISSING  # why Chromium cannot run here, or None

from bodyblocks.annotate.server import TOKEN_HEADER, Annotator, make_server
from bodyblocks.annotate.store import AnnotationStore, block_keys
from bodyblocks.capture.chromium import CHROMIUM_FLAGS, QUIET_FLAGS
from bodyblocks.capture.settings import CHROMEDRIVER, CHROMIUM

needs_browser = pytest.mark.skipif(_MISSING is not None,
                                   reason=f"needs Debian's chromium and chromium-driver: {_MISSING}")

# Blocks of PAGE in reading order (the segmenter's): 0-2 nav, 3 headline, 4-6 article, 7-8 related, 9-10 footer.
PAGE = """<html><head><title>Harbour reopens</title></head><body>
<div id="nav"><ul><li><a href="/a">Home page link</a></li><li><a href="/b">News section link</a></li>
<li><a href="/c">Sports section link</a></li></ul></div>
<div id="main"><article><h1>The harbour reopens after the storm</h1>
<p>Ferries left the harbour on Monday morning for the first time since the storm closed it last week.</p>
<p>The port authority said the breakwater had been inspected and found sound by its engineers.</p>
<p>Freight traffic is expected to return to its usual level by the end of the month, officials said.</p>
</article>
<div class="related"><p>Related story one is here</p><p>Related story two is here</p></div></div>
<div id="footer"><p>Copyright 2024 the harbour gazette</p><p>Contact us at the address below</p></div>
</body></html>"""
ARTICLE = [3, 4, 5, 6]
MAIN = [3, 4, 5, 6, 7, 8]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, AnnotationStore, Annotator]]:
    data = tmp_path / "site"
    data.mkdir()
    (data / "p1.html").write_text(PAGE, encoding="utf-8")
    (data / "p2.html").write_text(PAGE.replace("harbour", "airport"), encoding="utf-8")
    store = AnnotationStore(data)  # labels in DATASET/annotations, the derived gold beside the pages
    app = Annotator(store, None)  # no model: every page starts with no block labelled body
    server = make_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", store, app
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[Any]:
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="bb-annotate-", dir=tmp_path)
    flags = [f for f in CHROMIUM_FLAGS if f != "--headless"]
    for flag in (*flags, *QUIET_FLAGS, "--headless=new", "--window-size=1400,900",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    drv = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    drv.set_page_load_timeout(20)
    try:
        yield drv
    finally:
        drv.quit()


def _wait(drv: Any, cond: Any, what: str, timeout: float = 8) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(drv, timeout, poll_frequency=0.05).until(lambda d: cond(d), message=what)


def _keys(drv: Any, *keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(drv)
    for k in keys:
        chain.send_keys(k)
    chain.perform()


def _shown(drv: Any) -> list[int]:
    """The blocks the list shows as body."""
    return drv.execute_script("return [...document.querySelectorAll('#blocks .b.body')].map(d => +d.dataset.i)")


def _selected(drv: Any) -> list[int]:
    return drv.execute_script("return [...document.querySelectorAll('#blocks .b.sel')].map(d => +d.dataset.i)")


def _current(drv: Any) -> list[int]:
    return drv.execute_script("return [...document.querySelectorAll('#blocks .b.cur')].map(d => +d.dataset.i)")


def _block(drv: Any, i: int) -> Any:
    from selenium.webdriver.common.by import By

    return drv.find_element(By.CSS_SELECTOR, f'#blocks .b[data-i="{i}"]')


def _open(drv: Any, url: str, blocks: int) -> None:
    drv.get(url)
    _wait(drv, lambda d: len(d.execute_script("return document.querySelectorAll('#blocks .b')")) == blocks,
          f"the page's {blocks} blocks")
    _wait(drv, lambda d: d.execute_script("return renderEls.length") > 0, "the render pane")


def _post(url: str, body: dict[str, Any], token: str | None) -> int:
    headers = {"Content-Type": "application/json", **({TOKEN_HEADER: token} if token is not None else {})}
    req = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.browser
@pytest.mark.slow
@needs_browser
def test_label_with_clicks_and_keys_save_reload(served: tuple[str, AnnotationStore, Annotator], driver: Any) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    base, store, app = served
    _open(driver, base + "/#p1", 11)
    assert driver.execute_script("return location.hash") == "#p1"
    assert _shown(driver) == [] and _current(driver) == [0]
    assert driver.execute_script("return document.body.dataset.save") == "new"

    _block(driver, 3).click()  # a click toggles the block and makes it current
    assert _shown(driver) == [3] and _current(driver) == [3]
    assert driver.execute_script("return document.body.dataset.save") == "unsaved"
    _keys(driver, "j", " ")  # move down, toggle
    assert _shown(driver) == [3, 4] and _current(driver) == [4]
    _keys(driver, "n")
    assert _shown(driver) == [3]

    _keys(driver, "c")  # the container of block 4: the <article>
    assert _selected(driver) == ARTICLE
    assert "article" in driver.find_element(By.ID, "selinfo").text
    _keys(driver, "b")
    assert _shown(driver) == ARTICLE
    _keys(driver, "c")  # wider: div#main, with the related links
    assert _selected(driver) == MAIN
    _keys(driver, "C")  # narrower again
    assert _selected(driver) == ARTICLE
    _keys(driver, Keys.ESCAPE)
    assert _selected(driver) == [] and _shown(driver) == ARTICLE

    _keys(driver, "g", "v", "j", "j")  # a visual range over the nav
    assert _selected(driver) == [0, 1, 2] and _current(driver) == [2]
    _keys(driver, "b")
    assert _shown(driver) == [0, 1, 2, *ARTICLE]
    _keys(driver, Keys.ESCAPE)

    _block(driver, 9).click()
    ActionChains(driver).key_down(Keys.SHIFT).click(_block(driver, 10)).key_up(Keys.SHIFT).perform()
    assert _selected(driver) == [9, 10] and _current(driver) == [10]
    _keys(driver, " ")  # 9 body, 10 not: the toggle makes both body
    assert _shown(driver) == [0, 1, 2, *ARTICLE, 9, 10]
    _keys(driver, "n")
    assert _shown(driver) == [0, 1, 2, *ARTICLE]

    _keys(driver, "g")  # shift+click from the cursor: the nav again, now off
    ActionChains(driver).key_down(Keys.SHIFT).click(_block(driver, 2)).key_up(Keys.SHIFT).perform()
    assert _selected(driver) == [0, 1, 2]
    _keys(driver, "n")
    assert _shown(driver) == ARTICLE

    # the side pane: a click on an element jumps to its block and toggles it; keys typed there work too
    frame = driver.find_element(By.ID, "render")
    driver.switch_to.frame(frame)
    painted = driver.execute_script("return [...document.querySelectorAll('.bb-body')].map(e => e.dataset.bb)")
    assert painted == [str(i) for i in ARTICLE]
    driver.find_element(By.CSS_SELECTOR, '[data-bb="9"]').click()
    driver.switch_to.default_content()
    assert _current(driver) == [9] and _shown(driver) == [*ARTICLE, 9]
    _keys(driver, "u")  # undo, typed with the focus in the side pane
    assert _shown(driver) == ARTICLE
    stats = driver.find_element(By.ID, "stats").text
    assert stats.startswith("body 4 / 11 blocks") and "4 differ from the model" in stats

    # autosave: about a second after the last change, without pressing anything
    _wait(driver, lambda d: d.execute_script("return document.body.dataset.save") == "saved", "the autosave")
    ann = store.load("p1")
    assert ann is not None and not ann.done
    keys = block_keys(app.view("p1").blocks)
    assert [i for i, k in enumerate(keys) if ann.labels[k]] == ARTICLE

    driver.find_element(By.ID, "done").click()  # the done box, then `s`
    _keys(driver, "s")
    _wait(driver, lambda d: store.load("p1").done, "the save marking p1 done")
    _wait(driver, lambda d: d.execute_script("return document.body.dataset.save") == "saved", "saved")
    ann = store.load("p1")
    assert [i for i, k in enumerate(keys) if ann.labels[k]] == ARTICLE and len(ann.labels) == 11
    blocks = app.view("p1").blocks
    gold = (store.dataset / "p1.txt").read_text(encoding="utf-8")
    assert gold == "\n".join(blocks[i].text.strip() for i in ARTICLE) + "\n"
    assert gold.startswith("The harbour reopens after the storm\nFerries left") and "Related" not in gold

    # a reload shows the stored labels, on the page of the hash
    driver.refresh()
    _wait(driver, lambda d: _shown(d) == ARTICLE, "the saved labels after a reload")
    assert driver.find_element(By.ID, "done").is_selected()
    assert driver.execute_script("return location.hash") == "#p1"
    assert _current(driver) == [9]  # the cursor where it was left

    # resume: without a hash the tool opens the first page not done
    _open(driver, base + "/", 11)
    assert driver.execute_script("return location.hash") == "#p2" and _shown(driver) == []
    _keys(driver, "c", "b")  # the nav's container, body
    assert _selected(driver) == [0, 1, 2] and _shown(driver) == [0, 1, 2]
    assert store.load("p2") is None  # the autosave waits a second...
    driver.refresh()  # ...but leaving the page sends the labels at once (a keepalive request)
    _wait(driver, lambda d: store.load("p2") is not None, "the save on leaving the page")
    _wait(driver, lambda d: _shown(d) == [0, 1, 2], "p2's labels after the reload")

    _keys(driver, "c", "m")  # back to the model's labels (none, without a model)
    assert _shown(driver) == []
    _keys(driver, "b", Keys.ESCAPE, "2", "?")  # kind: government; the help
    assert driver.find_element(By.ID, "help").is_displayed()
    assert driver.find_element(By.ID, "kind").get_attribute("value") == "government"
    _keys(driver, Keys.ESCAPE)
    assert not driver.find_element(By.ID, "help").is_displayed()
    _keys(driver, "D")  # done, saved, and no page is left to do
    _wait(driver, lambda d: store.load("p2").done, "p2 done")
    _wait(driver, lambda d: "all pages are done" in d.find_element(By.ID, "stats").text, "the flash")
    assert store.next_page() is None
    ann2 = store.load("p2")
    assert ann2.kind == "government" and sum(ann2.labels.values()) == 3
    assert driver.execute_script("return location.hash") == "#p2"


def test_writes_need_the_token(served: tuple[str, AnnotationStore, Annotator]) -> None:
    base, store, app = served
    body = {"labels": [1] * 11, "blocks": 11, "done": True}
    assert _post(base + "/api/page/p1", body, None) == 403
    assert _post(base + "/api/page/p1", body, "not-the-token") == 403
    assert store.load("p1") is None and not (store.dataset / "p1.txt").exists()
    assert _post(base + "/api/page/p1", body, app.token) == 200
    assert sum(store.load("p1").labels.values()) == 11
