#!/bin/bash
# A recipe leave-one-source-out, every stage, timed, from nothing: each fold as `bodyblocks build CONFIG` makes it
# (the config's Transformer and trees trained on the other sources, the blend and rule chosen on their validation
# pages), scored on the left-out source's test pages beside the heuristic and the peers.
# Folds run JOBS at a time, one torch thread each (on 2 cores two one-thread folds train faster than one fold on
# two threads). Each stage's wall time is printed and written to OUT/seconds.txt; the table is OUT/loso.md.
# The datasets' processed caches are made once before (about 90 s). --nested adds loso_blend's blend chosen on
# the other folds' test pages (a grid of 288 settings replayed on every fold: half an hour and more).
# Usage: benchmarks/loso_timed.sh [CONFIG] [OUT] [JOBS] [--nested]   (default configs/default.yaml, runs/loso-timed, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${1:-configs/default.yaml}
OUT=${2:-runs/loso-timed}
JOBS=${3:-2}
NESTED=${4:-}
FOLDS=(wcxb-dev dragnet cleaneval-en l3s-gn1 cleanportaleval daniel)
mkdir -p "$OUT"
: > "$OUT/seconds.txt"
L="python -m benchmarks.loso --config $CONFIG --no-shipped --threads 1 --out $OUT/folds --doc $OUT/loso.md"

stage() {  # stage NAME COMMAND...: run it, print and record its wall seconds
    local name=$1 start=$SECONDS
    shift
    "$@"
    echo "$name $((SECONDS - start))" | tee -a "$OUT/seconds.txt"
}

folds_in_parallel() {  # folds_in_parallel ARGS...: the loso command over the folds, JOBS processes at once
    local i k pids=()
    for ((i = 0; i < JOBS; i++)); do
        local mine=()
        for ((k = i; k < ${#FOLDS[@]}; k += JOBS)); do mine+=("${FOLDS[k]}"); done
        [ ${#mine[@]} -eq 0 ] || { $L "$@" --folds "${mine[@]}" > "$OUT/log-$i-$(date +%s).txt" 2>&1 & pids+=($!); }
    done
    local failed=0
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    return $failed
}

total=$SECONDS
stage models folds_in_parallel --parts model --train-only
stage trees folds_in_parallel --parts gbt --train-only
stage peers folds_in_parallel --parts                           # the heuristic and the peers, eval-*.json
stage built folds_in_parallel --parts model gbt ensemble        # blends tuned on validation, then evaluated
$L --parts model gbt ensemble --report-only > /dev/null
echo "total $((SECONDS - total))" | tee -a "$OUT/seconds.txt"
if [ "$NESTED" = "--nested" ]; then
    stage nested python -m benchmarks.loso_blend --models "$OUT/folds" --trees "$OUT/folds" --peers "$OUT/folds" \
        --out "$OUT/blend" --doc "$OUT/nested.md"
fi
