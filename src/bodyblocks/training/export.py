"""Export checkpoints for ONNX Runtime (classify/onnx_model.py), checked against torch on real pages.

    export_checkpoint("checkpoints/ensemble")     # its model and trees; `bodyblocks export FOLDER`

A model folder gets embed.onnx and context.onnx (torch.onnx.export, the dynamo exporter, with dynamic block
axes), a gbt folder trees.onnx (one ai.onnx.ml TreeEnsembleRegressor built from the node arrays). Each file
records the SHA-256 of the folder's model.safetensors, and the folder's config.json the SHA-256 of each file (checked
at load: classify/integrity.py). An export is kept only when, on every check page, the
ONNX Runtime probabilities are within `TOLERANCE` of torch's (of the NumPy walk's, for the trees) and the
decision rule keeps the same blocks; otherwise the files are removed and ExportMismatch says where they differ.
`int8=True` (`bodyblocks export --int8`) then gives context.onnx int8 weights (`quantize_context`) and checks it
against torch again, within INT8_TOLERANCE and INT8_KEPT_DIFFER; ONNX Runtime loads it as it loads the float file.
Check pages: the files under `pages` (a folder of HTML), else the sample pages and synthetic pages of every
shape training/synth.py makes, plus up to 200 pages of the shared datasets when they are here.
"""

from __future__ import annotations

import logging
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from bodyblocks.classify import onnx_model as ox
from bodyblocks.classify.integrity import record_files
from bodyblocks.classify.model import BlockClassifier
from bodyblocks.classify.model_scorer import ModelScorer
from bodyblocks.classify.trees import GbtModel, feature_names, gbt_features
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.loading.checkpoints import ENSEMBLE, GBT, MODEL, kind_of, read_ensemble, read_meta
from bodyblocks.runtime.files import REPO_ROOT, atomic_path
from bodyblocks.types import Document

_log = logging.getLogger(__name__)
TOLERANCE = 1e-4  # |P_onnx - P_torch| allowed on any block
OPSET = 23  # ONNX's Attention op (onnxruntime >= 1.23 runs it)
DATASET_PAGES = 200  # check pages taken from the shared datasets when they are here
# An int8 context.onnx (quantize_context) against torch: |dP| allowed on any block, and the share of check pages
# whose kept blocks may differ (the shipped model measured 0.021 and 5 of 222 pages, 0 of the synthetic ones)
INT8_TOLERANCE = 0.05
INT8_KEPT_DIFFER = 0.05


class ExportMismatch(RuntimeError):
    """An exported model that does not give the torch model's answers."""


@dataclass
class ExportCheck:
    """How an export compared with its source on the check pages."""

    folder: Path
    pages: int
    blocks: int
    max_diff: float
    kept_differ: int  # pages whose kept blocks differ
    int8: bool = False  # context.onnx has int8 weights (quantize_context)

    def __str__(self) -> str:
        return (f"{self.folder}{' (int8)' if self.int8 else ''}: {self.pages} pages, {self.blocks} blocks, "
                f"max |dP| {self.max_diff:.2e}, {self.kept_differ} pages keep other blocks")


# ----------------------------------------------------------------------------------------- check pages
def check_documents(pages: str | Path | None = None) -> list[Document]:
    """Segmented check pages (module docstring)."""
    from bodyblocks.errors import InputError
    from bodyblocks.page.decode import read_bytes
    from bodyblocks.page.segment import segment
    from bodyblocks.runtime.files import datasets_root

    if pages is not None:
        files = sorted(p for p in Path(pages).rglob("*") if p.is_file())
    else:
        files = sorted((REPO_ROOT / "data" / "samples").glob("*.html"))
        root = datasets_root()
        if root is not None and root.exists():
            files += _dataset_files(root, DATASET_PAGES)
    docs = []
    for f in files:
        try:
            docs.append(segment(read_bytes(f)))
        except InputError:
            continue
    if pages is None:
        docs += _synthetic_documents()
    return [d for d in docs if d.blocks]


def _dataset_files(root: Path, n: int) -> list[Path]:
    from bodyblocks.training.datasets import read_records

    sets = sorted(p for p in root.iterdir() if (p / "pages.jsonl").is_file())
    per = max(1, n // max(1, len(sets)))
    files = []
    for ds in sets:
        recs = read_records(ds)
        step = max(1, len(recs) // per)
        files += [ds / r["html"] for r in recs[::step][:per] if "html" in r]
    return files


def _synthetic_documents() -> list[Document]:
    import random

    from bodyblocks.page.segment import segment
    from bodyblocks.training.synth import MALFORMATIONS, TEMPLATES, synth_page

    shapes = [(t, m) for t in TEMPLATES for m in (None, *MALFORMATIONS)]
    return [segment(synth_page(random.Random(i), t, None, m)[0]) for i, (t, m) in enumerate(shapes)]


# ----------------------------------------------------------------------------------------- the model
def export_model(folder: str | Path, docs: Sequence[Document] | None = None, int8: bool = False) -> ExportCheck:
    """Write embed.onnx and context.onnx for a model folder and check them (module docstring); `int8`: then
    quantize context.onnx (quantize_context) and check it too (the check returned is the int8 one)."""
    folder = Path(folder)
    model = BlockClassifier.load(folder)
    if model.cfg.use_text and model.cfg.encoder.frozen:
        raise ValueError(f"{folder}: a model reading {model.cfg.encoder.kind} vectors cannot run without torch")
    digest = ox.weights_digest(folder)
    record_files(folder, [ox.WEIGHTS], drop=(ox.EMBED, ox.CONTEXT))  # the old exports' digests go with them
    embed, names = _EmbedGraph.build(model)
    dims = {"n": torch.export.Dim("n", min=1, max=1 << 20), "k": torch.export.Dim("k", min=0, max=1 << 26),
            "m": torch.export.Dim("m", min=0, max=1 << 26)}
    shapes = tuple(_dynamic(name, dims) for name in names)
    b_dim, w_dim = torch.export.Dim("b", min=1, max=1 << 16), torch.export.Dim("w", min=1, max=1 << 20)
    try:  # neither file stays unless both are written and pass the check
        _export(embed, _example_inputs(model, names, 9), names, ("x",), (shapes,), folder / ox.EMBED,
                digest)  # (shapes,): the *tensors
        _export(_ContextGraph(model).eval(), (torch.randn(2, 7, model.cfg.d_model),), ("x",), ("logits",),
                ({0: b_dim, 1: w_dim},), folder / ox.CONTEXT, digest)
        reference = ModelScorer.load(folder, device="cpu", batch_size=1)
        docs = docs if docs is not None else check_documents()
        check = _check_model(folder, reference, docs)
        if int8:
            quantize_context(folder)
            check = _check_model(folder, reference, docs, int8=True)
        record_files(folder, [ox.EMBED, ox.CONTEXT])  # checked at load (classify/integrity.py)
        return check
    except BaseException:
        for name in (ox.EMBED, ox.CONTEXT):
            (folder / name).unlink(missing_ok=True)
        raise


def _dynamic(name: str, dims: dict[str, object]) -> dict[int, object]:
    if name in ("tag_ids", "tag_owner"):
        return {0: dims["m"]}
    if name in ("text_ids", "text_owner"):
        return {0: dims["k"]}
    return {0: dims["n"]}


def _example_inputs(model: BlockClassifier, names: Sequence[str], n: int) -> tuple[torch.Tensor, ...]:
    cfg = model.cfg
    ids = {"tag": 3 * n, "text": 11 * n}
    out = []
    for name in names:
        kind = name.split("_")[0]
        if name == "features":
            out.append(torch.randn(n, cfg.block_columns))
        elif name == "position":
            out.append(torch.randn(n, cfg.d_model))
        elif name.endswith("_ids"):
            high = cfg.tag_buckets if kind == "tag" else cfg.encoder.buckets
            out.append(torch.randint(0, high, (ids[kind],)))
        elif name.endswith("_owner"):
            out.append(torch.sort(torch.randint(0, n, (ids[kind],))).values)
        else:  # _count
            out.append(torch.ones(n, 1) * 3)
    return tuple(out)


def _export(module: nn.Module, args: tuple[torch.Tensor, ...], inputs: Sequence[str], outputs: Sequence[str],
            shapes: tuple[object, ...], path: Path, digest: str) -> None:
    import onnx

    with atomic_path(path) as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(module, args, dynamo=True, input_names=list(inputs), output_names=list(outputs),
                                    dynamic_shapes=shapes, opset_version=OPSET, verbose=False, optimize=True)
        proto = program.model_proto
        onnx.helper.set_model_props(proto, {ox.SOURCE_KEY: digest})
        onnx.save_model(proto, str(tmp))


def quantize_context(folder: str | Path) -> None:
    """Give the folder's context.onnx int8 weights, in place: ONNX Runtime's dynamic quantisation of its MatMuls
    (weights int8 per output channel, activations quantised on each call; the Attention op and the LayerNorms
    stay float). The weights take 7 bits (`reduce_range`): a u8 x s8 pair then sums below 2^15, so the AVX2
    kernels of CPUs without VNNI, which add pairs in int16 and saturate, give the same result as VNNI's, and the
    check made where the export runs holds on those CPUs too. The file keeps its metadata (the weights' digest)
    and records ox.QUANTIZED_KEY. On the shipped model (docs/SPEED.md, --int8): the forward pass 6.09 -> 4.15 ms of
    CPU per page, the ensemble's |dP| up to 0.0063, 8 of 1,000 pages with other text, test-split token F1 0.9114
    both ways; per output channel rather than per tensor for a smaller |dP| (0.021 against 0.029 for the model
    alone) at the same speed. embed.onnx stays float: its Gemms in int8 saved 0.3 ms more for a |dP| of 0.08."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    path = Path(folder) / ox.CONTEXT
    props = ox.export_metadata(path)  # (read from the bytes: quantize_dynamic loads the model itself)
    if props.get(ox.QUANTIZED_KEY):
        raise ValueError(f"{path} has int8 weights already")
    root = logging.getLogger()
    with tempfile.TemporaryDirectory() as work, atomic_path(path) as tmp:
        quantized, root.disabled, was = Path(work) / ox.CONTEXT, True, root.disabled  # (its advice to pre-process)
        try:
            quantize_dynamic(str(path), str(quantized), op_types_to_quantize=["MatMul"], per_channel=True,
                             reduce_range=True, weight_type=QuantType.QInt8)
        finally:
            root.disabled = was
        proto = onnx.load(str(quantized))
        onnx.helper.set_model_props(proto, {**props, ox.QUANTIZED_KEY: "int8"})
        onnx.save_model(proto, str(tmp))
    record_files(folder, [ox.CONTEXT])  # its new digest into config.json (checked at load)


def _check_model(folder: Path, torch_scorer: ModelScorer, docs: Sequence[Document], int8: bool = False) -> ExportCheck:
    onnx_scorer = ox.OnnxModelScorer.load(folder)
    return _compare(folder, docs, lambda doc: onnx_scorer.page_probabilities(onnx_scorer.inputs(doc)),
                    lambda doc: torch_scorer.forward([doc], torch_scorer.prepare([doc]))[0], "the torch model", int8)


def _compare(folder: Path, docs: Sequence[Document], ours: Callable[[Document], np.ndarray],
             reference: Callable[[Document], np.ndarray], what: str, int8: bool = False) -> ExportCheck:
    """The export's P(body) against the reference's on every page, and the blocks the folder's rule keeps
    (`int8`: within INT8_TOLERANCE and INT8_KEPT_DIFFER, else TOLERANCE and on every page)."""
    rule = DecisionRule.from_meta(read_meta(folder))
    worst, differ, blocks = 0.0, 0, 0
    for doc in docs:
        mine, ref = ours(doc), reference(doc)
        worst = max(worst, float(np.abs(mine - ref).max()))
        blocks += len(ref)
        differ += rule.decide(doc, mine, "onnx").kept != rule.decide(doc, ref, "reference").kept
    check = ExportCheck(folder, len(docs), blocks, worst, differ, int8)
    if worst > (INT8_TOLERANCE if int8 else TOLERANCE) or differ > (INT8_KEPT_DIFFER * len(docs) if int8 else 0):
        raise ExportMismatch(f"ONNX export differs from {what}: {check}")
    return check


class _EmbedGraph(nn.Module):
    """One page's bags and features -> (n, d_model) block vectors, with their position encoding when the model
    has one: embed_blocks and _place of the model for an unpadded page, the EmbeddingBags as Gather + index_add
    (ScatterND), which add in torch's order."""

    def __init__(self, model: BlockClassifier, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, names
        if model.tags is not None:
            self.register_buffer("tag_table", _compact(model.tags.weight))
        if model.hash is not None:
            self.register_buffer("text_table", _compact(model.hash.bag.weight))

    @classmethod
    def build(cls, model: BlockClassifier) -> tuple[_EmbedGraph, tuple[str, ...]]:
        """The graph and its input names, for this model's inputs."""
        cfg = model.cfg
        names = ["features"]
        if cfg.use_tag_path:
            names += ["tag_ids", "tag_owner", "tag_count"]
        if cfg.use_text:
            names += ["text_ids", "text_owner", "text_count"]
        if cfg.use_context and cfg.positional:
            names.append("position")
        return cls(model, tuple(names)).eval(), tuple(names)

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
        t = dict(zip(self.names, tensors, strict=True))
        feats = t["features"]
        parts = []
        if "text_ids" in t:
            parts.append(self.model.text_norm(_bag(self.text_table, t["text_ids"], t["text_owner"], t["text_count"])))
        if "tag_ids" in t:
            parts.append(_bag(self.tag_table, t["tag_ids"], t["tag_owner"], t["tag_count"]))
        parts.append(feats)
        h = self.model.embed(torch.cat(parts, dim=-1))
        return h + t["position"] if "position" in t else h


def _bag(table: torch.Tensor, ids: torch.Tensor, owner: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Mean of each block's rows (zeros for an empty bag: its count is given as 1)."""
    rows = table.index_select(0, ids).float()  # (Gather; table[ids] exports as the slower GatherND)
    return torch.zeros(count.shape[0], table.shape[1], dtype=torch.float32).index_add(0, owner, rows) / count


class _ContextGraph(nn.Module):
    """(b, w, d_model) windows -> (b, w, 2) logits: the page context (no padding) and the head.

    The Transformer's layers are written out from their weights (pre-norm, as the model builds them) with
    ONNX's Attention op (opset 23) for the attention: the exporter's own translation of
    nn.TransformerEncoderLayer spends a third of its time in reshapes and transposes around it (a 161-block
    page: 7.4 against 7.8 ms; 512 blocks: 24.9 against 31.3 ms on one thread). The export's check holds it to
    the model's answers."""

    def __init__(self, model: BlockClassifier) -> None:
        super().__init__()
        self.model = model
        layers = model.context.layers if model.context is not None else []
        if not all(layer.norm_first for layer in layers):
            raise ValueError("the export writes pre-norm Transformer layers (norm_first=True), as the model builds")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        context = self.model.context
        if context is not None:
            for layer in context.layers:
                sa = layer.self_attn
                q, k, v = F.linear(layer.norm1(x), sa.in_proj_weight, sa.in_proj_bias).chunk(3, dim=-1)
                a = torch.onnx.ops.attention(q, k, v, q_num_heads=sa.num_heads, kv_num_heads=sa.num_heads)[0]
                x = x + sa.out_proj(a)
                x = x + layer.linear2(F.gelu(layer.linear1(layer.norm2(x))))
            x = context.norm(x)
        return self.model.head(x)


def _compact(weight: torch.Tensor) -> torch.Tensor:
    """The table in float16 when that holds its values exactly (the shipped weights are stored so), else as is."""
    half = weight.detach().half()
    return half if bool((half.float() == weight).all()) else weight.detach()


# ----------------------------------------------------------------------------------------- the trees
def export_trees(folder: str | Path, docs: Sequence[Document] | None = None) -> ExportCheck:
    """Write trees.onnx for a gbt folder and check it against the NumPy walk (module docstring)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder = Path(folder)
    model = GbtModel.load(folder)
    t = model.trees
    n = len(t["value"])
    roots = t["roots"].astype(np.int64)
    tree_of = np.searchsorted(roots, np.arange(n), side="right") - 1
    local = np.arange(n) - roots[tree_of]
    leaf = t["left"] == np.arange(n)

    def child(side: str) -> list[int]:
        return np.where(leaf, 0, t[side] - roots[tree_of]).astype(np.int64).tolist()

    node = helper.make_node(
        "TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml",
        nodes_treeids=tree_of.tolist(), nodes_nodeids=local.tolist(),
        nodes_featureids=np.where(leaf, 0, t["feature"]).astype(np.int64).tolist(),
        nodes_values_as_tensor=numpy_helper.from_array(np.where(leaf, 0.0, t["threshold"]).astype(np.float64)),
        nodes_modes=["LEAF" if x else "BRANCH_LEQ" for x in leaf],  # x <= threshold: the true (left) child
        nodes_truenodeids=child("left"), nodes_falsenodeids=child("right"),
        nodes_missing_value_tracks_true=np.where(leaf, 0, t["nan_left"]).astype(np.int64).tolist(),
        target_treeids=tree_of[leaf].tolist(), target_nodeids=local[leaf].tolist(),
        target_ids=[0] * int(leaf.sum()),
        target_weights_as_tensor=numpy_helper.from_array(t["value"][leaf].astype(np.float64)),
        n_targets=1, aggregate_function="SUM",
        base_values_as_tensor=numpy_helper.from_array(np.array([model.baseline], np.float64)),
    )
    width = len(feature_names(model.cfg))
    graph = helper.make_graph([node], "trees", [helper.make_tensor_value_info("X", TensorProto.DOUBLE, ["n", width])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["n", 1])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                            helper.make_opsetid("ai.onnx.ml", 3)])
    onnx.helper.set_model_props(proto, {ox.SOURCE_KEY: ox.weights_digest(folder)})
    path = folder / ox.TREES
    record_files(folder, [ox.WEIGHTS], drop=(ox.TREES,))  # the old export's digest goes with it
    with atomic_path(path) as tmp:
        onnx.save_model(proto, str(tmp))
    try:
        check = _check_trees(folder, model, docs if docs is not None else check_documents())
        record_files(folder, [ox.TREES])  # checked at load (classify/integrity.py)
        return check
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def _check_trees(folder: Path, numpy_model: GbtModel, docs: Sequence[Document]) -> ExportCheck:
    onnx_model = GbtModel.load(folder)
    if onnx_model.engine != "onnx":
        raise ExportMismatch(f"{folder}: trees.onnx was written but is not used")

    def walked(model: GbtModel, numpy: bool) -> Callable[[Document], np.ndarray]:
        def p(doc: Document) -> np.ndarray:
            x = gbt_features(doc.blocks, model.cfg)
            raw = model._numpy_raw(x) if numpy else model.raw(x)
            return (1.0 / (1.0 + np.exp(-raw))).astype(np.float32)
        return p

    return _compare(folder, docs, walked(onnx_model, False), walked(numpy_model, True), "the NumPy walk")


# ----------------------------------------------------------------------------------------- any folder
def export_checkpoint(folder: str | Path, pages: str | Path | None = None, int8: bool = False) -> list[ExportCheck]:
    """Export a model, gbt or ensemble folder (an ensemble: both its parts); the checks, one per part. `int8`:
    the model's context.onnx with int8 weights (export_model)."""
    folder = Path(folder)
    kind = kind_of(folder)
    docs = check_documents(pages)
    if kind == MODEL:
        return [export_model(folder, docs, int8)]
    if kind == GBT:
        return [export_trees(folder, docs)]
    assert kind == ENSEMBLE
    meta = read_ensemble(folder)
    return [export_model(meta["model_path"], docs, int8), export_trees(meta["gbt_path"], docs)]
