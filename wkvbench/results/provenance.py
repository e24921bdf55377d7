"""Provenance recorded with every result: machine, accelerator, package versions, git commit."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import platform
import subprocess
import sys
from dataclasses import dataclass

from wkvkernels import config

PACKAGES = ("numpy", "torch", "triton", "fla-core", "flash-linear-attention", "rwkv", "rwkv-ops", "keras",
            "ggml-python", "rich", "rwkv-fla", "rwkv7-hf")


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# what a run writes into the tree: its own results do not make the tree that produced them "dirty" (a GPU
# run replaces the committed results set of its machine; the H200 run of db2085c read dirty: true for that)
RESULTS_DIRS = ("reports",)


def _git(*args: str, root: str = ROOT) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _device(torch, j: int, visible: list[str]) -> dict:
    """One CUDA device's identity: its index as the box numbers it (``visible``: CUDA_VISIBLE_DEVICES'
    entries), UUID and PCI address."""
    index = visible[j] if j < len(visible) else str(j)
    try:
        p = torch.cuda.get_device_properties(j)
        pci = (f"{getattr(p, 'pci_domain_id', 0):04x}:{p.pci_bus_id:02x}:{getattr(p, 'pci_device_id', 0):02x}"
               if hasattr(p, "pci_bus_id") else None)
        return {"index": index, "uuid": str(getattr(p, "uuid", "") or "") or None, "pci": pci}
    except Exception as exc:  # noqa: BLE001 - an identity field missing must not lose the run's provenance
        return {"index": index, "error": f"{type(exc).__name__}: {exc}"}


def _gpu() -> dict | None:
    """The CUDA device torch sees, if any (never initialises CUDA when torch is absent)."""
    if "torch" not in sys.modules and _version("torch") is None:
        return None
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        i = torch.cuda.current_device()
        p = torch.cuda.get_device_properties(i)
        drv = None
        try:
            drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            pass
        n = torch.cuda.device_count()
        out = {"name": p.name, "capability": f"{p.major}.{p.minor}", "memory_gib": round(p.total_memory / 2**30, 1),
               "cuda": torch.version.cuda, "driver": drv, "count": n,
               "visible": os.environ.get("CUDA_VISIBLE_DEVICES")}
        # every GPU this process sees, by its index in CUDA_VISIBLE_DEVICES' numbering: a results row of a
        # box of several GPUs names the one it ran on (``gpu``), and this says which card that is
        visible = [x.strip() for x in (out["visible"] or "").split(",") if x.strip()]
        out["devices"] = [_device(torch, j, visible) for j in range(n)]
        return out
    except Exception as exc:  # a broken CUDA install must not stop a CPU run
        return {"error": f"{type(exc).__name__}: {exc}"}


def tree_changes(root: str = ROOT) -> str | None:
    """``git status --porcelain`` of the tree at ``root``, less the results folders a run writes
    (``RESULTS_DIRS``); None where git does not answer."""
    return _git("status", "--porcelain", "--", ".", *(f":(exclude){d}" for d in RESULTS_DIRS), root=root)


def provenance() -> dict:
    # a copy of the tree (a GPU box) may carry no .git or a stale one: WKVBENCH_GIT_COMMIT names the commit
    named, head = config.git_commit(), _git("rev-parse", "HEAD")
    commit = named or head
    # against a .git of another commit "git status" says nothing about this tree: unknown, not dirty
    dirty = tree_changes() if not named or (head and head.startswith(named)) else None
    return {
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "machine": {"platform": platform.platform(), "cpu": _cpu_model(), "cores": os.cpu_count(),
                    "python": sys.version.split()[0]},
        "gpu": _gpu(),
        "versions": {p: _version(p) for p in PACKAGES},
        "git": {"commit": commit, "branch": _git("rev-parse", "--abbrev-ref", "HEAD"),
                "dirty": bool(dirty) if dirty is not None else None},
        "env": {k: v for k, v in os.environ.items()
                if k.startswith(("WKVBENCH_", "KERAS_", "KERNEL_", "TRITON_", "FLA_", "PYTHONPYCACHEPREFIX"))},
        "argv": sys.argv,
    }


def release_block(package: str) -> dict:
    """``provenance["release"]`` of a release-history run (``verify --release``, docs/history.md): the
    kernel package, the distribution and version installed (None when none is), and the requirement the
    environment was made from (``WKVBENCH_RELEASE_REQUIREMENT``, set by ``nox -s history``; a candidate
    build names its checkout there)."""
    from wkvkernels.releases import installed

    found = installed(package)
    return {"package": package, "distribution": found[0] if found else None,
            "version": found[1] if found else None,
            "requirement": config.release_requirement() or None}


def release_named(prov: dict) -> dict | None:
    """The kernel release a provenance names: its ``release`` block, or for a run made in a release
    environment without one (bench files before bench recorded it), the requirement ``nox -s history``
    set (``env.WKVBENCH_RELEASE_REQUIREMENT``) with the version ``versions`` holds; None outside a release
    environment."""
    from wkvkernels.releases import PACKAGES

    if isinstance(prov.get("release"), dict):
        return prov["release"]
    req = str((prov.get("env") or {}).get("WKVBENCH_RELEASE_REQUIREMENT") or "")
    dist = req.split("==")[0].split("@")[0].strip()
    pkg = next((p for p in PACKAGES.values() if dist in p.distributions), None)
    if not req or pkg is None:
        return None
    version = next(((d, v) for d in pkg.distributions if (v := (prov.get("versions") or {}).get(d))), None)
    return {"package": pkg.name, "distribution": version[0] if version else dist,
            "version": version[1] if version else None, "requirement": req}


def release_path(root: str | os.PathLike, prov: dict) -> str:
    """Where a release-history run's results go: ``<root>/<machine>/<package>/<version>.json`` with
    machine ``cpu`` without a GPU, else the machine identity's slug (docs/history.md)."""
    rel = prov["release"]
    machine = "cpu" if not (prov.get("gpu") or {}).get("name") else Machine.of(prov).slug()
    version = file_slug(str(rel.get("version") or "not-installed"))
    return os.path.join(str(root), machine, rel["package"], f"{version}.json")


IDENTITY_FIELDS = ("gpu", "driver", "cuda", "torch", "triton")


@dataclass(frozen=True)
class Machine:
    """What results must share to be compared (the one machine identity of the suite): the GPU, its
    driver and CUDA, torch and triton. A bench file records it as ``provenance["identity"]`` (``key``);
    the gate compares it field by field; the asv machine name and a GPU run's results folder are its
    ``slug``. Without a GPU, ``gpu`` is ``"cpu: <processor>"``; an unknown field is ``"-"``."""

    gpu: str
    driver: str = "-"
    cuda: str = "-"
    torch: str = "-"
    triton: str = "-"

    @classmethod
    def of(cls, prov: dict) -> Machine:
        """From a provenance block; an identity string it records (a bench file's) wins."""
        ident = prov.get("identity")
        if isinstance(ident, str) and ident.count("|") == 4:
            return cls.parse(ident)
        gpu, versions = prov.get("gpu") or {}, prov.get("versions") or {}
        name = gpu.get("name") or f"cpu: {(prov.get('machine') or {}).get('cpu', '?')}"
        vals = (gpu.get("driver"), gpu.get("cuda"), versions.get("torch"), versions.get("triton"))
        return cls(str(name), *("-" if v is None else str(v) for v in vals))

    @classmethod
    def parse(cls, key: str) -> Machine:
        """The inverse of ``key``."""
        parts = [p.strip() for p in key.split("|")]
        for i, prefix in ((1, "driver "), (2, "cuda "), (3, "torch "), (4, "triton ")):
            parts[i] = parts[i].removeprefix(prefix)
        return cls(*parts)

    def key(self) -> str:
        """``GPU|driver D|cuda C|torch T|triton R``: the string bench and stability files record."""
        return f"{self.gpu}|driver {self.driver}|cuda {self.cuda}|torch {self.torch}|triton {self.triton}"

    def fields(self) -> dict[str, str]:
        return {f: getattr(self, f) for f in IDENTITY_FIELDS}

    def slug(self) -> str:
        """The identity in file-name characters (asv's machine name, a GPU run's results folder)."""
        gpu = "cpu" if self.gpu.startswith("cpu: ") else self.gpu
        return file_slug(f"{gpu}-drv{self.driver}-cuda{self.cuda}-torch{self.torch}-triton{self.triton}")


def file_slug(text: str) -> str:
    """``text`` in file-name characters: each run of other characters becomes one ``-``."""
    import re

    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")
