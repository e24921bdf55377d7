"""Headless Chromium for the report: a screenshot of the page, its rendered DOM, and the screenshot's
pixel statistics to tell a blank page from a drawn one (decoded by Pillow).

Chromium is a system dependency (``apt-get install chromium`` on Debian/Ubuntu); the tests that need
it skip with that reason where it is absent.

``chromium --headless`` runs with ``--no-sandbox`` (CI containers run as root) and a private
profile directory, bounded by a timeout.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    exe = find_chromium()
    if exe is None:
        raise FileNotFoundError("chromium not installed (a system dependency: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="wkvbench-chromium-") as profile:
        return subprocess.run([exe, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                               "--no-first-run", f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout)


def screenshot(page: Path, png: Path, width: int = 1400, height: int = 2000, timeout: float = 120) -> Path:
    """Render ``page`` (a local file) and write a ``width`` x ``height`` PNG."""
    png.parent.mkdir(parents=True, exist_ok=True)
    png.unlink(missing_ok=True)
    p = _run([f"--screenshot={png.resolve()}", f"--window-size={width},{height}", page.resolve().as_uri()],
             timeout)
    if not png.exists():
        raise RuntimeError(f"chromium wrote no screenshot (exit {p.returncode}): {p.stderr[-2000:]}")
    return png


def dump_dom(page: Path, timeout: float = 120) -> str:
    """The DOM after rendering (scripts run), serialised by chromium."""
    p = _run(["--dump-dom", page.resolve().as_uri()], timeout)
    if p.returncode != 0:
        raise RuntimeError(f"chromium --dump-dom failed (exit {p.returncode}): {p.stderr[-2000:]}")
    return p.stdout


@dataclass
class PngStats:
    width: int
    height: int
    colours: int  # distinct RGB colours
    non_white: float  # fraction of pixels that are not pure white


def read_png(path: Path) -> np.ndarray:
    """An RGB or RGBA PNG (what chromium writes) as an (H, W, C) uint8 array, decoded by Pillow."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            if im.format != "PNG":
                raise ValueError(f"{path}: not a PNG file ({im.format})")
            if im.mode not in ("RGB", "RGBA"):
                im = im.convert("RGBA" if "A" in im.mode else "RGB")
            return np.asarray(im)
    except UnidentifiedImageError:
        raise ValueError(f"{path}: not a PNG file") from None


def png_stats(path: Path) -> PngStats:
    img = read_png(path)[:, :, :3]
    flat = img.reshape(-1, 3).astype(np.uint32)
    keys = (flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]
    return PngStats(img.shape[1], img.shape[0], int(np.unique(keys).size), float(np.mean(keys != 0xFFFFFF)))
