"""The report in a real browser: Playwright driving the system's chromium (no browser download), for a
screenshot of the page and for the browser test (its scripts ran, its charts were drawn, its filters
work). The screenshot's pixels are read by Pillow.

Chromium is a system dependency (Debian/Ubuntu: ``apt-get install chromium``), and playwright is in the
``test`` dependency group only: where either is missing, ``unavailable()`` says which, and the browser
test skips with that reason.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BROWSERS = ("chromium", "chromium-browser")  # Debian's and Ubuntu's names of the system chromium
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--hide-scrollbars"]  # CI containers run as root


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def unavailable() -> str | None:
    """Why the report cannot be opened in a browser here, or None when it can."""
    if find_chromium() is None:
        return ("chromium not found on PATH (a system dependency, not installed by nox: "
                "apt-get install chromium; docs/report.md)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright not installed (it is in the `test` dependency group: nox -s tests installs it)"
    return None


@contextlib.contextmanager
def open_page(page: Path, width: int = 1400, height: int = 2000, timeout: float = 120) -> Iterator:
    """A Playwright page showing ``page`` (a local file) after its scripts ran (``body[data-ready]`` is
    set by the report's script once its charts are drawn; other pages: after the load event)."""
    why = unavailable()
    if why:
        raise FileNotFoundError(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=find_chromium(), args=LAUNCH_ARGS,
                                     timeout=timeout * 1000)
        try:
            tab = browser.new_page(viewport={"width": width, "height": height})
            tab.set_default_timeout(timeout * 1000)
            tab.goto(page.resolve().as_uri(), wait_until="load")
            if tab.locator("#chart-data").count():
                tab.wait_for_selector("body[data-ready]", state="attached")
            yield tab
        finally:
            browser.close()


def screenshot(page: Path, png: Path, width: int = 1400, height: int = 2000, timeout: float = 120) -> Path:
    """Render ``page`` (a local file) and write a ``width`` x ``height`` PNG of its top."""
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    with open_page(page, width, height, timeout) as tab:
        tab.screenshot(path=str(png), full_page=False)
    if not png.exists():
        raise RuntimeError(f"chromium wrote no screenshot of {page}")
    return png


@dataclass
class PngStats:
    width: int
    height: int
    colours: int  # distinct RGB colours
    non_white: float  # fraction of pixels that are not pure white


def read_png(path: Path) -> np.ndarray:
    """A PNG as an (H, W, 3 or 4) uint8 array, decoded by Pillow (palette and grey images converted)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            if im.format != "PNG":
                raise ValueError(f"{path}: not a PNG file ({im.format})")
            if im.mode not in ("RGB", "RGBA"):
                im = im.convert("RGBA" if "A" in im.mode or "transparency" in im.info else "RGB")
            return np.asarray(im)
    except UnidentifiedImageError:
        raise ValueError(f"{path}: not a PNG file") from None


def png_stats(path: Path) -> PngStats:
    img = read_png(path)[:, :, :3]
    flat = img.reshape(-1, 3).astype(np.uint32)
    keys = (flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]
    return PngStats(img.shape[1], img.shape[0], int(np.unique(keys).size), float(np.mean(keys != 0xFFFFFF)))
