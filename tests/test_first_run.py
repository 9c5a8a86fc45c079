"""The README's quick start as a new user runs it: scripts/setup.sh makes a virtual environment from the system's
python, whose pip refuses to install into it (PEP 668's EXTERNALLY-MANAGED marker, as on Debian 12 and Ubuntu
24.04), installs the extraction package there, and `.venv/bin/bodyblocks extract data/samples/` extracts.

The system python is /usr/bin/python3 where its standard library has the marker; elsewhere this interpreter, run
with a PYTHONHOME whose standard library is this one's, symlinked, plus a marker (`_marked_python`). pip installs
from the sources pip is configured with (pip config list): a local index or wheel folder makes it offline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from bodyblocks.runtime.files import REPO_ROOT

SAMPLES = REPO_ROOT / "data" / "samples"
MARKER = "EXTERNALLY-MANAGED"
PIP_REFUSAL = "externally-managed-environment"


def _stdlib_of(python: str) -> Path | None:
    try:
        run = subprocess.run([python, "-c", "import sys, sysconfig; print(sys.version_info >= (3, 11)); "
                              "print(sysconfig.get_path('stdlib'))"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = run.stdout.split()
    return Path(lines[1]) if run.returncode == 0 and lines[:1] == ["True"] else None


def _system_python() -> str | None:
    """/usr/bin/python3 when it is >= 3.11, carries the marker and has venv with ensurepip (python3-venv)."""
    python = "/usr/bin/python3"
    stdlib = _stdlib_of(python) if os.access(python, os.X_OK) else None
    if stdlib is None or not (stdlib / MARKER).exists():
        return None
    ok = subprocess.run([python, "-c", "import ensurepip, venv"], capture_output=True).returncode == 0
    return python if ok else None


def _marked_python(tmp: Path) -> str:
    """A `python3` (a shell script) that is this interpreter with a standard library that has the marker: a
    PYTHONHOME whose lib/pythonX.Y links every entry of the real one, beside an EXTERNALLY-MANAGED file. A venv
    made from it is a venv of the real interpreter (the script's PYTHONHOME does not reach the venv's python)."""
    stdlib = Path(sysconfig.get_path("stdlib"))
    home = tmp / "system"
    lib = home / "lib" / stdlib.name
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name != MARKER:
            (lib / entry.name).symlink_to(entry)
    (lib / MARKER).write_text("[externally-managed]\nError=This is a simulated system Python: use a venv.\n")
    real = Path(sys.base_prefix) / "bin" / Path(sys.executable).name
    real = real if real.exists() else Path(os.path.realpath(sys.executable))
    script = home / "bin" / "python3"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\nPYTHONHOME="{home}" exec "{real}" "$@"\n')
    script.chmod(0o755)
    return str(script)


@pytest.mark.slow
def test_the_quick_start_sets_up_a_venv_from_an_externally_managed_python_and_extracts_the_samples(
        tmp_path: Path) -> None:
    python = _system_python() or _marked_python(tmp_path)
    stdlib = _stdlib_of(python)
    assert stdlib is not None and (stdlib / MARKER).exists()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "BODYBLOCKS_MODEL")}
    refused = subprocess.run([python, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "tqdm"],
                             capture_output=True, text=True, env=env)
    if "No module named pip" not in refused.stderr:  # Debian's python3 without python3-pip cannot even try
        assert refused.returncode != 0 and PIP_REFUSAL in refused.stderr, refused.stderr  # what a user hits

    venv = tmp_path / "venv"
    setup = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "setup.sh")], capture_output=True, text=True,
                           env=env | {"PYTHON": python, "BODYBLOCKS_VENV": str(venv)}, timeout=600)
    assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-4000:]
    assert f"source {venv}/bin/activate" in setup.stdout  # how to activate it
    assert "Package would be ignored" not in setup.stdout + setup.stderr
    vpy = venv / "bin" / "python"
    probe = "import importlib.util as u, json; print(json.dumps([bool(u.find_spec(m)) for m in " \
            "('bodyblocks', 'onnxruntime', 'torch', 'sklearn', 'selenium')]))"
    found = json.loads(subprocess.run([str(vpy), "-c", probe], capture_output=True, text=True, env=env,
                                      cwd=tmp_path, check=True).stdout)
    assert found == [True, True, False, False, False]  # the extraction package alone: no torch, no capture

    out = tmp_path / "out"
    run = subprocess.run([str(venv / "bin" / "bodyblocks"), "extract", str(SAMPLES), "--out", str(out),
                          "--no-progress"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr.splitlines()[0].startswith("bodyblocks extract: ")  # the model and engine, first
    assert "onnx" in run.stderr.splitlines()[0]
    golds = sorted(SAMPLES.glob("*.gold.txt"))
    assert golds
    for gold in golds:
        got = (out / gold.name.replace(".gold.txt", ".txt")).read_text(encoding="utf-8")
        lines = [ln for ln in gold.read_text(encoding="utf-8").splitlines() if ln.strip()]
        assert sum(ln in got for ln in lines) >= 0.8 * len(lines), got[:500]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["totals"]["ok"] == len(golds) and report["model"]["engine"] == "onnx"
    assert not (out / ".bodyblocks.lock").exists()
