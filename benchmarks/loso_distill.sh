#!/usr/bin/env bash
# Leave-one-source-out with the model's n-gram table distilled from multilingual-e5-small (docs/generalization-blend-distill.md).
#
# Per fold S: the table fitted to e5-small's cached vectors of the other five sources' block texts (every page of
# them: S is left out whole), then the fold's Transformer trained 3 epochs from it with the table kept fixed.
# Needs the teacher's vectors first (bodyblocks data embed ..., docs/generalization-blend-e5.md) and, for the
# blend, the shipped recipe's trees per fold (runs/loso-vocab) and the peers' evaluations (runs/loso-e5):
#   benchmarks/loso_distill.sh
#   python -m benchmarks.loso_blend --models runs/loso-distill --trees runs/loso-vocab --peers runs/loso-e5 \
#       --out runs/loso-blend-distill --doc docs/generalization-blend-distill.md
set -euo pipefail
ALL="wcxb-dev dragnet cleaneval-en l3s-gn1 cleanportaleval daniel"
TEACHER=(--teacher configs/e5.yaml --teacher-set model.encoder.max_length=64 --teacher-set model.encoder.precision=bf16)
for S in $ALL; do
  OTHERS=$(echo $ALL | tr ' ' '\n' | grep -vx "$S" | paste -sd,)
  [ -f "runs/distill/$S/table.safetensors" ] || bodyblocks distill configs/default.yaml "${TEACHER[@]}" \
    --set "data.datasets=[$OTHERS]" --splits all --out "runs/distill/$S/table.safetensors" --threads 1
done
SETS=(--set "train.text_init=runs/distill/{fold}/table.safetensors" --set train.freeze_text=true)
python -m benchmarks.loso --out runs/loso-distill --doc runs/loso-distill/generalization.md --parts model \
  --no-shipped --train-only --epochs 3 --threads 1 "${SETS[@]}" --folds wcxb-dev dragnet cleaneval-en &
python -m benchmarks.loso --out runs/loso-distill --doc runs/loso-distill/generalization.md --parts model \
  --no-shipped --train-only --epochs 3 --threads 1 "${SETS[@]}" --folds l3s-gn1 cleanportaleval daniel &
wait
