"""The labelling page that `bodyblocks annotate` serves: one HTML document with its script and style inline."""

from __future__ import annotations

import json

_PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bodyblocks annotate</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:0;display:flex;flex-direction:column;height:100vh}
header{padding:6px 12px;background:#223;color:#fff;display:flex;gap:12px;align-items:center;flex-wrap:wrap}
header select,header button,header input{font:inherit}
main{flex:1;display:grid;grid-template-columns:1fr 1fr;min-height:0}
#blocks{overflow:auto;padding:8px}
#render{width:100%;height:100%;border:0;border-left:1px solid #ccc}
.b{padding:3px 6px;margin:2px 0;border-left:5px solid #ccc;color:#555;white-space:pre-wrap;cursor:pointer}
.b.body{border-color:#2a7;background:#e9f8ef;color:#000}
.b.cur{outline:2px solid #36f}
.b.sel{background:#eef}
.b.body.sel{background:#cfe}
.path{font:10px monospace;color:#999;display:block}
.p{float:right;font:11px monospace;color:#999}
#status{font-size:12px;opacity:.85}
</style></head><body>
<header>
  <b>bodyblocks annotate</b>
  <select id="pagesel" title="page"></select>
  <button id="prev" title="previous page ([)">&larr;</button>
  <button id="next" title="next page (])">&rarr;</button>
  <label>kind <select id="kind"><option value="">?</option></select></label>
  <label><input type="checkbox" id="done"> done</label>
  <button id="save" title="save (s)">save</button>
  <span id="status"></span>
</header>
<main>
  <section id="blocks"></section>
  <iframe id="render" sandbox="allow-same-origin" title="the page"></iframe>
</main>
<script>
const TOKEN = __TOKEN__;
let page = null, cur = 0, dirty = false, ids = [];
const $ = (id) => document.getElementById(id);

async function api(path, opts) {
  const r = await fetch(path, opts);
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}
function status(msg) { $("status").textContent = msg; }

async function loadList(selectId) {
  const j = await api("/api/pages");
  ids = j.pages.map(p => p.id);
  const sel = $("pagesel");
  sel.innerHTML = "";
  for (const p of j.pages) {
    const o = document.createElement("option");
    o.value = p.id;
    o.textContent = (p.done ? "\u2713 " : p.labelled ? "\u2026 " : "  ") + p.id;
    sel.appendChild(o);
  }
  status(`${j.done} of ${j.pages.length} done`);
  return selectId || j.next || ids[0];
}

async function openPage(id) {
  if (dirty && !confirm("Unsaved labels on this page: leave it?")) { $("pagesel").value = page.id; return; }
  page = await api("/api/page/" + encodeURIComponent(id));
  dirty = false; cur = 0;
  $("pagesel").value = id;
  const kind = $("kind");
  kind.innerHTML = '<option value="">?</option>' + page.kinds.map(k => `<option>${k}</option>`).join("");
  kind.value = page.kind || "";
  $("done").checked = page.done;
  drawBlocks();
  $("render").src = "/render/" + encodeURIComponent(id);
  history.replaceState(null, "", "#" + encodeURIComponent(id));
}

function drawBlocks() {
  const box = $("blocks");
  box.innerHTML = "";
  for (const b of page.blocks) {
    const d = document.createElement("div");
    d.className = "b" + (b.label ? " body" : "") + (b.i === cur ? " cur" : "");
    d.dataset.i = b.i;
    const p = document.createElement("span"); p.className = "p"; p.textContent = b.p.toFixed(2);
    const path = document.createElement("span"); path.className = "path"; path.textContent = b.path.slice(-100);
    d.append(p, path, document.createTextNode(b.text));
    d.addEventListener("click", () => { setCur(b.i); toggle([b.i]); });
    box.appendChild(d);
  }
}

function blockDiv(i) { return $("blocks").children[i]; }
function setCur(i) {
  if (!page.blocks.length) return;
  i = Math.max(0, Math.min(page.blocks.length - 1, i));
  blockDiv(cur)?.classList.remove("cur");
  cur = i;
  const d = blockDiv(cur); d.classList.add("cur"); d.scrollIntoView({block: "nearest"});
}
function setLabels(idx, value) {
  for (const i of idx) {
    page.blocks[i].label = value;
    blockDiv(i).classList.toggle("body", !!value);
  }
  dirty = true; paintRender(); status("unsaved");
}
function toggle(idx) { setLabels(idx, page.blocks[idx[0]].label ? 0 : 1); }

function paintRender() {
  const doc = $("render").contentDocument;
  if (!doc || !doc.body) return;
  let st = doc.getElementById("bb-style");
  if (!st) {
    st = doc.createElement("style"); st.id = "bb-style";
    st.textContent = ".bb-body{outline:2px solid #2a7 !important;background:#e9f8ef !important}";
    doc.head.appendChild(st);
  }
  for (const el of doc.querySelectorAll("[data-bb]")) {
    const on = el.dataset.bb.split(" ").some(i => page.blocks[+i] && page.blocks[+i].label);
    el.classList.toggle("bb-body", on);
  }
}
$("render").addEventListener("load", paintRender);

async function save() {
  const body = {labels: page.blocks.map(b => b.label), blocks: page.blocks.length, done: $("done").checked,
                kind: $("kind").value || null, note: page.note || ""};
  const j = await api("/api/page/" + encodeURIComponent(page.id),
    {method: "POST", headers: {"Content-Type": "application/json", "X-Bodyblocks-Token": TOKEN},
     body: JSON.stringify(body)});
  dirty = false;
  await loadList(page.id);
  $("pagesel").value = page.id;
  status(`saved ${j.saved}: ${j.body_blocks} body blocks` + (j.done ? ", done" : ""));
  return j;
}

document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "SELECT" || e.target.tagName === "INPUT") return;
  const k = e.key;
  if (k === "j" || k === "ArrowDown") { setCur(cur + 1); e.preventDefault(); }
  else if (k === "k" || k === "ArrowUp") { setCur(cur - 1); e.preventDefault(); }
  else if (k === " " || k === "Enter") { toggle([cur]); e.preventDefault(); }
  else if (k === "b") setLabels([cur], 1);
  else if (k === "n") setLabels([cur], 0);
  else if (k === "s") { save().catch(err => status("error: " + err.message)); e.preventDefault(); }
  else if (k === "]") go(1);
  else if (k === "[") go(-1);
});
function go(step) {
  const i = ids.indexOf(page.id) + step;
  if (i >= 0 && i < ids.length) openPage(ids[i]).catch(err => status("error: " + err.message));
}
$("pagesel").addEventListener("change", (e) => openPage(e.target.value).catch(err => status("error: " + err.message)));
$("prev").addEventListener("click", () => go(-1));
$("next").addEventListener("click", () => go(1));
$("save").addEventListener("click", () => save().catch(err => status("error: " + err.message)));
$("done").addEventListener("change", () => { dirty = true; });
$("kind").addEventListener("change", () => { dirty = true; });
window.addEventListener("beforeunload", (e) => { if (dirty) { e.preventDefault(); e.returnValue = ""; } });

(async () => {
  const wanted = decodeURIComponent(location.hash.slice(1)) || null;
  const first = await loadList(wanted);
  await openPage(first);
})().catch(err => status("error: " + err.message));
</script>
</body></html>
"""


def index_html(token: str) -> str:
    """The labelling page with this run's write token (a JS string literal)."""
    return _PAGE.replace("__TOKEN__", json.dumps(token))
