#!/usr/bin/env bash
# Regenerate benchmarks/results/evaluation/: every extractor on the TEST split of every dataset in the datasets root
# (full gold: cleaneval-en cleanportaleval daniel dragnet l3s-gn1 wcxb-dev; snippets only:
# trafilatura-eval) and on the whole 300-page synthetic corpus, then the merged tables
# (python -m benchmarks.evaluation_summary -> benchmarks/results/evaluation/summary.md, summary.json, accuracy.png).
#
# One `bodyblocks evaluate` run per (dataset, extractor) into OUT/<dataset>/<extractor>/ (report.json,
# pages.csv, report.md, accuracy.png, console.txt). A run whose report.json exists is skipped unless
# --force, so an interrupted run resumes and the model can be added later without redoing the baselines.
#
# Usage: benchmarks/run_evaluation.sh [--checkpoint DIR] [--only NAMES] [--datasets NAMES] [--limit N]
#                                     [--workers N] [--out DIR] [--synth-dir DIR] [--force] [--summary-only]
#   --checkpoint DIR  model folder (default checkpoints/default; e.g. runs/default/best before shipping);
#                     `model` runs only when DIR/model.safetensors exists
#   --only NAMES      comma-separated extractors to run (default: every available one)
#   --datasets NAMES  comma-separated datasets (default: all below, synth-300 included)
#   --limit N         at most N pages per dataset, evenly spread (default: the whole test split)
# Environment: BODYBLOCKS_DATASETS (datasets root; default bodyblocks.runtime.files.datasets_root(), the repository's
# ../shared/datasets), NICE (niceness, default 15). Runs in the repository of the installed package
# (bodyblocks.runtime.files.REPO_ROOT), whatever the current folder.
set -euo pipefail

REPO="$(python -c 'from bodyblocks.runtime.files import REPO_ROOT; print(REPO_ROOT)')"
cd "$REPO"

ROOT="$(python -c 'from bodyblocks.runtime.files import datasets_root; print(datasets_root() or "")')"
NICE="${NICE:-15}"
CHECKPOINT="checkpoints/default"
GBT_DIR="checkpoints/gbt"
ENSEMBLE_DIR="checkpoints/ensemble"
OUT="benchmarks/results/evaluation"
SYNTH_DIR="${TMPDIR:-/tmp}/bodyblocks-eval/synth-300"  # generated data stays out of the repository
ONLY=""
LIMIT=""
WORKERS=1
FORCE=0
SUMMARY_ONLY=0
REAL_DATASETS="cleaneval-en cleanportaleval daniel dragnet l3s-gn1 wcxb-dev trafilatura-eval"
DATASETS="$REAL_DATASETS synth-300"
BASELINES="density heuristic scorer regex longest trafilatura readability gne"

die() { echo "run_evaluation.sh: $*" >&2; exit 2; }
need() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --checkpoint) need "$@"; CHECKPOINT="$2"; shift 2 ;;
    --only) need "$@"; ONLY="${2//,/ }"; shift 2 ;;
    --datasets) need "$@"; DATASETS="${2//,/ }"; shift 2 ;;
    --limit) need "$@"; LIMIT="$2"; shift 2 ;;
    --workers) need "$@"; WORKERS="$2"; shift 2 ;;
    --out) need "$@"; OUT="$2"; shift 2 ;;
    --synth-dir) need "$@"; SYNTH_DIR="$2"; shift 2 ;;
    --force) FORCE=1; shift ;;
    --summary-only) SUMMARY_ONLY=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done

# The extractors to run: the baselines and peers always; model, gbt and ensemble when their checkpoints exist.
extractors() {
  local names="$BASELINES"
  if [[ -f "$CHECKPOINT/model.safetensors" ]]; then names="$names model"
  else echo "no $CHECKPOINT/model.safetensors: model skipped" >&2; fi
  if [[ -d "$GBT_DIR" ]]; then names="$names gbt"
  else echo "no $GBT_DIR: gbt skipped" >&2; fi
  if [[ -f "$ENSEMBLE_DIR/config.json" ]]; then names="$names ensemble"
  else echo "no $ENSEMBLE_DIR/config.json: ensemble skipped" >&2; fi
  if [[ -n "$ONLY" ]]; then
    local keep="" n
    for n in $ONLY; do
      [[ " $names " == *" $n "* ]] || die "extractor $n is not available here (have: $names)"
      keep="$keep $n"
    done
    names="$keep"
  fi
  echo $names
}

# A dataset name -> "FOLDER [--split test]". synth-300 is generated once (prepare_datasets) and used
# whole: the synthetic pages carry no split, and no model is trained on them.
dataset_args() {
  if [[ "$1" == synth-300 ]]; then echo "$SYNTH_DIR"; else echo "$ROOT/$1 --split test"; fi
}

prepare_datasets() {
  local name
  for name in $DATASETS; do
    if [[ "$name" == synth-300 ]]; then
      [[ -f "$SYNTH_DIR/pages.jsonl" ]] && continue
      mkdir -p "$(dirname "$SYNTH_DIR")"
      nice -n "$NICE" bodyblocks data synth --out "$SYNTH_DIR" --pages 300 --seed 0
    else
      [[ -n "$ROOT" ]] || die "no datasets root for $name (set BODYBLOCKS_DATASETS)"
      [[ -f "$ROOT/$name/pages.jsonl" ]] || die "dataset $ROOT/$name not found (set BODYBLOCKS_DATASETS)"
    fi
  done
}

run_one() {
  local dataset="$1" extractor="$2" target="$OUT/$1/$2"
  if [[ -f "$target/report.json" && $FORCE -eq 0 ]]; then
    echo "skip $dataset/$extractor (report exists; --force to redo)"
    return 0
  fi
  local args=(evaluate $(dataset_args "$dataset") --extractor "$extractor" --workers "$WORKERS" --out "$target"
              --by-lang --no-progress)
  [[ -n "$LIMIT" ]] && args+=(--limit "$LIMIT")
  [[ "$extractor" == model ]] && args+=(--checkpoint "$CHECKPOINT")
  mkdir -p "$target"
  local start=$SECONDS
  if nice -n "$NICE" bodyblocks "${args[@]}" >"$target/console.txt" 2>&1; then
    echo "done $dataset/$extractor in $((SECONDS - start)) s: bodyblocks ${args[*]}"
  else
    echo "FAILED $dataset/$extractor (see $target/console.txt): bodyblocks ${args[*]}" >&2
    rm -f "$target/report.json"
    FAILED=$((FAILED + 1))
  fi
}

FAILED=0
if [[ $SUMMARY_ONLY -eq 0 ]]; then
  NAMES="$(extractors)"
  prepare_datasets
  echo "extractors: $NAMES; datasets: $DATASETS; workers $WORKERS; limit ${LIMIT:-none}; nice $NICE"
  TOTAL_START=$SECONDS
  for dataset in $DATASETS; do
    for extractor in $NAMES; do
      run_one "$dataset" "$extractor"
    done
  done
  echo "all runs in $((SECONDS - TOTAL_START)) s, $FAILED failed"
fi
nice -n "$NICE" python -m benchmarks.evaluation_summary "$OUT" --real $REAL_DATASETS
exit $((FAILED > 0))
