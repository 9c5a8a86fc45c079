"""Headless Chromium, JavaScript off and every request refused, reading a page's innerText; renders
cached per page and decoded-text hash."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bodyblocks.capture import CHROMIUM_FLAGS

RENDER_VERSION = "2"  # bump when what is rendered changes (file written, flags): the render cache keys on it
CACHE_DIR = Path.home() / ".cache" / "bodyblocks" / "dom_fidelity"
PAGE_TIMEOUT = 20.0
RECYCLE = 300  # pages per browser before a fresh one

# The capture's flags (a container, no background requests), JavaScript off, and requests that fail at once
# instead of hanging: nothing outside the saved file is loaded.
RENDER_FLAGS = (
    *CHROMIUM_FLAGS,
    "--blink-settings=scriptEnabled=false",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
    "--proxy-server=http://127.0.0.1:9",  # nothing listens there: direct-IP requests are refused at once
    "--window-size=1280,2000",
)
CHROMIUM_PREFS = {
    "profile.managed_default_content_settings.javascript": 2,
    "profile.managed_default_content_settings.images": 2,
}
# The tab's URL, the body's innerText, and the innerText of the elements whose lines get their own count.
INNER_TEXT_JS = """
const root = document.body || document.documentElement;
const texts = sel => Array.from(document.querySelectorAll(sel)).map(e => e.innerText || '').filter(t => t.trim());
return [location.href, root ? root.innerText : '', texts('select'), texts('button'), texts('noscript')];
"""
PARTS = ("select", "button", "noscript")  # rendered lines inside these are counted apart (all pages, cheaply)
_REFRESH = re.compile(r"(<meta\b[^>]*?http-equiv\s*=\s*[\"']?\s*)refresh", re.IGNORECASE)


class RenderCache:
    """innerText per page, appended as JSON lines; a record holds for the decoded text it was rendered from."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, dict[str, Any]] = {}
        if path.exists():
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:  # a line cut by a killed run
                        continue
                    self.records[rec["key"]] = rec

    def get(self, key: str, digest: str) -> dict[str, Any] | None:
        rec = self.records.get(key)
        return rec if rec is not None and rec.get("hash") == digest else None

    def put(self, rec: dict[str, Any]) -> None:
        self.records[rec["key"]] = rec
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def render_file_text(text: str) -> bytes:
    """What Chromium loads: the decoded text as UTF-8 behind a BOM, any meta refresh renamed."""
    return b"\xef\xbb\xbf" + _REFRESH.sub(r"\1x-refresh", text).encode("utf-8", errors="surrogatepass")


class Renderer:
    """One headless Chromium (JavaScript off) reused for many pages; restarted every `recycle` pages or after
    any failure."""

    def __init__(self, timeout: float = PAGE_TIMEOUT, recycle: int = RECYCLE) -> None:
        from bodyblocks.capture.chromium import check_available
        from bodyblocks.capture.settings import CHROMEDRIVER, CHROMIUM

        self.webdriver = check_available(CHROMIUM, CHROMEDRIVER)
        self.chromium, self.chromedriver = CHROMIUM, CHROMEDRIVER
        self.timeout, self.recycle = timeout, recycle
        self.driver: Any = None
        self.served = 0
        self.starts = 0
        self.workdir = Path(tempfile.mkdtemp(prefix="dom_fidelity_"))
        self.profile: Path | None = None

    def _start(self) -> None:
        from selenium.webdriver.chrome.service import Service

        self.profile = Path(tempfile.mkdtemp(prefix="profile_", dir=self.workdir))
        options = self.webdriver.ChromeOptions()
        options.binary_location = self.chromium
        options.unhandled_prompt_behavior = "dismiss"
        for flag in (*RENDER_FLAGS, f"--user-data-dir={self.profile}"):
            options.add_argument(flag)
        options.add_experimental_option("prefs", CHROMIUM_PREFS)
        self.driver = self.webdriver.Chrome(service=Service(self.chromedriver), options=options)
        self.driver.set_page_load_timeout(self.timeout)
        self.driver.set_script_timeout(self.timeout)
        self.served = 0
        self.starts += 1

    def stop(self) -> None:
        if self.driver is not None:
            try:
                self.driver.quit()
            except Exception:  # noqa: BLE001 - a dead browser is still stopped
                pass
            self.driver = None
        if self.profile is not None:
            shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def render(self, text: str) -> tuple[str, str, dict[str, list[str]]]:
        """(status, innerText, {part: innerTexts}): status "ok", "timeout", "navigated" (the tab left the file)
        or "error: ..."; `part` is one of PARTS."""
        from selenium.common.exceptions import TimeoutException

        if self.driver is None or self.served >= self.recycle:
            self.stop()
            self._start()
        self.served += 1
        page = self.workdir / "page.html"
        page.write_bytes(render_file_text(text))
        uri = page.as_uri()
        try:
            self.driver.get(uri)
            href, inner, *parts = self.driver.execute_script(INNER_TEXT_JS)
        except TimeoutException:
            self.stop()
            return "timeout", "", {}
        except Exception as exc:  # noqa: BLE001 - any browser failure is this page's, counted by its reason
            self.stop()
            return f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''}", "", {}
        finally:
            page.unlink(missing_ok=True)
        if href != uri:
            self.stop()
            return "navigated", "", {}
        return "ok", inner or "", dict(zip(PARTS, parts, strict=True))
