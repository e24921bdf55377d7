"""Kernel packages as a version axis: which release of a package is installed, and which releases each
adapter supports (docs/history.md).

A kernel package (``PACKAGES``) is one name for the distributions that have shipped it: FLA's kernels
came as ``flash-linear-attention`` (0.1 to 0.3.1) and then as ``fla-core`` (0.3.2 on), one ``fla``
module and one version sequence. An adapter class declares the releases it supports as data,
``releases = Releases(since="0.2.0", why="...")``; ``base.availability`` refuses a variant whose
package is installed at a release outside that range, with a reason naming the release, the range and
why (a SKIP on every case), before the adapter's own ``available()`` runs. Inside the range the
variant runs, and a kernel that then raises is an ERROR like any other.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Package:
    """A kernel package: its distributions (newest name first), the ``source`` of its variants, and
    the variant glob ``verify --release`` selects."""

    name: str
    distributions: tuple[str, ...]
    source: str
    variants: str
    note: str = ""


PACKAGES: dict[str, Package] = {p.name: p for p in (
    Package("fla", ("fla-core", "flash-linear-attention"), "fla-core", "*.fla.*"),
    Package("rwkv-ops", ("rwkv-ops",), "rwkv-ops", "*.rwkv_ops.*"),
    Package("ggml-python", ("ggml-python",), "ggml-python", "*.ggml.*"),
    Package("rwkv", ("rwkv",), "rwkv", "*.rwkv.*", note="ChatRWKV's CUDA kernels: a GPU box only"),
    Package("flashinfer", ("flashinfer-python",), "flashinfer-python", "*.flashinfer.*",
            note="CuTe DSL GDN/KDA kernels: SM90/SM100/SM103/SM120 only (tools/gpu_smoke_flashinfer.py)"),
    Package("rwkv-fla", ("rwkv-fla",), "rwkv-fla", "*.rwkvfla.*",
            note="module rwkvfla; installs its own top-level fla over fla-core's: its own environment only"),
    Package("rwkv7-hf", ("rwkv7-hf",), "rwkv7-hf", "*.rwkv7hf.*"),
    Package("vllm", ("vllm",), "vllm", "*.vllm.*", note="its FLA fork; pins its own torch: an environment of its own"),
    Package("sglang", ("sglang",), "sglang", "*.sglang.*",
            note="its FLA fork and CuTe-DSL GDN decode; pins torch==2.14.1: its own virtualenv"),
    Package("flash-qla", ("flash-qla",), "flash-qla", "*.flashqla.*",
            note="TileLang GDN kernels, SM90+ only; tilelang's apache-tvm-ffi pin and fla-core's dispatch to it: "
                 "a folder of its own"),
)}


def package_of_source(source: str) -> Package | None:
    return next((p for p in PACKAGES.values() if p.source == source), None)


def parse(version: str) -> tuple[int, ...]:
    """The numeric release of a version string: ``"0.1"`` -> (0, 1, 0), ``"0.6.1.dev3+gabc"`` ->
    (0, 6, 1) (a build from a checkout counts as the release it leads to), compared as tuples."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", version)
    if not m:
        raise ValueError(f"not a release version: {version!r}")
    parts = tuple(int(x) for x in m.group(1).split("."))
    return parts + (0,) * (3 - len(parts))


def dist_versions(*dists: str) -> dict[str, str]:
    """The installed version of each distribution, "not installed" for one that is not (adapters' ``versions``:
    the package and its toolchain, for reasons and provenance)."""
    out = {}
    for dist in dists:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def installed(package: str) -> tuple[str, str] | None:
    """``(distribution, version)`` of the installed release of ``package`` (a ``PACKAGES`` name), or
    None. Where several of its distributions are installed (``flash-linear-attention`` >= 0.3.2 is a
    shell around ``fla-core``), the first listed wins."""
    for dist in PACKAGES[package].distributions:
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


@dataclass(frozen=True)
class Releases:
    """The releases of the variant's package an adapter supports: ``since`` (first supported, inclusive)
    and ``until`` (first unsupported, exclusive), either open; ``why`` says what changed at the edges."""

    since: str | None = None
    until: str | None = None
    why: str = ""

    def __contains__(self, version: str) -> bool:
        v = parse(version)
        above = self.since is None or v >= parse(self.since)
        return above and (self.until is None or v < parse(self.until))

    def __str__(self) -> str:
        lo = f">= {self.since}" if self.since else ""
        hi = f"< {self.until}" if self.until else ""
        return ", ".join(x for x in (lo, hi) if x) or "any"


def installed_in(source: str, releases: Releases) -> bool:
    """Whether the installed release of ``source``'s package lies in ``releases`` (False when none is
    installed): for limits inside an adapter's range, e.g. a dtype one release range refuses."""
    pkg = package_of_source(source)
    found = installed(pkg.name) if pkg else None
    return found is not None and found[1] in releases


def out_of_range(source: str, releases: Releases | None) -> str | None:
    """Why a variant of ``source`` with ``releases`` cannot run the installed release, or None."""
    if releases is None or (pkg := package_of_source(source)) is None:
        return None
    found = installed(pkg.name)
    if found is None or found[1] in releases:
        return None  # not installed: the adapter's own available() says so
    dist, version = found
    why = f": {releases.why}" if releases.why else ""
    return f"{dist} {version} is outside this adapter's supported releases ({releases}){why}"
