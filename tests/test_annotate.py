"""bodyblocks annotate: the label store (keys, fingerprints, atomic files, derived gold), the dataset readers
that take the labels, and the HTTP server's rules (token, Host, ids, sizes). The browser test is
test_annotate_browser.py."""

from __future__ import annotations

import gzip
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bodyblocks.annotate.server import TOKEN_HEADER, Annotator, make_server
from bodyblocks.annotate.store import (
    AnnotationError,
    AnnotationStore,
    annotated_pages,
    apply_labels,
    block_keys,
    derived_gold,
    fingerprint,
)
from bodyblocks.page.segment import segment
from bodyblocks.training.cache import process_page
from bodyblocks.training.datasets import read_dataset
from bodyblocks.training.labels import label_page
from bodyblocks.types import Page

PAGE = """<!doctype html><html><head><title>港口新闻</title><script>var x = "脚本";</script></head><body>
<div class="nav"><a href="/">首页</a> <a href="/n">新闻</a></div>
<div class="article"><h1>长江航运恢复通航</h1><div class="info">2019-09-02 来源：本网</div>
<p>记者从长江航务管理局获悉，受强降雨影响暂停的长江航运今日恢复通航。</p>
<div>第一段<div>嵌套的块</div>第二段</div>
<p>据介绍，恢复通航后，船舶将按照调度有序通过。</p></div>
<div class="footer">版权所有 © 本网</div></body></html>"""


def _layout_dataset(root: Path, pages: dict[str, str], gold: dict[str, str] | None = None) -> Path:
    """A dataset in the shared layout (pages.jsonl + html/*.html.gz, optional gold/)."""
    (root / "html").mkdir(parents=True)
    records = []
    for pid, html in pages.items():
        (root / "html" / f"{pid}.html.gz").write_bytes(gzip.compress(html.encode("utf-8")))
        rec = {"id": pid, "url": f"http://{pid}.example/a", "lang": "zh", "split": None,
               "html": f"html/{pid}.html.gz", "gold": None, "snippets": None, "page_type": None, "labels": None,
               "note": None}
        if gold and pid in gold:
            (root / "gold").mkdir(exist_ok=True)
            (root / "gold" / f"{pid}.txt").write_text(gold[pid], encoding="utf-8")
            rec["gold"] = f"gold/{pid}.txt"
        records.append(rec)
    (root / "pages.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return root


def _body_labels(blocks: list, wanted: set[str]) -> list[int]:
    return [int(any(w in b.text for w in wanted)) for b in blocks]


def test_block_keys_are_xpaths_with_a_count_for_repeats() -> None:
    blocks = segment(PAGE).blocks
    keys = block_keys(blocks)
    assert len(set(keys)) == len(keys)
    split = [k for k, b in zip(keys, blocks, strict=True) if b.text in ("第一段", "第二段")]
    first = blocks[[b.text for b in blocks].index("第一段")]
    assert len(split) == 2 and split[1] == split[0] + "#2" and split[0] == first.xpath
    assert all(k.startswith("/html[1]/body[1]") for k in keys)


def test_save_load_and_derived_gold_in_the_dataset(tmp_path: Path) -> None:
    ds = _layout_dataset(tmp_path / "ds", {"a": PAGE, "b": PAGE.replace("长江", "珠江")})
    store = AnnotationStore(ds)
    blocks = segment(store.page("a").html).blocks
    labels = _body_labels(blocks, {"长江航运恢复通航", "记者从", "据介绍"})
    ann = store.save("a", blocks, labels, done=True, kind="news", note="测试")
    saved = json.loads((ds / "annotations" / "a.json").read_text())
    assert saved["id"] == "a" and saved["done"] and saved["kind"] == "news"
    assert [b["key"] for b in saved["blocks"]] == block_keys(blocks)
    assert [b["label"] for b in saved["blocks"]] == labels
    assert all(b["fp"] == fingerprint(x.text) for b, x in zip(saved["blocks"], blocks, strict=True))
    assert "记者" not in (ds / "annotations" / "a.json").read_text()  # no page text in a label file
    gold = (ds / "gold" / "a.txt").read_text(encoding="utf-8")
    assert gold.splitlines() == ["长江航运恢复通航",
                                 "记者从长江航务管理局获悉，受强降雨影响暂停的长江航运今日恢复通航。",
                                 "据介绍，恢复通航后，船舶将按照调度有序通过。"]
    recs = [json.loads(line) for line in (ds / "pages.jsonl").read_text().splitlines()]
    assert recs[0]["gold"] is None and recs[1]["gold"] is None  # pages.jsonl is never rewritten
    pages = {p.id: p for p in read_dataset(ds)}  # the readers take the gold the annotation names
    assert pages["a"].gold == gold and pages["b"].gold is None
    assert store.load("a").labels == ann.labels
    assert store.next_page() == "b" and store.next_page("b") == "b"
    # a second save rewrites the gold the tool wrote
    labels[blocks.index(next(b for b in blocks if "据介绍" in b.text))] = 0
    store.save("a", blocks, labels, done=True)
    assert "据介绍" not in (ds / "gold" / "a.txt").read_text(encoding="utf-8")
    assert store.load("a").kind == "news"  # kept from the earlier save
    assert not list(ds.rglob(".*.tmp"))


def test_gold_follows_the_done_mark_and_kind_can_be_unset(tmp_path: Path) -> None:
    ds = _layout_dataset(tmp_path / "ds", {"a": PAGE})
    store = AnnotationStore(ds)
    blocks = segment(store.page("a").html).blocks
    labels = _body_labels(blocks, {"记者从"})
    store.save("a", blocks, labels, done=False, kind="news")
    assert not (ds / "gold" / "a.txt").exists()  # an autosave of a page in progress makes no gold
    store.save("a", blocks, labels, done=True)
    assert (ds / "gold" / "a.txt").is_file() and store.load("a").written_gold == "gold/a.txt"
    assert store.load("a").kind == "news"
    store.save("a", blocks, labels, done=False, kind=None)  # un-done: the tool's gold goes, kind unset
    assert not (ds / "gold" / "a.txt").exists() and store.load("a").written_gold is None
    assert store.load("a").kind is None
    assert json.loads((ds / "pages.jsonl").read_text().splitlines()[0])["gold"] is None


def test_concurrent_saves_all_land(tmp_path: Path) -> None:
    pages = {f"p{i}": PAGE for i in range(12)}
    ds = _layout_dataset(tmp_path / "ds", pages)
    store = AnnotationStore(ds)
    blocks = segment(PAGE).blocks
    labels = _body_labels(blocks, {"记者从"})
    errors: list[BaseException] = []

    def save(pid: str) -> None:
        try:
            store.save(pid, blocks, labels, done=True)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(pid,)) for pid in pages]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    recs = [json.loads(line) for line in (ds / "pages.jsonl").read_text().splitlines()]
    assert all(r["gold"] is None for r in recs) and len(recs) == 12
    assert all(p.gold and p.gold.startswith("记者从") for p in read_dataset(ds))
    assert all(store.load(pid).done for pid in pages)


def test_pages_whose_files_leave_the_dataset_are_left_out(tmp_path: Path) -> None:
    ds = _layout_dataset(tmp_path / "ds", {"a": PAGE})
    recs = [json.loads(line) for line in (ds / "pages.jsonl").read_text().splitlines()]
    recs.append({**recs[0], "id": "../../escape"})
    recs.append({**recs[0], "id": "b", "html": "../outside.html.gz"})
    recs.append({**recs[0], "id": "c", "gold": "/etc/passwd"})
    (ds / "pages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert AnnotationStore(ds).ids() == ["a"]


def test_gold_the_tool_did_not_write_is_kept(tmp_path: Path) -> None:
    ds = _layout_dataset(tmp_path / "ds", {"a": PAGE}, gold={"a": "原来的金标准\n"})
    store = AnnotationStore(ds)
    blocks = segment(store.page("a").html).blocks
    store.save("a", blocks, _body_labels(blocks, {"记者从"}), done=True)
    assert (ds / "gold" / "a.txt").read_text(encoding="utf-8") == "原来的金标准\n"
    assert (ds / "annotations" / "a.json").is_file()


def test_a_plain_folder_gets_name_txt(tmp_path: Path) -> None:
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "p1.html").write_text(PAGE, encoding="utf-8")
    store = AnnotationStore(folder)
    assert store.ids() == ["p1"]
    blocks = segment(store.page("p1").html).blocks
    store.save("p1", blocks, _body_labels(blocks, {"记者从"}), done=True)
    assert (folder / "p1.txt").read_text(encoding="utf-8").startswith("记者从")
    page = next(iter(read_dataset(folder)))
    assert page.gold.startswith("记者从") and page.block_labels is not None


def test_labels_elsewhere_leave_the_dataset_untouched(tmp_path: Path) -> None:
    ds = _layout_dataset(tmp_path / "ds", {"a": PAGE})
    before = sorted((p.relative_to(ds), p.stat().st_mtime_ns) for p in ds.rglob("*"))
    store = AnnotationStore(ds, tmp_path / "labels")
    blocks = segment(store.page("a").html).blocks
    store.save("a", blocks, _body_labels(blocks, {"记者从", "据介绍"}), done=True, kind="government")
    assert sorted((p.relative_to(ds), p.stat().st_mtime_ns) for p in ds.rglob("*")) == before
    [(page, ann)] = list(annotated_pages(ds, tmp_path / "labels"))
    assert page.id == "a" and ann.kind == "government"
    cp = process_page(page)
    assert cp.method == "blocks" and cp.gold_coverage == 1.0
    assert derived_gold(cp.blocks, cp.labels).splitlines()[0].startswith("记者从")


def test_bad_saves_are_refused(tmp_path: Path) -> None:
    store = AnnotationStore(_layout_dataset(tmp_path / "ds", {"a": PAGE}))
    blocks = segment(store.page("a").html).blocks
    for labels, kwargs in (([1], {}), ([2] * len(blocks), {}), ([0] * len(blocks), {"kind": "blog"})):
        with pytest.raises(AnnotationError):
            store.save("a", blocks, labels, **kwargs)
    with pytest.raises(AnnotationError, match="no page"):
        store.path_of("../../etc/passwd")
    assert not (tmp_path / "ds" / "annotations").exists()


def test_a_changed_page_is_noticed(tmp_path: Path) -> None:
    ds = _layout_dataset(tmp_path / "ds", {"a": PAGE})
    store = AnnotationStore(ds)
    blocks = segment(store.page("a").html).blocks
    ann = store.save("a", blocks, _body_labels(blocks, {"记者从"}), done=True)
    changed = segment(PAGE.replace("据介绍", "另据介绍").replace("<p>记者从", "<p>新增一段。</p><p>记者从")).blocks
    labels, check = apply_labels(changed, ann)
    # the new <p> takes p[1]'s key (changed: its label is not used); the first paragraph moves to p[2]'s key and
    # keeps its label by its text; the edited last one is p[3]: missing
    assert (check.changed, check.missing, check.moved, check.exact) == (1, 1, 1, False)
    assert len(labels) == len(changed)
    assert [b.text[:3] for b, y in zip(changed, labels, strict=True) if y] == ["记者从"]
    page = Page(id="a", html=b"", block_labels=ann)
    assert label_page(page, changed).method == "none"  # not exact: training leaves the page out
    assert label_page(page, blocks).method == "blocks"


def test_datasets_read_done_annotations_and_training_takes_them(tmp_path: Path) -> None:
    ds = _layout_dataset(tmp_path / "ds", {"a": PAGE, "b": PAGE})
    store = AnnotationStore(ds)
    blocks = segment(store.page("a").html).blocks
    labels = _body_labels(blocks, {"记者从", "第二段"})
    store.save("a", blocks, labels, done=True)
    store.save("b", blocks, labels, done=False)  # not done: not a reference yet
    pages = {p.id: p for p in read_dataset(ds)}
    assert pages["a"].block_labels is not None and pages["b"].block_labels is None
    cp = process_page(pages["a"])
    assert cp.method == "blocks" and cp.labels == labels
    assert process_page(pages["b"]).method == "none"  # not done: no labels and no derived gold either
    assert not (ds / "gold" / "b.txt").exists()


# ------------------------------------------------------------------------------------------------- server
@pytest.fixture
def served(tmp_path: Path):  # noqa: ANN201 - yields (base url, app, dataset)
    ds = _layout_dataset(tmp_path / "ds", {"a": PAGE, "b": PAGE})
    app = Annotator(AnnotationStore(ds), extractor=None)
    server = make_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", app, ds
    server.shutdown()
    server.server_close()


def _call(url: str, data: dict | bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    body = data if isinstance(data, bytes) or data is None else json.dumps(data).encode()
    req = urllib.request.Request(url, data=body, headers=headers or {}, method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_api_serves_pages_and_saves_with_the_token(served) -> None:  # noqa: ANN001
    base, app, ds = served
    status, pages = _call(base + "/api/pages")
    assert status == 200 and [p["id"] for p in pages["pages"]] == ["a", "b"] and pages["next"] == "a"
    status, page = _call(base + "/api/page/a")
    blocks = page["blocks"]
    assert status == 200 and blocks and all(b["label"] == 0 for b in blocks)  # no model: nothing starts as body
    labels = [int("记者从" in b["text"]) for b in blocks]
    bad = _call(base + "/api/page/a", {"labels": labels})
    assert bad[0] == 403 and not (ds / "annotations").exists()
    wrong = _call(base + "/api/page/a", {"labels": labels}, {TOKEN_HEADER: "x" + app.token})
    assert wrong[0] == 403
    status, saved = _call(base + "/api/page/a", {"labels": labels, "blocks": len(labels), "done": True, "kind": "news"},
                          {TOKEN_HEADER: app.token})
    assert status == 200 and saved["body_blocks"] == 1 and saved["next"] == "b"
    status, page = _call(base + "/api/page/a")
    assert [b["label"] for b in page["blocks"]] == labels and page["done"] and page["kind"] == "news"
    assert _call(base + "/api/pages")[1]["next"] == "b"


def test_the_api_refuses_what_it_should(served) -> None:  # noqa: ANN001
    base, app, _ = served
    token = {TOKEN_HEADER: app.token}
    assert _call(base + "/api/page/..%2F..%2Fpages.jsonl")[0] == 404
    assert _call(base + "/api/page/nope")[0] == 404
    assert _call(base + "/nothing")[0] == 404
    n = len(_call(base + "/api/page/a")[1]["blocks"])
    assert _call(base + "/api/page/a", {"labels": [1]}, token)[0] == 400
    assert _call(base + "/api/page/a", {"labels": [0] * n, "blocks": n + 1}, token)[0] == 400
    assert _call(base + "/api/page/a", b"not json", token)[0] == 400
    assert _call(base + "/api/page/a", b"[1, 2]", token)[0] == 400
    assert _call(base + "/api/page/a", {"labels": [0] * n, "done": "false"}, token)[0] == 400
    assert _call(base + "/api/page/a", {"labels": [0] * n}, {TOKEN_HEADER: "é"})[0] == 403
    big = urllib.request.Request(base + "/api/page/a", data=b"{}", method="POST",
                                 headers={**token, "Content-Length": str(10**9)})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(big, timeout=30)
    assert err.value.code == 413
    rebind = urllib.request.Request(base + "/api/pages", headers={"Host": "attacker.example:80"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(rebind, timeout=30)
    assert err.value.code == 403


def test_stalled_clients_are_bounded_and_let_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    import time

    from bodyblocks.annotate import server as server_module

    monkeypatch.setattr(server_module, "CLIENT_TIMEOUT_S", 0.5, raising=False)
    monkeypatch.setattr(server_module, "MAX_CLIENTS", 3, raising=False)
    ds = _layout_dataset(tmp_path / "ds", {"a": PAGE})
    server = make_server(Annotator(AnnotationStore(ds), extractor=None), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = server.server_address[:2]
    before = threading.active_count()
    try:
        stalled = [socket.create_connection(address, timeout=5) for _ in range(3)]  # connect, send nothing
        time.sleep(0.2)
        assert threading.active_count() <= before + 3
        extra = socket.create_connection(address, timeout=5)  # one more: refused at once, no thread for it
        assert extra.recv(100).startswith(b"HTTP/1.1 503")
        extra.close()
        assert all(s.recv(100) == b"" for s in stalled)  # the stalled ones are let go after the timeout
        deadline = time.monotonic() + 5
        while threading.active_count() > before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert threading.active_count() <= before
        host = f"127.0.0.1:{address[1]}"
        with urllib.request.urlopen(urllib.request.Request(f"http://{host}/api/pages"), timeout=5) as resp:
            assert resp.status == 200  # served again once they are gone
        for s in stalled:
            s.close()
    finally:
        server.shutdown()
        server.server_close()


def test_the_hosts_a_request_may_name() -> None:
    import socket

    from bodyblocks.annotate.server import _allowed_hosts

    local = _allowed_hosts("127.0.0.1", 8765)
    assert {"127.0.0.1:8765", "localhost:8765"} <= local and "example.com:8765" not in local
    everywhere = _allowed_hosts("0.0.0.0", 8765)
    assert f"{socket.gethostname()}:8765" in everywhere and "example.com:8765" not in everywhere


def test_the_render_marks_each_blocks_own_element() -> None:
    """A hidden sibling is not counted in the walk's xpaths: the marks come from the walk's elements."""
    from lxml import html as lxml_html

    from bodyblocks.annotate.server import make_view

    page = ("<html><body><form id='aspnetForm'><div style='display:none'>hidden</div><div>first visible</div>"
            "<div>second visible</div><p><input value='x'> text by a control</p></form></body></html>")
    view = make_view("x", page, None, None)
    root = lxml_html.fromstring(view.render)
    marked = {int(i): el.text_content().strip() for el in root.iter() if el.get("data-bb")
              for i in el.get("data-bb").split()}
    assert [b.text for b in view.blocks] == ["first visible", "second visible", "text by a control"]
    assert marked == {0: "first visible", 1: "second visible", 2: "text by a control"}
    assert b"<input" not in view.render and b"<form" not in view.render


def test_the_render_has_no_scripts_and_marks_blocks(served) -> None:  # noqa: ANN001
    base, _, _ = served
    with urllib.request.urlopen(base + "/render/a", timeout=30) as resp:
        html = resp.read().decode("utf-8")
        csp = resp.headers["Content-Security-Policy"]
    assert "<script" not in html.lower() and "脚本" not in html and " href=" not in html  # links go nowhere
    assert "default-src 'none'" in csp
    assert 'data-bb="' in html and "长江航运恢复通航" in html
    with urllib.request.urlopen(base + "/", timeout=30) as resp:
        page = resp.read().decode("utf-8")
    assert "X-Bodyblocks-Token" in page


def test_the_project_labels_of_gne_pages_fit_the_segmenter(shared_datasets: Path) -> None:
    """data/annotations/gne-pages holds every page of gne-pages, done, and fits today's blocks exactly
    (a segmenter change that moves blocks must re-check these labels)."""
    labels = Path(__file__).resolve().parents[1] / "data" / "annotations" / "gne-pages"
    pairs = list(annotated_pages(shared_datasets / "gne-pages", labels))
    assert len(pairs) == 62
    for page, ann in pairs:
        labels_now, check = apply_labels(segment(page.html).blocks, ann)
        assert check.exact, page.id
        assert any(labels_now) and ann.kind in ("news", "government", "other")
    assert sum(ann.kind == "government" for _, ann in pairs) >= 5
