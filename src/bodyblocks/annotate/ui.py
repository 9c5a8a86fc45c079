"""The labelling page that `bodyblocks annotate` serves: one HTML document with its script and style inline.

The page (the server's CSP allows inline script and style only, nothing is loaded from elsewhere):
  - the blocks of one page in reading order: text, tag path, the model's P(body); body blocks green, the
    current block outlined, selected blocks tinted, a block whose label differs from the model's marked;
  - keys and clicks: j/k move, space toggles, b/n set body / not body, m the model's label, u undo;
    c selects the current block's container (again: the next ancestor that holds more blocks, C narrows back),
    v starts a range that j/k extend, shift+click selects a range, Escape clears; the labelling keys then
    apply to the whole selection; ? shows the keys;
  - the side pane: the page as rendered by /render/<id> (sandboxed, no scripts), its blocks' elements (data-bb)
    painted from the labels; a click there jumps to and toggles that element's blocks;
  - saving: 1 s after the last change, before another page opens and when the tab is hidden or closed (a
    keepalive request), and with s / the save button; the done box marks the page done (d toggles it,
    D marks it done and opens the next page not done, } opens the next page not done);
  - resume: the page named by the URL's hash, else the first page not done; the cursor's block per page is
    remembered in localStorage.
Write requests carry the run's token (X-Bodyblocks-Token).
"""

from __future__ import annotations

import json

AUTOSAVE_MS = 1000  # a change is saved this long after the last one

_PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bodyblocks annotate</title>
<style>
:root{--body:#1e9a55;--bodybg:#e3f6ea;--cur:#2f5fff;--sel:rgba(47,95,255,.13);--muted:#7a7f8a}
html,body{overflow:hidden}
body{font:14px/1.45 system-ui,sans-serif;margin:0;display:flex;flex-direction:column;height:100vh;color:#222}
header{padding:6px 12px;background:#1f2433;color:#fff;display:flex;gap:10px;align-items:center;flex-wrap:wrap}
header select,header button,header input{font:inherit;font-size:13px}
header button{cursor:pointer}
header .sep{opacity:.35}
#note{width:11em}
#stats{font-size:13px}
#savestate{font-size:12px;padding:1px 7px;border-radius:9px;background:#2f3a55}
#savestate.unsaved{background:#b7791f}
#savestate.saving{background:#4a5a85}
#savestate.error{background:#c53030}
#savestate.saved{background:#276749}
#progress{font-size:12px;opacity:.8}
main{flex:1;display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);min-height:0}
main.norender{grid-template-columns:minmax(0,1fr)}
main.norender #renderbox{display:none}
#left{display:flex;flex-direction:column;min-height:0;min-width:0}
#blocks{overflow-y:auto;overflow-x:hidden;padding:6px 8px 40px;flex:1}
#selinfo{font-size:12px;padding:3px 10px;background:#eef2ff;color:#223;border-bottom:1px solid #d5dcf5;min-height:18px}
#selinfo:empty::before{content:"no selection \00b7  c: the block's container \00b7  v or shift+click: a range";
  color:var(--muted)}
#legend{font-size:11.5px;color:var(--muted);padding:3px 10px;border-top:1px solid #e3e3e3;background:#fafafa}
#legend kbd,#help kbd{font:11px monospace;background:#eee;border:1px solid #ccc;border-radius:3px;padding:0 3px;
  color:#222}
#renderbox{position:relative;border-left:1px solid #ccc;min-height:0}
#render{width:100%;height:100%;border:0;display:block}
.b{position:relative;padding:3px 8px 3px 8px;margin:2px 0;border-left:6px solid #cfd2d8;color:#555;
  white-space:pre-wrap;word-break:break-word;cursor:pointer;border-radius:2px;user-select:none}
.b:hover{background:#f4f5f8}
.b.body{border-left-color:var(--body);background:var(--bodybg);color:#111}
.b.h{font-weight:600}
.b.cur{outline:2px solid var(--cur);outline-offset:-1px}
.b.sel{box-shadow:inset -6px 0 0 var(--cur),inset 0 0 0 999px var(--sel)}
.b.diff .num::after{content:" \270E";color:#b7791f}
.meta{display:flex;gap:8px;align-items:center;font:10.5px monospace;color:#999}
.meta .path{flex:1;min-width:0;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;direction:rtl;text-align:left}
.meta .num{color:#aaa}
.pb{display:inline-flex;align-items:center;gap:3px}
.pb i{display:inline-block;width:34px;height:5px;background:#e2e4e8;border-radius:3px;overflow:hidden}
.pb i b{display:block;height:100%;background:#7c8ba8}
.pb.hi i b{background:var(--body)}
.empty{color:var(--muted);padding:20px}
#help{position:fixed;inset:60px auto auto 50%;transform:translateX(-50%);background:#fff;border:1px solid #bbb;
  box-shadow:0 8px 30px rgba(0,0,0,.25);border-radius:6px;padding:14px 20px;z-index:10;width:640px;
  font-size:13px;display:none}
#help.on{display:block}
#help h3{margin:2px 0 8px;font-size:15px}
#help table{border-collapse:collapse;width:100%}
#help td{padding:2px 6px;vertical-align:top}
#help td:first-child{white-space:nowrap;width:34%}
#help .sw{display:inline-block;width:12px;height:12px;vertical-align:-2px;margin-right:4px;border-radius:2px}
</style></head><body>
<header>
  <b>bodyblocks annotate</b>
  <select id="pagesel" title="page (the mark: &#10003; done, &hellip; labelled)"></select>
  <button id="prev" title="previous page ([)">&larr;</button>
  <button id="next" title="next page (])">&rarr;</button>
  <span class="sep">|</span>
  <label>kind <select id="kind" title="the page's kind (1 news, 2 government, 3 other, 0 unset)">
    <option value="">?</option></select></label>
  <input id="note" placeholder="note" title="a note on the page, e.g. 'no body'" maxlength="2000">
  <label title="mark the page done (d)"><input type="checkbox" id="done"> done</label>
  <button id="save" title="save now (s)">save</button>
  <button id="donenext" title="mark done, save, open the next page not done (D)">done &rarr; next</button>
  <span class="sep">|</span>
  <span id="stats"></span>
  <span id="savestate"></span>
  <span id="progress"></span>
  <button id="helpbtn" title="the keys (?)" style="margin-left:auto">? keys</button>
</header>
<main id="main">
  <section id="left">
    <div id="selinfo"></div>
    <section id="blocks" tabindex="-1"></section>
    <div id="legend"><kbd>j</kbd>/<kbd>k</kbd> move &middot; <kbd>space</kbd> toggle &middot;
      <kbd>b</kbd>/<kbd>n</kbd> body / not &middot; <kbd>c</kbd> container &middot; <kbd>v</kbd> range &middot;
      <kbd>s</kbd> save &middot; <kbd>D</kbd> done &rarr; next &middot; <kbd>?</kbd> keys</div>
  </section>
  <section id="renderbox"><iframe id="render" sandbox="allow-same-origin" title="the page"></iframe></section>
</main>
<div id="help" role="dialog" aria-label="keys">
  <h3>Keys</h3>
  <table>
    <tr><td><kbd>j</kbd> <kbd>k</kbd> / <kbd>&darr;</kbd> <kbd>&uarr;</kbd></td><td>next / previous block
      (<kbd>PgDn</kbd> <kbd>PgUp</kbd> by 10, <kbd>g</kbd> <kbd>G</kbd> first / last)</td></tr>
    <tr><td><kbd>space</kbd> <kbd>Enter</kbd> / click</td><td>toggle body / not body (the selection: all body,
      or all not body when all were body)</td></tr>
    <tr><td><kbd>b</kbd> <kbd>n</kbd></td><td>body / not body (the current block or the selection)</td></tr>
    <tr><td><kbd>m</kbd></td><td>back to the model's labels (current block or selection)</td></tr>
    <tr><td><kbd>c</kbd></td><td>select the current block's container (the parent element of its xpath);
      again: the next ancestor that holds more blocks; <kbd>C</kbd> narrows back</td></tr>
    <tr><td><kbd>v</kbd> / shift+click</td><td>a range: <kbd>v</kbd> starts it at the current block and
      <kbd>j</kbd>/<kbd>k</kbd> extend it (<kbd>v</kbd> again ends); shift+click selects up to the clicked
      block</td></tr>
    <tr><td><kbd>Esc</kbd></td><td>clear the selection (and close this help)</td></tr>
    <tr><td><kbd>u</kbd> / <kbd>Ctrl</kbd>+<kbd>z</kbd></td><td>undo the last change of labels on this page</td></tr>
    <tr><td><kbd>s</kbd></td><td>save now (changes are also saved 1 s after the last one and when you leave
      the page)</td></tr>
    <tr><td><kbd>d</kbd> / <kbd>D</kbd></td><td>toggle the done box / mark done, save and open the next page
      not done</td></tr>
    <tr><td><kbd>[</kbd> <kbd>]</kbd> / <kbd>}</kbd></td><td>previous / next page in the list / next page
      not done</td></tr>
    <tr><td><kbd>1</kbd> <kbd>2</kbd> <kbd>3</kbd> <kbd>0</kbd></td><td>kind: news / government / other /
      unset</td></tr>
    <tr><td><kbd>r</kbd></td><td>hide / show the rendered page</td></tr>
    <tr><td>click in the page</td><td>jump to and toggle the blocks of the element clicked</td></tr>
    <tr><td>colours</td><td><span class="sw" style="background:var(--body)"></span>body
      <span class="sw" style="background:#cfd2d8;margin-left:10px"></span>not body
      <span class="sw" style="outline:2px solid var(--cur);margin-left:10px"></span>current
      <span class="sw" style="background:rgba(47,95,255,.25);box-shadow:inset -4px 0 0 var(--cur);margin-left:10px">
      </span>selected
      <span style="color:#b7791f;margin-left:10px">&#9998;</span> differs from the model</td></tr>
  </table>
</div>
<script>
"use strict";
const TOKEN = __TOKEN__;
const AUTOSAVE_MS = __AUTOSAVE_MS__;
const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;

let page = null;          // the page as /api/page/<id> gave it; its blocks' labels are edited in place
let xpaths = [];          // each block's xpath (its key without #n)
let cur = 0;              // the current block
let sel = new Set();      // the selected blocks
let selMode = null;       // null, "container", "visual" (j/k extend it) or "range"
let anchor = 0;           // where a range starts
let level = 0, levels = [];  // container selection: steps above the block's parent; the levels before
let undo = [];            // per change: [[block, old label], ...]
let gen = 0, savedGen = 0;  // changes made / changes saved on this page
let timer = null, saving = Promise.resolve(), saveError = null, savedAt = null;
let ids = [], listInfo = {}, nextTodo = null, datasetName = "";
let renderEls = [];       // the render's [data-bb] elements with their block indices

const dirty = () => gen !== savedGen;

async function api(path, opts) {
  const r = await fetch(path, opts);
  let j = null;
  try { j = await r.json(); } catch (e) { j = {}; }
  if (!r.ok) throw new Error(j.error || r.statusText || ("HTTP " + r.status));
  return j;
}

// ------------------------------------------------------------------------------------------ pages list
async function loadList(wanted) {
  const j = await api("/api/pages");
  datasetName = j.dataset;
  ids = j.pages.map(p => p.id);
  listInfo = {};
  for (const p of j.pages) listInfo[p.id] = p;
  nextTodo = j.next;
  drawList();
  return (wanted && listInfo[wanted]) ? wanted : (j.next || ids[0]);
}
function drawList() {
  const s = $("pagesel"), keep = page ? page.id : s.value;
  s.innerHTML = "";
  for (const id of ids) {
    const p = listInfo[id], o = document.createElement("option");
    o.value = id;
    const mark = p.done ? "\u2713 " : p.labelled ? "\u2026 " : "\u2003 ";
    o.textContent = mark + id + (p.kind ? "  (" + p.kind + ")" : "");
    s.appendChild(o);
  }
  if (keep) s.value = keep;
  const done = ids.filter(id => listInfo[id].done).length;
  $("progress").textContent = `${done} of ${ids.length} pages done`;
}

// ------------------------------------------------------------------------------------------ one page
async function openPage(id) {
  if (page && dirty()) {
    try { await save(); }
    catch (e) {
      if (!confirm("Saving this page failed (" + e.message + "). Leave it anyway?")) {
        $("pagesel").value = page.id;
        return;
      }
    }
  }
  const p = await api("/api/page/" + enc(id));
  page = p; gen = savedGen = 0; leftGen = -1; undo = []; saveError = null; savedAt = p.updated || null;
  xpaths = p.blocks.map(b => b.key.replace(/#\d+$/, ""));
  clearSel();
  $("pagesel").value = id;
  const kind = $("kind");
  kind.innerHTML = '<option value="">?</option>' + p.kinds.map(k => `<option>${k}</option>`).join("");
  kind.value = p.kind || "";
  $("done").checked = p.done;
  $("note").value = p.note || "";
  drawBlocks();
  renderEls = [];
  $("render").src = "/render/" + enc(id);
  history.replaceState(null, "", "#" + enc(id));
  const stored = +(localStorage.getItem(curKey()) || 0);
  cur = 0;
  setCur(stored < p.blocks.length ? stored : 0, {center: true});
  updateStats();
}
function curKey() { return "bodyblocks-cur:" + datasetName + ":" + (page ? page.id : ""); }

function drawBlocks() {
  const box = $("blocks");
  box.innerHTML = "";
  if (!page.blocks.length) {
    box.innerHTML = '<div class="empty">This page has no text blocks.</div>';
    return;
  }
  const minDepth = Math.min(...page.blocks.map(b => b.depth));
  const frag = document.createDocumentFragment();
  for (const b of page.blocks) {
    const d = document.createElement("div");
    d.className = "b" + (b.heading ? " h" : "");
    d.dataset.i = b.i;
    d.style.marginLeft = (Math.min(b.depth - minDepth, 12) * 6) + "px";
    const meta = document.createElement("div"); meta.className = "meta";
    const num = document.createElement("span"); num.className = "num"; num.textContent = "#" + b.i;
    const path = document.createElement("span"); path.className = "path";
    path.textContent = "\u200e" + b.path + "\u200e";
    path.title = b.key;
    const pb = document.createElement("span"); pb.className = "pb" + (b.p >= 0.5 ? " hi" : "");
    pb.title = "the model's P(body)";
    const bar = document.createElement("i"), fill = document.createElement("b");
    fill.style.width = Math.round(b.p * 100) + "%"; bar.appendChild(fill);
    pb.append("P " + b.p.toFixed(2), bar);
    meta.append(num, path, pb);
    const text = document.createElement("div"); text.className = "t"; text.textContent = b.text;
    d.append(meta, text);
    frag.appendChild(d);
  }
  box.appendChild(frag);
  for (let i = 0; i < page.blocks.length; i++) paintBlock(i);
}
$("blocks").addEventListener("click", (e) => {
  const d = e.target.closest(".b");
  if (!d || !page) return;
  const i = +d.dataset.i;
  if (e.shiftKey) { e.preventDefault(); rangeTo(i); return; }
  clearSel();
  setCur(i);
  apply("toggle", [i]);
});

const blockDiv = (i) => $("blocks").children[i];
function paintBlock(i) {
  const d = blockDiv(i), b = page.blocks[i];
  if (!d || !b) return;
  d.classList.toggle("body", !!b.label);
  d.classList.toggle("diff", b.label !== b.model);
  d.classList.toggle("cur", i === cur);
  d.classList.toggle("sel", sel.has(i));
}

// ------------------------------------------------------------------------------------------ cursor, selection
function setCur(i, opts) {
  if (!page || !page.blocks.length) return;
  i = Math.max(0, Math.min(page.blocks.length - 1, i));
  const old = cur;
  cur = i;
  if (selMode === "visual") setSel(range(anchor, cur), "visual");
  else if (!(opts && opts.keepSel) && sel.size) clearSel();
  paintBlock(old); paintBlock(cur);
  blockDiv(cur).scrollIntoView({block: opts && opts.center ? "center" : "nearest"});
  try { localStorage.setItem(curKey(), String(cur)); } catch (e) { /* storage may be off */ }
  paintRender(!(opts && opts.noRenderScroll));
  updateStats();
}
function range(a, b) { const out = []; for (let i = Math.min(a, b); i <= Math.max(a, b); i++) out.push(i); return out; }
function setSel(idx, mode, info) {
  const old = sel;
  sel = new Set(idx); selMode = mode;
  for (const i of old) if (!sel.has(i)) paintBlock(i);
  for (const i of sel) paintBlock(i);
  const what = mode === "visual" ? "range (v: j/k extend)" : "range";
  $("selinfo").textContent = info || (sel.size ? `${what}: ${sel.size} blocks, #${Math.min(...sel)}\u2013` +
    `#${Math.max(...sel)} \u00b7 b / n / space label them, Esc clears` : "");
  paintRender(false);
  updateStats();
}
function clearSel() {
  levels = []; level = 0;
  if (!sel.size && !selMode) { $("selinfo").textContent = ""; return; }
  setSel([], null, "");
}
function rangeTo(i) {
  const a = (selMode === "visual" || selMode === "range") ? anchor : cur;
  anchor = a;
  selMode = "range";
  setCur(i, {keepSel: true});
  setSel(range(a, i), "range");
}
function containerBlocks(i, up) {
  const steps = xpaths[i].split("/").filter(Boolean);
  const n = Math.max(0, steps.length - 1 - up);
  const prefix = "/" + steps.slice(0, n).join("/");
  const idx = [];
  for (let j = 0; j < xpaths.length; j++) {
    if (n === 0 || xpaths[j] === prefix || xpaths[j].startsWith(prefix + "/")) idx.push(j);
  }
  const tags = page.blocks[i].path.split("/");
  const name = n === 0 ? "the whole page" : (tags.length === steps.length ? tags.slice(0, n).join("/") : prefix);
  return {idx, name, xpath: prefix, top: n === 0};
}
function selectContainer() {
  if (!page || !page.blocks.length) return;
  let up = 0, need = 2;  // the first press: the parent, or the nearest ancestor that holds another block
  if (selMode === "container") {
    if (containerBlocks(cur, level).top) { flash("the whole page is selected"); return; }
    up = level + 1; need = sel.size + 1;  // again: the next ancestor that holds more blocks
    levels.push(level);
  } else { levels = []; }
  while (containerBlocks(cur, up).idx.length < need && !containerBlocks(cur, up).top) up++;
  level = up;
  showContainer();
}
function narrowContainer() {
  if (selMode !== "container" || !levels.length) return;
  level = levels.pop();
  showContainer();
}
function showContainer() {
  const c = containerBlocks(cur, level);
  setSel(c.idx, "container", `container ${c.name}: ${c.idx.length} blocks \u00b7 c wider, C narrower, ` +
    "b / n / space label them, Esc clears");
  $("selinfo").title = c.xpath;
}

// ------------------------------------------------------------------------------------------ labels
function targets() { return sel.size ? [...sel].sort((a, b) => a - b) : [cur]; }
function apply(how, idx) {
  if (!page || !page.blocks.length) return;
  idx = idx || targets();
  let value = how;
  if (how === "toggle") value = idx.every(i => page.blocks[i].label) ? 0 : 1;
  const change = [];
  for (const i of idx) {
    const b = page.blocks[i], v = how === "model" ? b.model : value;
    if (b.label !== v) { change.push([i, b.label]); b.label = v; paintBlock(i); }
  }
  if (selMode === "visual") { selMode = "range"; setSel([...sel], "range"); }
  if (!change.length) return;
  undo.push(change);
  changed();
}
function undoLast() {
  const change = undo.pop();
  if (!change) { flash("nothing to undo"); return; }
  for (const [i, v] of change) { page.blocks[i].label = v; paintBlock(i); }
  setCur(change[0][0], {keepSel: true});
  changed();
}
function changed() {
  gen++;
  paintRender(false);
  updateStats();
  clearTimeout(timer);
  timer = setTimeout(() => { save().catch(() => {}); }, AUTOSAVE_MS);
}

// ------------------------------------------------------------------------------------------ saving
function saveBody() {
  return {labels: page.blocks.map(b => b.label), blocks: page.blocks.length, done: $("done").checked,
          kind: $("kind").value || null, note: $("note").value || ""};
}
function save() {
  clearTimeout(timer); timer = null;
  if (!page) return Promise.resolve(null);
  const p = page, g = gen, body = JSON.stringify(saveBody());
  const run = saving.catch(() => {}).then(async () => {
    setSaveState("saving", "saving\u2026");
    const j = await api("/api/page/" + enc(p.id), {method: "POST", body,
      headers: {"Content-Type": "application/json", "X-Bodyblocks-Token": TOKEN}});
    listInfo[p.id] = Object.assign(listInfo[p.id] || {id: p.id}, {labelled: true, done: j.done,
      kind: JSON.parse(body).kind || (listInfo[p.id] || {}).kind || null});
    nextTodo = j.next;
    drawList();
    if (page === p) {
      savedGen = Math.max(savedGen, g); saveError = null; savedAt = j.updated; p.done = j.done;
      updateStats();
    }
    return j;
  });
  saving = run;
  return run.catch((e) => {
    if (page === p) { saveError = e.message; updateStats(); }
    throw e;
  });
}
let leftGen = -1;  // the change already sent by saveOnLeave (hidden, then pagehide: one request, not two)
function saveOnLeave() {  // the tab is hidden or closing: a request that outlives the page
  if (!page || !dirty() || leftGen === gen) return;
  clearTimeout(timer); timer = null;
  const p = page, g = gen;
  leftGen = g;
  fetch("/api/page/" + enc(p.id), {method: "POST", keepalive: true, body: JSON.stringify(saveBody()),
    headers: {"Content-Type": "application/json", "X-Bodyblocks-Token": TOKEN}})
    .then(r => { if (r.ok && page === p) { savedGen = Math.max(savedGen, g); saveError = null; updateStats(); } })
    .catch(() => {});
}
async function doneAndNext() {
  if (!page) return;
  $("done").checked = true;
  const j = await save();
  const target = j && j.next;
  if (!target) { flash("all pages are done"); return; }
  await openPage(target);
}
async function nextNotDone() {
  if (!page) return;
  if (dirty()) await save();
  const j = await api("/api/pages");
  const order = ids.slice(ids.indexOf(page.id) + 1).concat(ids.slice(0, ids.indexOf(page.id) + 1));
  const todo = new Set(j.pages.filter(p => !p.done).map(p => p.id));
  const target = order.find(id => todo.has(id) && id !== page.id);
  if (!target) { flash(todo.has(page.id) ? "no other page left to do" : "all pages are done"); return; }
  await openPage(target);
}

// ------------------------------------------------------------------------------------------ status line
let flashTimer = null, flashMsg = "";
function flash(msg) {
  flashMsg = msg;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => { flashMsg = ""; updateStats(); }, 2500);
  updateStats();
}
function setSaveState(cls, text) {  // body[data-save]: new, unsaved, saving, saved or error
  const s = $("savestate");
  s.className = cls; s.textContent = text; document.body.dataset.save = cls;
}
function updateStats() {
  if (!page) return;
  const n = page.blocks.length, body = page.blocks.filter(b => b.label).length;
  const diff = page.blocks.filter(b => b.label !== b.model).length;
  let txt = `body ${body} / ${n} blocks \u00b7 ${diff} differ from the model`;
  if (n) txt += ` \u00b7 at #${cur}` + (sel.size ? `, ${sel.size} selected` : "");
  const chk = page.check;
  if (chk && (chk.changed || chk.missing) && !gen) {
    txt += ` \u00b7 \u26a0 ${chk.changed} changed, ${chk.missing} new since labelled`;
  }
  if (flashMsg) txt += " \u00b7 " + flashMsg;
  $("stats").textContent = txt;
  if (saveError) setSaveState("error", "save failed: " + saveError);
  else if (dirty()) setSaveState("unsaved", "\u25cf unsaved");
  else if (savedAt) {
    setSaveState("saved", "\u2713 saved " + savedAt.replace("T", " ").replace("Z", " UTC") +
                 (page.done ? " \u00b7 done" : ""));
  }
  else setSaveState("new", "not saved yet");
}

// ------------------------------------------------------------------------------------------ the rendered page
const RENDER_STYLE = ".bb-body{outline:2px solid #1e9a55 !important;background:#e3f6ea !important}" +
  "[data-bb]{cursor:pointer}" +
  ".bb-sel{box-shadow:inset 0 0 0 9999px rgba(47,95,255,.16) !important}" +
  ".bb-cur{outline:3px solid #2f5fff !important;outline-offset:1px}";
function renderLoaded() {
  const doc = $("render").contentDocument;
  if (!doc || !doc.documentElement || !page) return;
  if (!doc.getElementById("bb-style")) {
    const st = doc.createElement("style"); st.id = "bb-style"; st.textContent = RENDER_STYLE;
    (doc.head || doc.documentElement).appendChild(st);
  }
  renderEls = [...doc.querySelectorAll("[data-bb]")].map(el => [el, el.dataset.bb.split(" ").map(Number)]);
  doc.addEventListener("click", (e) => {
    const el = e.target.closest && e.target.closest("[data-bb]");
    e.preventDefault();
    if (!el || !page) return;
    const idx = el.dataset.bb.split(" ").map(Number).filter(i => i < page.blocks.length);
    if (!idx.length) return;
    if (e.shiftKey) { rangeTo(idx[0]); return; }
    clearSel();
    setCur(idx[0], {center: true, noRenderScroll: true});
    apply("toggle", idx);
  });
  doc.addEventListener("keydown", onKey);
  paintRender(true);
}
$("render").addEventListener("load", renderLoaded);
function paintRender(scroll) {
  if (!renderEls.length || !page) return;
  let curEl = null;
  for (const [el, idx] of renderEls) {
    let body = false, s = false, c = false;
    for (const i of idx) {
      const b = page.blocks[i];
      if (!b) continue;
      body = body || !!b.label; s = s || sel.has(i);
      if (i === cur) c = true;
    }
    el.classList.toggle("bb-body", body);
    el.classList.toggle("bb-sel", s);
    el.classList.toggle("bb-cur", c);
    if (c && !curEl) curEl = el;
  }
  if (scroll && curEl) {
    const r = curEl.getBoundingClientRect(), h = curEl.ownerDocument.defaultView.innerHeight;
    if (r.bottom < 0 || r.top > h) curEl.scrollIntoView({block: "center"});
  }
}

// ------------------------------------------------------------------------------------------ keys
function onKey(e) {
  const t = e.target && e.target.tagName;
  if (t === "SELECT" || t === "INPUT" || t === "TEXTAREA") {
    if (e.key === "Escape") e.target.blur();
    return;
  }
  if (e.altKey || e.metaKey) return;
  const k = e.key;
  if (e.ctrlKey) { if (k === "z") { undoLast(); e.preventDefault(); } return; }
  if ($("help").classList.contains("on") && (k === "Escape" || k === "?")) { toggleHelp(); e.preventDefault(); return; }
  const acts = {
    "j": () => setCur(cur + 1), "ArrowDown": () => setCur(cur + 1),
    "k": () => setCur(cur - 1), "ArrowUp": () => setCur(cur - 1),
    "PageDown": () => setCur(cur + 10), "PageUp": () => setCur(cur - 10),
    "g": () => setCur(0), "Home": () => setCur(0),
    "G": () => setCur(1e9), "End": () => setCur(1e9),
    " ": () => apply("toggle"), "Enter": () => apply("toggle"),
    "b": () => apply(1), "n": () => apply(0), "m": () => apply("model"),
    "u": undoLast,
    "c": selectContainer, "C": narrowContainer,
    "v": () => { if (selMode === "visual") setSel([...sel], "range"); else { anchor = cur; setSel([cur], "visual"); } },
    "Escape": clearSel,
    "s": () => save().catch(() => {}),
    "d": () => { $("done").checked = !$("done").checked; changed(); },
    "D": () => doneAndNext().catch(err => flash("error: " + err.message)),
    "}": () => nextNotDone().catch(err => flash("error: " + err.message)),
    "]": () => go(1), "[": () => go(-1),
    "1": () => setKind(0), "2": () => setKind(1), "3": () => setKind(2), "0": () => setKind(-1),
    "r": () => $("main").classList.toggle("norender"),
    "?": toggleHelp,
  };
  const act = acts[k];
  if (!act) return;
  e.preventDefault();
  act();
}
document.addEventListener("keydown", onKey);
function setKind(i) {
  if (!page) return;
  $("kind").value = i < 0 ? "" : (page.kinds[i] || "");
  changed();
  flash("kind: " + ($("kind").value || "unset"));
}
function toggleHelp() { $("help").classList.toggle("on"); }
function go(step) {
  if (!page) return;
  const i = ids.indexOf(page.id) + step;
  if (i >= 0 && i < ids.length) openPage(ids[i]).catch(err => flash("error: " + err.message));
}

$("pagesel").addEventListener("change", (e) => {
  e.target.blur();
  openPage(e.target.value).catch(err => flash("error: " + err.message));
});
$("prev").addEventListener("click", () => go(-1));
$("next").addEventListener("click", () => go(1));
$("save").addEventListener("click", () => save().catch(() => {}));
$("donenext").addEventListener("click", () => doneAndNext().catch(err => flash("error: " + err.message)));
$("helpbtn").addEventListener("click", toggleHelp);
$("done").addEventListener("change", (e) => { e.target.blur(); changed(); });
$("kind").addEventListener("change", (e) => { e.target.blur(); changed(); });
$("note").addEventListener("input", () => changed());
for (const id of ["prev", "next", "save", "donenext", "helpbtn"]) {
  $(id).addEventListener("mouseup", (e) => e.target.blur());  // keys go to the page again
}
document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") saveOnLeave(); });
window.addEventListener("pagehide", saveOnLeave);
window.addEventListener("hashchange", () => {
  const id = decodeURIComponent(location.hash.slice(1));
  if (page && id && id !== page.id && listInfo[id]) openPage(id).catch(err => flash("error: " + err.message));
});

(async () => {
  const wanted = decodeURIComponent(location.hash.slice(1)) || null;
  const first = await loadList(wanted);
  await openPage(first);
})().catch(err => { setSaveState("error", "error: " + err.message); });
</script>
</body></html>
"""


def index_html(token: str) -> str:
    """The labelling page with this run's write token (a JS string literal)."""
    return _PAGE.replace("__TOKEN__", json.dumps(token)).replace("__AUTOSAVE_MS__", str(AUTOSAVE_MS))
