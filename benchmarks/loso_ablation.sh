#!/bin/bash
# docs/GENERALIZATION.md's ablation table, every row: the shipped recipe leave-one-source-out (its table is the
# page's #loso section), then each shipped component taken out or swapped, on the same host-disjoint folds.
# Each row's figure is the "mean" column of the first table of runs/loso-ablation/ROW.md (nested blend choice).
# A fold's Transformer costs 15 minutes to an hour on 2 cores (e5: embed the datasets first, a GPU helps); a
# rerun resumes (finished folds are kept). Usage: benchmarks/loso_ablation.sh [--report-only]
set -ex
cd "$(dirname "$0")/.."
R=${1:-}
H="--set data.exclude_sites_of=[{fold}]"  # no training page from a host of the left-out source
L="python -m benchmarks.loso --no-shipped --train-only $H"
B="python -m benchmarks.loso_blend --peers runs/loso-peers $R"
D=runs/loso-ablation
mkdir -p $D

# the parts: the shipped recipe's models and vocabulary trees, and the peers' figures on the same pages
if [ -z "$R" ]; then
    $L --out runs/loso-recipe --parts model --epochs 3
    $L --out runs/loso-vocab --parts gbt --set gbt.tag_buckets=0 --set gbt.tag_vocab=256
    python -m benchmarks.loso --out runs/loso-peers --parts --no-shipped
    # the swapped components: no context layers (fast preset), hashed tag-path trees, e5-small vectors (accurate)
    $L --out runs/loso-nocontext --parts model --epochs 3 --set model.use_context=false
    $L --out runs/loso-hashed --parts gbt --set gbt.tag_buckets=128 --set gbt.tag_vocab=0
    bodyblocks data embed all --config configs/e5.yaml --set model.encoder.max_length=64 \
        --set model.encoder.precision=bf16
    $L --out runs/loso-e5 --parts model --epochs 3 --set model.encoder.kind=e5-small --set model.encoder.dim=384 \
        --set model.encoder.max_length=64 --set model.encoder.precision=bf16
fi

# the rows (the shipped recipe and its row without the vote: docs/BLENDS.md#loso)
$B --models runs/loso-recipe --trees runs/loso-vocab --out runs/loso-blend --doc docs/BLENDS.md#loso
$B --models runs/loso-nocontext --trees runs/loso-vocab --out $D/nocontext --doc $D/nocontext.md
$B --models runs/loso-recipe --trees runs/loso-vocab --grid weight=0 --grid vote=0,0.1,0.2,0.3,0.4 \
    --out $D/no-model --doc $D/no-model.md
$B --models runs/loso-recipe --trees runs/loso-hashed --out $D/hashed --doc $D/hashed.md
$B --models runs/loso-e5 --trees runs/loso-vocab --out $D/e5 --doc $D/e5.md
