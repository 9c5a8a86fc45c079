"""The parts of the DOM-fidelity benchmark (`python -m benchmarks.dom_fidelity`, the driver that measures each page).

  lines.py   rendered lines and our blocks compared, the prologue check, the pages chosen
  render.py  headless Chromium (JavaScript off, no request) reading innerText; the render cache
  causes.py  why a rendered line is missing: where it sits in html5lib's tree and in libxml2's
  report.py  the Markdown report (every page) and the JSON beside it; the hand-checked notes
"""
