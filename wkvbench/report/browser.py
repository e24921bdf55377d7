"""Headless Chromium for the report: a screenshot of the page, its rendered DOM, and a small PNG reader
to tell a blank page from a drawn one (no imaging library needed).

``chromium --headless`` runs with ``--no-sandbox`` (CI containers run as root) and a private
profile directory, bounded by a timeout.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    exe = find_chromium()
    if exe is None:
        raise FileNotFoundError("chromium not installed (apt-get install chromium)")
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


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def read_png(path: Path) -> np.ndarray:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what chromium writes) to an (H, W, C) uint8 array."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    if hdr is None:
        raise ValueError(f"{path}: PNG without IHDR")
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"{path}: only 8-bit RGB/RGBA non-interlaced PNGs are read "
                         f"(depth {depth}, colour type {ctype}, interlace {interlace})")
    bpp = 3 if ctype == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(h, 1 + w * bpp)
    out = np.zeros((h, w * bpp), dtype=np.uint8)
    prev = np.zeros(w * bpp, dtype=np.uint8)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:]
        if f == 0:
            cur = line.copy()
        elif f == 1:  # Sub: running sum per channel, modulo 256
            cur = np.cumsum(line.reshape(w, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif f == 2:  # Up
            cur = line + prev
        elif f in (3, 4):  # Average / Paeth depend on the reconstructed left neighbour: sequential
            cur_l = [0] * (w * bpp)
            lin, up = line.tolist(), prev.tolist()
            for i in range(w * bpp):
                a = cur_l[i - bpp] if i >= bpp else 0
                c = up[i - bpp] if i >= bpp else 0
                pred = (a + up[i]) // 2 if f == 3 else _paeth(a, up[i], c)
                cur_l[i] = (lin[i] + pred) & 0xFF
            cur = np.array(cur_l, dtype=np.uint8)
        else:
            raise ValueError(f"{path}: bad PNG filter type {f} in row {y}")
        out[y], prev = cur, cur
    return out.reshape(h, w, bpp)


def png_stats(path: Path) -> PngStats:
    img = read_png(path)[:, :, :3]
    flat = img.reshape(-1, 3).astype(np.uint32)
    keys = (flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]
    return PngStats(img.shape[1], img.shape[0], int(np.unique(keys).size), float(np.mean(keys != 0xFFFFFF)))
