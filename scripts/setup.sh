#!/usr/bin/env bash
# Install bodyblocks and everything its tests need on a fresh Debian machine with Python >= 3.11.
#   bash scripts/setup.sh            the package with its training extra (the CPU build of torch), the peers,
#                                    the scale extra (WARC, Parquet, Ray) and test tools
#   bash scripts/setup.sh --browser  also Debian's chromium + chromium-driver (capture tests)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [[ "${1:-}" == "--browser" ]] && ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1; then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
"$PY" -m pip install -q --upgrade pip  # pip 23 cannot resolve lxml[html-clean] twice (trafilatura)
# The CPU wheel first: an unpinned torch would pull a multi-GB CUDA build.
"$PY" -c "import torch" 2>/dev/null || "$PY" -m pip install -q torch==2.13.0
"$PY" -m pip install -q -e ".[train,dev,peers,e5,scale]"
