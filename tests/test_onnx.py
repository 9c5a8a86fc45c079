"""ONNX Runtime: exported models give torch's answers, stale exports are refused, and extraction runs without
torch or scikit-learn installed."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.test_model import synthetic_page, tiny_config

from bodyblocks.classify import onnx_model as ox
from bodyblocks.classify.integrity import record_files
from bodyblocks.classify.model import BlockClassifier
from bodyblocks.classify.trees import GbtModel, gbt_features
from bodyblocks.loading.checkpoints import SHIPPED, load_extractor, read_ensemble, shipped
from bodyblocks.loading.engines import choose_engine
from bodyblocks.training.export import ExportMismatch, check_documents, export_model, export_trees
from bodyblocks.types import Document

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "data" / "samples"


def _docs(n: int = 12) -> list[Document]:
    """Synthetic pages of every length around the tiny model's window of 16 (one block to several windows)."""
    rng = random.Random(5)
    docs = []
    for k in range(n):
        blocks, _ = synthetic_page(rng, 1 + 7 * k, 3 * (k % 3))
        docs.append(Document(blocks=blocks, title="t"))
    docs.append(Document(blocks=synthetic_page(rng, 1, 0)[0][:1], title=""))  # one block
    return docs


def _tiny_model(folder: Path, seed: int = 0, **cfg: object) -> Path:
    torch.manual_seed(seed)
    BlockClassifier(tiny_config(**cfg)).eval().save(folder, {"threshold": 0.5, "confident": 0.5})
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("cfg", [{}, {"use_tag_path": False}, {"use_context": False}, {"positional": False},
                                 {"groups": True}])
def test_the_export_gives_the_torch_models_probabilities(tmp_path: Path, cfg: dict) -> None:
    folder = _tiny_model(tmp_path / "m", **cfg)
    docs = _docs()
    check = export_model(folder, docs)
    assert check.pages == len(docs) and check.max_diff < 1e-4 and check.kept_differ == 0
    ours = ox.OnnxModelScorer.load(folder)
    model = BlockClassifier.load(folder)
    from bodyblocks.classify.model import collate, prepare_page

    for doc in docs:  # several windows on the longer pages, one block on the last
        ref = model.probabilities(collate([prepare_page(doc.blocks, model.cfg)]))[0]
        got = ours.page_probabilities(ours.inputs(doc))
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4)


def test_loading_checks_the_export_from_its_bytes_and_opens_sessions_on_first_use(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import onnxruntime as ort

    folder = _tiny_model(tmp_path / "m")
    docs = _docs(3)
    export_model(folder, docs)
    for name in (ox.EMBED, ox.CONTEXT):  # the metadata read from the bytes is what ONNX Runtime reads
        meta = ort.InferenceSession(str(folder / name), providers=["CPUExecutionProvider"]).get_modelmeta()
        assert ox.export_source(folder / name) == meta.custom_metadata_map[ox.SOURCE_KEY] == ox.weights_digest(folder)
    opened: list[str] = []
    real = ox.open_session
    monkeypatch.setattr(ox, "open_session", lambda path, *a, **k: opened.append(Path(path).name) or real(path, *a, **k))
    scorer = ox.OnnxModelScorer.load(folder)
    assert opened == []  # a process that forks its workers before any page opens nothing it will not use
    scorer.page_probabilities(scorer.inputs(docs[0]))
    assert sorted(opened) == sorted([ox.EMBED, ox.CONTEXT])
    data = (folder / ox.CONTEXT).read_bytes()
    (folder / ox.CONTEXT).write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="SHA-256 differs"):  # the digest config.json records (integrity.py)
        ox.OnnxModelScorer.load(folder)
    record_files(folder, [], drop=(ox.EMBED, ox.CONTEXT))  # a folder from before the digests: framing checked
    for broken in (data[: len(data) // 2], b"", b"\xff" * 64):  # truncated, empty, not protobuf
        (folder / ox.CONTEXT).write_bytes(broken)
        with pytest.raises(ValueError, match="ONNX model"):
            ox.OnnxModelScorer.load(folder)


def test_an_export_runtime_cannot_load_fails_the_run_once_with_one_line(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from bodyblocks.cli import main

    folder = _tiny_model(tmp_path / "m")
    export_model(folder, _docs(3))
    data = bytearray((folder / ox.EMBED).read_bytes())
    graph = next(f for f in ox._fields(data, 0, len(data)) if f[0] == ox.MODEL_GRAPH)
    data[graph[1] + 40 : graph[1] + 240] = b"\xff" * 200  # the graph's bytes broken, the file's framing intact
    (folder / ox.EMBED).write_bytes(bytes(data))
    record_files(folder, [ox.EMBED])  # its digest recorded as it is now: ONNX Runtime is what refuses it
    scorer = ox.OnnxModelScorer.load(folder)  # the framing and the digest are right: loading takes it
    for _ in range(2):  # the open fails, and fails again at once, not retried page after page
        with pytest.raises(ValueError, match="ONNX Runtime cannot load this export"):
            scorer.sessions()
    for workers in ("1", "2"):
        rc = main(["extract", str(SAMPLES), "--out", str(tmp_path / f"o{workers}"), "--extractor", "model",
                   "--checkpoint", str(folder), "--engine", "onnx", "--workers", workers, "--no-progress"])
        first, *err = capsys.readouterr().err.strip().splitlines()  # the run's first line: which model, which engine
        assert first.startswith("bodyblocks extract: model (") and "onnx" in first
        assert rc == 2 and len(err) == 1 and "cannot load this export" in err[0] and "bodyblocks export" in err[0]


@pytest.mark.slow
def test_an_export_of_other_weights_is_refused_and_saving_weights_removes_it(tmp_path: Path) -> None:
    folder = _tiny_model(tmp_path / "m")
    export_model(folder, _docs(3))
    other = _tiny_model(tmp_path / "other", seed=1)
    for name in (ox.EMBED, ox.CONTEXT):
        assert (folder / name).exists()
    shutil.copy(other / "model.safetensors", folder / "model.safetensors")  # weights changed behind its back
    with pytest.raises(ValueError, match="SHA-256 differs"):  # not the weights config.json records
        ox.OnnxModelScorer.load(folder)
    record_files(folder, ["model.safetensors"])  # recorded as they are now: the exports are of other weights
    with pytest.raises(ox.StaleExport, match="bodyblocks export"):
        ox.OnnxModelScorer.load(folder)
    BlockClassifier.load(other).save(folder, {"threshold": 0.5})  # the trainer's save drops the old export
    assert not (folder / ox.EMBED).exists() and not (folder / ox.CONTEXT).exists()
    assert choose_engine(folder, "auto", "cpu") == "torch"
    with pytest.raises(ValueError, match="no ONNX export"):
        choose_engine(folder, "onnx", "cpu")


@pytest.mark.slow
def test_an_export_that_differs_from_torch_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _tiny_model(tmp_path / "m")
    real = ox.OnnxModelScorer.page_probabilities
    monkeypatch.setattr(ox.OnnxModelScorer, "page_probabilities", lambda self, page: real(self, page) * 0.5)
    with pytest.raises(ExportMismatch, match="differs from the torch model"):
        export_model(folder, _docs(3))
    assert not (folder / ox.EMBED).exists() and not (folder / ox.CONTEXT).exists()


def test_an_int8_context_keeps_the_float_models_blocks_on_the_synthetic_pages(tmp_path: Path) -> None:
    """`bodyblocks export --int8`'s step on the shipped model: within INT8_TOLERANCE of the float model (torch)
    on the synthetic pages of every shape (measured 0.018), the same kept blocks, loaded as the float file is."""
    import onnxruntime as ort

    from bodyblocks.classify.model_scorer import ModelScorer
    from bodyblocks.extraction.decision import DecisionRule
    from bodyblocks.loading.checkpoints import read_meta
    from bodyblocks.training.export import INT8_TOLERANCE, _synthetic_documents, quantize_context

    folder = tmp_path / "default"
    shutil.copytree(SHIPPED / "default", folder)
    if not ox.OnnxModelScorer.load(folder).int8:  # (the shipped one may be int8 already)
        quantize_context(folder)
    meta = ort.InferenceSession(str(folder / ox.CONTEXT), providers=["CPUExecutionProvider"]).get_modelmeta()
    assert meta.custom_metadata_map == ox.export_metadata(folder / ox.CONTEXT)  # read without ONNX Runtime
    assert meta.custom_metadata_map[ox.QUANTIZED_KEY] == "int8"
    assert ox.export_source(folder / ox.CONTEXT) == ox.weights_digest(folder)  # not stale: the same weights
    import onnx
    from onnx import numpy_helper

    weights = [numpy_helper.to_array(t) for t in onnx.load(str(folder / ox.CONTEXT)).graph.initializer
               if t.data_type == onnx.TensorProto.INT8]
    assert weights  # 7-bit weights: no int16 pair sum of u8 x s8 saturates on CPUs without VNNI
    assert max(int(np.abs(w.astype(np.int16)).max()) for w in weights) <= 64  # 255 x 64 x 2 < 2^15
    with pytest.raises(ValueError, match="int8 weights already"):
        quantize_context(folder)
    int8, floats = ox.OnnxModelScorer.load(folder), ModelScorer.load(folder, device="cpu", batch_size=1)
    assert int8.int8
    rule = DecisionRule.from_meta(read_meta(folder))
    docs = _synthetic_documents()
    assert docs
    for doc in docs:
        a, b = floats.forward([doc], floats.prepare([doc]))[0], int8.page_probabilities(int8.inputs(doc))
        assert 0 < np.abs(a - b).max() < INT8_TOLERANCE  # int8 indeed, and close
        assert rule.decide(doc, a, "f").kept == rule.decide(doc, b, "i").kept


@pytest.mark.slow
def test_the_int8_export_is_checked_against_torch(tmp_path: Path) -> None:
    from bodyblocks.cli import main
    from bodyblocks.training.export import INT8_TOLERANCE

    folder = _tiny_model(tmp_path / "m")
    check = export_model(folder, _docs(), int8=True)
    assert check.int8 and 0 < check.max_diff < INT8_TOLERANCE and "(int8)" in str(check)
    other = tmp_path / "cli"  # the command line's flag, on the shipped model (a random one's P sits at its threshold)
    shutil.copytree(SHIPPED / "default", other)
    assert main(["export", str(other), "--int8", "--pages", str(SAMPLES)]) == 0
    props = ox.export_metadata(other / ox.CONTEXT)
    assert props[ox.QUANTIZED_KEY] == "int8" and props[ox.SOURCE_KEY] == ox.weights_digest(other)
    assert ox.OnnxModelScorer.load(other).int8


@pytest.mark.slow
def test_shipping_with_int8_quantizes_the_context_and_the_shipped_default_is_as_its_config_says(tmp_path: Path
                                                                                               ) -> None:
    from bodyblocks.config import load_config
    from bodyblocks.training.ship import ship_model

    shipped_int8 = load_config(REPO / "configs" / "default.yaml", []).train.int8
    assert ox.OnnxModelScorer.load(SHIPPED / "default").int8 == shipped_int8  # the build's output, as configured
    for int8 in (False, True):
        out = ship_model(SHIPPED / "default", tmp_path / str(int8), check_documents(SAMPLES), int8=int8)
        assert ("(int8)" in out["onnx"]) == int8
        assert ox.OnnxModelScorer.load(tmp_path / str(int8)).int8 == int8


def test_the_trees_on_onnx_runtime_give_the_numpy_walks_answers(tmp_path: Path) -> None:
    folder = tmp_path / "gbt"
    shutil.copytree(SHIPPED / "gbt", folder)
    (folder / ox.TREES).unlink(missing_ok=True)
    assert GbtModel.load(folder).engine == "numpy"
    docs = check_documents(SAMPLES)
    check = export_trees(folder, docs)
    assert check.max_diff < 1e-6 and check.kept_differ == 0
    model = GbtModel.load(folder)
    assert model.engine == "onnx"
    rng = np.random.default_rng(0)
    x = gbt_features(docs[0].blocks, model.cfg)
    x = np.concatenate([x, np.where(rng.random(x.shape) < 0.2, np.nan, x)])  # missing values take their side
    np.testing.assert_allclose(model.raw(x), model._numpy_raw(x), rtol=0, atol=1e-5)
    model.save(folder)  # new trees: the old export goes
    assert not (folder / ox.TREES).exists() and GbtModel.load(folder).engine == "numpy"


def test_the_trees_read_only_the_block_features_of_a_grouped_models_inputs() -> None:
    from bodyblocks.classify.model import prepare_page
    from bodyblocks.classify.trees import GbtScorer

    docs = check_documents(SAMPLES)[:3]
    scorer = GbtScorer(GbtModel.load(SHIPPED / "gbt"))
    alone = scorer.scores(docs)
    grouped = scorer.scores(docs, [(i, prepare_page(d.blocks, tiny_config(groups=True))) for i, d in enumerate(docs)])
    assert sorted(grouped) == sorted(alone)
    for i in alone:
        np.testing.assert_allclose(grouped[i], alone[i], rtol=0, atol=1e-6)


def test_the_shipped_checkpoints_carry_current_exports() -> None:
    """The release's ONNX files were made from the shipped weights (else extraction would need torch)."""
    meta = read_ensemble(shipped("ensemble"))
    scorer = ox.OnnxModelScorer.load(meta["model_path"])  # raises StaleExport otherwise
    assert scorer.sessions()[0] is not None
    assert GbtModel.load(meta["gbt_path"]).prepare_walk() == "onnx"
    ex = load_extractor("ensemble", device="cpu")
    assert ex.model.engine == "onnx" and ex.whole_pages


def test_onnx_and_torch_engines_extract_the_same_text() -> None:
    pages = [p.read_bytes() for p in sorted(SAMPLES.glob("*.html"))]
    onnx_ex, torch_ex = load_extractor("ensemble", engine="onnx"), load_extractor("ensemble", engine="torch")
    assert (onnx_ex.model.engine, torch_ex.model.engine) == ("onnx", "torch")
    from bodyblocks.training.export import INT8_TOLERANCE

    atol = INT8_TOLERANCE if onnx_ex.model.int8 else 1e-4  # a Transformer exported with --int8
    for page in pages:
        a, b = onnx_ex.extract(page), torch_ex.extract(page)
        assert a.text == b.text and a.kept == b.kept
        np.testing.assert_allclose(a.probabilities, b.probabilities, rtol=0, atol=atol)
        assert onnx_ex.extract(page, overlap=False).text == a.text


_NO_TORCH = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "sklearn", "transformers", "scipy"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
sys.meta_path.insert(0, Block())
import importlib.util
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name.split(".")[0] in ("torch", "sklearn") else real(name, *a)
"""


@pytest.mark.slow
def test_extraction_runs_without_torch_or_scikit_learn(tmp_path: Path) -> None:
    """As after `pip install bodyblocks` without the training extra: the API and the CLI, same text as here (and
    no YAML read or imported)."""
    out = tmp_path / "out"
    script = _NO_TORCH + f"""
import json, bodyblocks
from pathlib import Path
from bodyblocks.cli import main
ex = bodyblocks.extract(Path({str(SAMPLES / "article-utf8.html")!r}))
rc = main(["extract", {str(SAMPLES)!r}, "--out", {str(out)!r}, "--no-progress", "--workers", "2"])
print(json.dumps({{"text": ex.text, "rc": rc, "loaded": sorted(m for m in sys.modules
                   if m.split(".")[0] in ("torch", "sklearn", "yaml"))}}))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0 and got["loaded"] == []
    here = load_extractor("ensemble", engine="torch").extract((SAMPLES / "article-utf8.html").read_bytes())
    assert got["text"] == here.text
    assert (out / "article-utf8.txt").read_text(encoding="utf-8") == f"{here.title}\n\n{here.text}\n"


@pytest.mark.slow
def test_without_torch_a_model_with_no_export_says_what_to_do(tmp_path: Path) -> None:
    folder = _tiny_model(tmp_path / "m")
    script = _NO_TORCH + f"""
from bodyblocks.cli import main
raise SystemExit(main(["extract", {str(SAMPLES)!r}, "--out", {str(tmp_path / "o")!r}, "--extractor", "model",
                       "--checkpoint", {str(folder)!r}, "--no-progress"]))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "needs torch" in proc.stderr and "bodyblocks export" in proc.stderr


@pytest.mark.slow
@pytest.mark.datasets
def test_the_shipped_export_matches_torch_on_dataset_pages(shared_datasets: Path) -> None:
    """The export's own check, on the sample, synthetic and 200 dataset pages: |dP| < 1e-4, the same kept blocks
    (a Transformer exported with --int8: within the int8 bounds)."""
    from bodyblocks.classify.model_scorer import ModelScorer
    from bodyblocks.training.export import _check_model

    folder = read_ensemble(shipped("ensemble"))["model_path"]
    docs = check_documents()
    assert len(docs) > 200
    int8 = ox.OnnxModelScorer.load(folder).int8
    check = _check_model(folder, ModelScorer.load(folder, device="cpu", batch_size=1), docs, int8=int8)
    assert int8 or (check.max_diff < 1e-4 and check.kept_differ == 0)  # (_check_model holds an int8 one to its bounds)


def _four_pages_and_a_stuck_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stuck: str) -> Path:
    """Four article pages and one (`stuck`) whose forward pass never ends, as far as the run can tell."""
    import time

    from tests.test_batch import ARTICLE

    from bodyblocks.extraction.extractor import BlockExtractor

    src = tmp_path / "in"
    src.mkdir()
    for i in range(4):
        (src / f"p{i}.html").write_text(ARTICLE.replace("Tuesday", f"day {i}"), encoding="utf-8")
    (src / f"{stuck}.html").write_text(ARTICLE.replace("Tuesday", "the stuck day"), encoding="utf-8")
    real = BlockExtractor.forward

    def slow(self: BlockExtractor, prepared: object) -> list[np.ndarray]:
        if any("stuck day" in d.text for d in prepared.docs):  # type: ignore[attr-defined]
            time.sleep(20)
        return real(self, prepared)  # type: ignore[arg-type]

    monkeypatch.setattr(BlockExtractor, "forward", slow)
    return src


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_a_page_whose_classification_hangs_fails_alone_within_the_page_timeout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    """On the default CPU path the page's time limit covers its classification, and each page's seconds are
    its own (the whole page runs in one worker)."""
    import time

    from bodyblocks.batch import BatchOptions, run_batch

    src = _four_pages_and_a_stuck_one(tmp_path, monkeypatch, "stuck")
    start = time.perf_counter()
    totals = run_batch([src], tmp_path / "out", BatchOptions(extractor="ensemble", workers=workers, page_timeout=2,
                                                             progress=False))
    assert time.perf_counter() - start < 15
    pages = {p["id"]: p for p in json.loads((tmp_path / "out" / "report.json").read_text())["pages"]}
    assert (totals.ok, totals.failed) == (4, 1) and pages["stuck"]["error"].startswith("timeout")
    assert all(pages[f"p{i}"]["seconds"] < 2 for i in range(4))  # its own time, not a share of a group's


@pytest.mark.slow
@pytest.mark.parametrize("overlap", [True, False])
def test_on_torch_a_batch_whose_forward_pass_hangs_fails_alone_and_the_run_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overlap: bool) -> None:
    """The staged path (torch: workers parse, this process classifies) gives each batch the page time limit
    per page: overlapped, the stuck forward thread is abandoned for a fresh one; in line, SIGALRM stops it."""
    import time

    from bodyblocks.batch import BatchOptions, run_batch, runner
    from bodyblocks.loading.options import ExtractOptions

    src = _four_pages_and_a_stuck_one(tmp_path, monkeypatch, "p2-stuck")
    monkeypatch.setattr(runner, "GROUP", 1)  # one page per batch: the stuck one fails alone
    start = time.perf_counter()
    opts = BatchOptions(extractor="model", options=ExtractOptions(engine="torch"), workers=1, page_timeout=2,
                        overlap=overlap, progress=False)
    totals = run_batch([src], tmp_path / "out", opts)
    assert time.perf_counter() - start < 15
    pages = {p["id"]: p for p in json.loads((tmp_path / "out" / "report.json").read_text())["pages"]}
    assert (totals.ok, totals.failed) == (4, 1)
    assert pages["p2-stuck"]["error"].startswith("timeout: its")
    assert all("after three days" in (tmp_path / "out" / f"p{i}.txt").read_text() for i in range(4))
