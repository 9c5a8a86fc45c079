#!/usr/bin/env bash
# Set bodyblocks up in a virtual environment (.venv at the top of the repository), on a stock Debian or Ubuntu
# whose own python3 refuses `pip install` (externally-managed-environment) as on any other machine.
#   bash scripts/setup.sh                   the extraction package alone: the shipped models on ONNX Runtime
#                                           (CPU), no torch
#   bash scripts/setup.sh --dev             also the training extra (torch: the CPU build where the machine has
#                                           no NVIDIA GPU), the peers, e5, the scale extra, capture and test tools
#   bash scripts/setup.sh --dev --browser   also Debian's chromium + chromium-driver (capture tests)
# Environment: PYTHON (default python3) makes the environment; BODYBLOCKS_VENV (default .venv) is where it goes.
# Then: .venv/bin/bodyblocks ..., .venv/bin/python -m pytest -q; or `source .venv/bin/activate` first.
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=0 BROWSER=0
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    --browser) BROWSER=1 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (--dev, --browser)" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-python3}
VENV=${BODYBLOCKS_VENV:-.venv}
TORCH=torch==2.13.0  # the version the tests and the shipped exports were made with
SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"

apt_install() {  # Debian/Ubuntu packages, quietly
  command -v apt-get >/dev/null || { echo "setup.sh: please install $* with your system's package manager" >&2; exit 1; }
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

command -v "$PY" >/dev/null || { echo "setup.sh: $PY not found: install Python 3.11 or newer" >&2; exit 1; }
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "setup.sh: bodyblocks needs Python 3.11 or newer; $PY is $("$PY" -V 2>&1) (PYTHON=python3.12 bash $0)" >&2; exit 1; }

if [[ ! -x "$VENV/bin/python" ]]; then
  # Debian and Ubuntu ship venv without ensurepip: python3-venv (or python3.X-venv) brings it
  if ! "$PY" -c 'import ensurepip, venv' 2>/dev/null; then
    minor=$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
    echo "setup.sh: installing python${minor}-venv (venv without ensurepip)" >&2
    apt_install "python${minor}-venv" || apt_install python3-venv
  fi
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"

if [[ $BROWSER -eq 1 ]] && ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1; then
  apt_install chromium chromium-driver
fi

# pip first, for this install and the extras a user adds later: pip 23 (Debian 12's venv) stops with an
# AssertionError on lxml[html-clean] asked for twice (trafilatura, the peers extra). Offline, the pip there is kept.
"$VPY" -m pip install -q --upgrade pip || echo "setup.sh: pip was not upgraded; $("$VPY" -m pip --version)" >&2
if [[ $DEV -eq 0 ]]; then
  "$VPY" -m pip install -q -e .
else
  if ! "$VPY" -c "import torch" 2>/dev/null; then
    # An unpinned torch from PyPI is the CUDA build (GBs): without an NVIDIA GPU, the CPU build from PyTorch's
    # own index; where that index cannot be reached, pip's configured sources (PyPI, a wheel on disk).
    if ! command -v nvidia-smi >/dev/null 2>&1 && "$VPY" - <<'EOF'
import sys, urllib.request
try:
    urllib.request.urlopen("https://download.pytorch.org/whl/cpu/torch/", timeout=10).close()
except Exception:
    sys.exit(1)
EOF
    then
      "$VPY" -m pip install -q "$TORCH" --index-url https://download.pytorch.org/whl/cpu
    else
      "$VPY" -m pip install -q "$TORCH"
    fi
  fi
  # python-magic (the scale extra: datatrove's WarcReader) loads the system's libmagic
  if ! "$VPY" -c 'import ctypes.util, sys; sys.exit(ctypes.util.find_library("magic") is None)'; then
    apt_install libmagic1
  fi
  "$VPY" -m pip install -q -e ".[train,dev,peers,e5,scale,capture]"
fi

echo "bodyblocks is installed in $VENV: run $VENV/bin/bodyblocks, or first \`source $VENV/bin/activate\` (then bodyblocks, python -m pytest)"
