"""flashinfer-bench interop (docs/flashinfer-bench.md): its GDN definitions and workloads as a case
source, its solutions (and a definition's own reference ``run()``) as variants, and its correctness rule
as a comparison column beside our verdict.

flashinfer-bench (PyPI ``flashinfer-bench``, read at 0.1.2; GitHub flashinfer-ai/flashinfer-bench) names a
kernel by a *Definition* JSON (``axes``, typed ``inputs``/``outputs``, a Python ``reference`` defining
``run()``), its problems by *workloads* (JSONL: axis values and, per input, ``random``, ``scalar`` or
``safetensors``) and an implementation by a *Solution* JSON (``sources`` and ``spec.entry_point``
``file.py::function``, ``spec.destination_passing_style``). Its judge (``bench/evaluators/default.py``
``check_correctness`` with ``bench/utils.py`` ``compute_error_stats``): the solution against the
reference's outputs on the same inputs, 3 trials of fresh inputs; shape and dtype must match, no inf/nan,
and an element fails only where ``|err| > atol`` AND ``|err| / (|ref| + 1e-8) > rtol`` (``BenchmarkConfig``
atol = rtol = 1e-2, ``required_matched_ratio`` 1.0: every element must pass).

What maps to what (a GDN definition, ``op_type`` "gdn"):

* the const axes give the heads: ``num_k_heads`` = H (``num_q_heads`` must equal it), ``num_v_heads`` =
  HV, ``head_size`` = N; q/k/v/a/b in the case dtype (bf16), A_log/dt_bias/state as the definition types
  them; raw gates (``-raw``), no in-kernel L2 norm (the references have none);
* decode (inputs without ``cu_seqlens`` or pool indices): ``batch_size`` rows, T = 1;
  prefill (``cu_seqlens``): ``num_seqs`` sequences packed into ``total_seq_len`` tokens (``-varlen``);
  MTP (``initial_state_indices``): ``batch_size`` rows of ``seq_len`` tokens from a pool of
  ``pool_size`` slots (``-P``). An optional ``state`` the workload gives makes ``-h0``;
* a workload is the case domain ``fib-<definition>-<uuid prefix>`` (``wkvkernels.cases.SOURCE_DOMAIN``),
  registered as a case source (``wkvoracle.inputs.CASE_SOURCES``): the inputs are the model domain's draws
  of the shape and seed, never the workload's ``random`` (torch.randn) ones, except the tensors the workload
  gives in ``safetensors`` files (recorded cu_seqlens, pool indices, ...), which replace ours;
  :class:`FibCase` records this (``mapping``);
* the state is K-last ``[N, HV, V, K]`` (our orientation) or, in a ``v_last`` definition, transposed.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib.util
import json
import math
import re
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from wkvkernels.base import Availability, KernelVariant, Unsupported, dtype_name, register, unregister
from wkvkernels.cases import Case, Shape
from wkvkernels.ops import round_to

ATOL = RTOL = 1e-2  # flashinfer_bench/bench/config.py BenchmarkConfig defaults (0.1.2)
TRIALS = 3  # BenchmarkConfig.num_trials
_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
# their input names that are ours under another name
_OUR_NAME = {"initial_state": "state", "initial_state_indices": "state_indices"}
_ACTIVATIONS = ("q", "k", "v", "a", "b")  # per token: packed [T, ...] in a prefill definition


@dataclass(frozen=True)
class Definition:
    """One flashinfer-bench GDN definition, read from its JSON."""

    name: str
    kind: str  # "decode", "prefill" or "mtp"
    H: int
    HV: int
    N: int
    k_last: bool
    inputs: dict = field(repr=False, hash=False, compare=False)
    outputs: dict = field(repr=False, hash=False, compare=False)
    reference: str = field(repr=False, hash=False, compare=False)
    path: str = ""

    @classmethod
    def load(cls, path: str | Path) -> Definition:
        d = json.loads(Path(path).read_text())
        if d.get("op_type") != "gdn":
            raise ValueError(f"{path}: op_type {d.get('op_type')!r}, only 'gdn' definitions map to our cases")
        axes = {k: a.get("value") for k, a in d["axes"].items() if a.get("type") == "const"}
        H, Hq, HV, N = (axes.get(k) for k in ("num_k_heads", "num_q_heads", "num_v_heads", "head_size"))
        if None in (H, Hq, HV, N) or Hq != H:
            raise ValueError(f"{path}: needs const num_q_heads == num_k_heads, num_v_heads, head_size; "
                             f"got {axes}")
        names = set(d["inputs"])
        kind = "prefill" if "cu_seqlens" in names else "mtp" if "initial_state_indices" in names else "decode"
        tags = " ".join(d.get("tags", [])) + " " + d["name"]
        k_last = not ("v_last" in tags or "layout:v-last" in tags)
        return cls(d["name"], kind, int(H), int(HV), int(N), k_last, d["inputs"], d["outputs"],
                   d["reference"], str(path))

    def dtype(self, name: str) -> str | None:
        return _TORCH_DTYPES.get(self.inputs[name]["dtype"]) if name in self.inputs else None

    def matches(self, s: Shape) -> str | None:
        """Why a case of shape ``s`` is not this definition's, or None."""
        if (s.H, s.value_heads, s.N) != (self.H, self.HV, self.N) or s.qkn or not s.raw:
            return (f"heads/size/gates H{s.H} HV{s.value_heads} N{s.N} raw={s.raw} qkn={s.qkn}; "
                    f"{self.name} takes H{self.H} HV{self.HV} N{self.N}, raw gates, no qkn")
        kind = "prefill" if s.varlen else "mtp" if s.P else "decode"
        if kind != self.kind or (kind == "decode" and s.T != 1) or (kind == "mtp" and (s.T < 2 or s.pad)):
            return f"{self.name} is a {self.kind} definition, the case a {kind} of T{s.T}"
        return None

    def shape(self, axes: dict, given: Iterable[str]) -> Shape:
        """The case shape of a workload's axis values (``given``: the inputs the workload names)."""
        h0 = "state" in set(given)
        base = dict(H=self.H, HV=self.HV, N=self.N, raw=True)
        if self.kind == "decode":
            return Shape(axes["batch_size"], 1, h0=h0, **base)
        if self.kind == "prefill":
            return Shape(axes["num_seqs"], axes["total_seq_len"], h0=h0, varlen=True, **base)
        return Shape(axes["batch_size"], axes["seq_len"], P=axes["pool_size"], **base)

    def reference_fn(self) -> Callable:
        """The definition's ``run`` (its reference source executed in a module of its own)."""
        ns: dict = {"__name__": f"fib_reference_{self.name}"}
        exec(compile(self.reference, f"<{self.name} reference>", "exec"), ns)  # noqa: S102 (their reference)
        return ns["run"]

    # --- our canonical inputs and outputs <-> the definition's named ones ---------------------------------

    def arguments(self, inputs: dict) -> list:
        """The definition's inputs, in its order, as torch values, from our canonical inputs (in
        production conventions; :func:`wkvoracle.inputs.generate`)."""
        import torch

        args: list = []
        for name, spec in self.inputs.items():
            pool = name == "initial_state" and self.kind == "mtp"
            ours = "state_pool" if pool else _OUR_NAME.get(name, name)
            x = inputs.get(ours)
            if x is None:
                if spec.get("optional") or name == "intermediate_states_buffer":
                    args.append(None)
                    continue
                raise Unsupported(f"{self.name} needs input {name!r} (ours: {ours!r}), which the case lacks")
            if spec.get("shape") is None:
                args.append(float(x))
                continue
            t = torch.from_numpy(np.ascontiguousarray(x))
            if self.kind == "prefill" and name in _ACTIVATIONS:
                t = t[0]  # our packed row [1, T, ...] is their [T, ...]
            if name in ("state", "initial_state") and not self.k_last:
                t = t.transpose(-1, -2)
            args.append(t.to(getattr(torch, spec["dtype"])).contiguous())
        return args

    def allocate(self, args: list) -> list:
        """Empty outputs for a destination-passing solution: the var axes read from the inputs' shapes."""
        import torch

        var: dict[str, int] = {}
        for (name, spec), a in zip(self.inputs.items(), args):
            if spec.get("shape") and a is not None:
                var.update({ax: n for ax, n in zip(spec["shape"], a.shape)})
        consts = {"num_q_heads": self.H, "num_k_heads": self.H, "num_v_heads": self.HV, "head_size": self.N}
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), "cpu")
        return [torch.empty([var.get(ax, consts.get(ax)) for ax in spec["shape"]],
                            dtype=getattr(torch, spec["dtype"]), device=device) for spec in self.outputs.values()]

    def canonical(self, outs: list) -> dict:
        """Their outputs (``output``, then the state or the pool) as our canonical arrays."""
        y, state = outs[0], outs[1]
        if self.kind == "prefill":
            y = y[None]
        if not self.k_last:
            state = state.transpose(-1, -2)
        return {"y": y, ("state_pool" if self.kind == "mtp" else "state"): state}

    def from_canonical(self, out: dict) -> list:
        """Our canonical outputs (float64 or torch) in the definition's form and dtypes: what an in-tree
        variant's outputs look like to flashinfer-bench's rule."""
        import torch

        y = torch.as_tensor(np.asarray(out["y"], np.float64))
        state = torch.as_tensor(np.asarray(out["state_pool" if self.kind == "mtp" else "state"], np.float64))
        if self.kind == "prefill":
            y = y[0]
        if not self.k_last:
            state = state.transpose(-1, -2)
        specs = list(self.outputs.values())
        return [t.to(getattr(torch, s["dtype"])) for t, s in zip((y, state), specs)]


def load_definitions(paths: Iterable[str | Path]) -> list[Definition]:
    """Definitions from JSON files or folders of them (every ``*.json`` whose ``op_type`` is gdn)."""
    out = []
    for p in map(Path, paths):
        files = sorted(p.rglob("*.json")) if p.is_dir() else [p]
        for f in files:
            if p.is_dir() and json.loads(f.read_text()).get("op_type") != "gdn":
                continue
            out.append(Definition.load(f))
    return out


def fib_domain(definition: str, uuid: str) -> str:
    """The case domain of one workload: ``fib-<definition>-<first 8 letters/digits of its uuid>``
    (``wkvkernels.cases.SOURCE_DOMAIN``): readable, and stable as long as the workload is."""
    return "fib-" + re.sub(r"[^A-Za-z0-9_.]", "_", definition) + "-" + re.sub(r"[^A-Za-z0-9]", "", uuid)[:8]


@dataclass(frozen=True)
class FibCase:
    """One workload of a definition as our case (domain ``fib-<definition>-<uuid prefix>``); ``label``
    names both, ``mapping`` what was not kept; ``tensors``: the inputs the workload gives (safetensors), in
    our names and form, which replace our draws (:meth:`inputs`)."""

    definition: str
    workload: str  # its uuid
    case: Case
    mapping: str = ""
    tensors: dict = field(default_factory=dict, repr=False, hash=False, compare=False)

    @property
    def label(self) -> str:
        return f"fib/{self.definition}/{self.workload[:8]}"

    def inputs(self, case: Case) -> dict:
        """The inputs of ``case`` (this workload at any seed and dtype): the model domain's draws of its
        shape and seed (``wkvoracle.inputs.generate``), with the workload's own tensors in their place."""
        from dataclasses import replace

        from wkvoracle.inputs import generate

        out = generate(replace(case, domain="model"))
        for name, x in self.tensors.items():
            if tuple(out[name].shape) != tuple(x.shape):
                raise ValueError(f"{self.label}: {name} from its safetensors has shape {list(x.shape)}, the case "
                                 f"{case.id} needs {list(out[name].shape)}")
            out[name] = x.astype(out[name].dtype)
        return out


def dataset_root(workloads_file: Path) -> Path:
    """A TraceSet's root, where a workload's safetensors paths start (flashinfer-bench's ``trace_set_root``):
    the folder above the nearest ``workloads`` folder of the JSONL file (``<root>/workloads/gdn/x.jsonl``),
    else the JSONL's own folder."""
    f = workloads_file.resolve()
    for parent in f.parents:
        if parent.name == "workloads":
            return parent.parent
    return f.parent


def read_safetensors(path: Path, key: str) -> np.ndarray:
    """One tensor of a safetensors file as NumPy (bf16 as float32, exactly). The ``safetensors`` library's
    NumPy API reads every dtype NumPy has; a bf16 tensor (NumPy has none) is read through its torch API."""
    try:
        from safetensors import safe_open
    except ImportError as exc:
        raise ImportError("reading a workload's safetensors inputs needs the safetensors package "
                          "(pip install safetensors)") from exc
    if not path.is_file():
        raise FileNotFoundError(f"safetensors file {path} not found")
    with safe_open(str(path), framework="numpy") as f:
        if key not in f.keys():
            raise KeyError(f"no tensor {key!r} in {path} (it has: {', '.join(sorted(f.keys())) or 'none'})")
        try:
            x = f.get_tensor(key)
        except (TypeError, ValueError):  # a dtype NumPy lacks (bf16)
            pass
        else:  # once ml_dtypes is imported, safetensors returns its bfloat16 (kind "V"): as float32, exactly
            return x if x.dtype.kind in "fiub" else x.astype(np.float32)
    with safe_open(str(path), framework="pt") as f:
        t = f.get_tensor(key)
    return t.float().numpy() if t.is_floating_point() else t.numpy()


def _their_tensors(d: Definition, w: dict, root: Path, where: str) -> dict[str, np.ndarray]:
    """The workload's ``safetensors`` inputs (``{"type": "safetensors", "path", "tensor_key"}``, the path
    relative to the dataset root unless absolute), checked against the definition's dtype, by their names."""
    out = {}
    for name, spec in w.get("inputs", {}).items():
        if spec.get("type") != "safetensors":
            continue
        if name not in d.inputs:
            raise ValueError(f"{where}: input {name!r} is not one of {d.name}'s")
        path = Path(spec["path"])
        path = path if path.is_absolute() else root / path
        try:
            x = read_safetensors(path, spec["tensor_key"])
        except (FileNotFoundError, KeyError) as exc:
            raise ValueError(f"{where}: input {name}: {exc.args[0]} (dataset root {root}: --dataset-root / "
                             "--fib-dataset-root names another)") from None
        want = d.inputs[name]["dtype"]
        kind = {"int64": "i", "int32": "i"}.get(want, "f")
        if x.dtype.kind not in (kind, "u" if kind == "i" else kind):
            raise ValueError(f"{where}: input {name} is {x.dtype} in {path}, the definition says {want}")
        out[name] = x
    return out


def _ours(d: Definition, name: str, x: np.ndarray) -> tuple[str, np.ndarray]:
    """Their input ``name`` as our canonical one (name and form; shapes are checked against our draws)."""
    if d.kind == "mtp" and name == "initial_state":
        ours = "state_pool"
    else:
        ours = _OUR_NAME.get(name, name)
    if name in ("state", "initial_state") and not d.k_last:
        x = np.swapaxes(x, -1, -2)
    if d.kind == "prefill" and name in _ACTIVATIONS:
        x = x[None]  # their [T, ...] is our packed row [1, T, ...]
    return ours, np.ascontiguousarray(x)


def _check_structure(d: Definition, case: Case, given: dict, where: str) -> None:
    s = case.shape
    if "cu_seqlens" in given:
        cu = given["cu_seqlens"]
        if cu.ndim != 1 or len(cu) != s.B + 1 or cu[0] != 0 or cu[-1] != s.T or (np.diff(cu) < 1).any():
            raise ValueError(f"{where}: cu_seqlens {cu.tolist()} must rise from 0 to total_seq_len {s.T} in "
                             f"{s.B} steps of at least 1 token")
    if "state_indices" in given:
        idx = given["state_indices"]
        real = idx[idx >= 0]
        if idx.shape != (s.B,) or (idx < -1).any() or (real >= s.P).any() or len(set(real.tolist())) < len(real):
            raise ValueError(f"{where}: initial_state_indices {idx.tolist()} must be {s.B} distinct slots of the "
                             f"pool of {s.P} (or -1, padding)")


def _workload_lines(path: Path) -> list[tuple[str | None, dict]]:
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        d = json.loads(line)
        if "workload" in d:  # a trace line: {"definition", "workload", "solution", "evaluation"}
            out.append((d.get("definition"), d["workload"]))
        elif "axes" in d:  # a bare workload
            out.append((None, d))
        else:
            raise ValueError(f"{path}:{n}: neither a workload nor a trace line")
    return out


def fib_cases(definitions: list[Definition], workloads: Iterable[str | Path], seed: int = 0,
              dtype: str = "bf16", root: str | Path | None = None) -> list[FibCase]:
    """Our cases of the workloads (JSONL files or folders of ``*.jsonl``). A line names its definition
    (a trace line), or the file is named after it (``<definition>.jsonl``); workloads of definitions not
    loaded are left out. A ``safetensors`` input is read from ``root`` (default: :func:`dataset_root` of
    each JSONL file) and replaces our draw of it."""
    from dataclasses import replace

    by_name = {d.name: d for d in definitions}
    out: list[FibCase] = []
    for p in map(Path, workloads):
        for f in (sorted(p.rglob("*.jsonl")) if p.is_dir() else [p]):
            base = Path(root) if root is not None else dataset_root(f)
            for name, w in _workload_lines(f):
                d = by_name.get(name or f.stem)
                if d is None:
                    continue
                where = f"{f}: workload {w['uuid']}"
                kinds = {k: v.get("type") for k, v in w.get("inputs", {}).items()}
                given_names = {_OUR_NAME.get(k, k) for k, t in kinds.items() if t in ("random", "safetensors")}
                shape = d.shape(w["axes"], given_names)
                given = dict(_ours(d, k, x) for k, x in _their_tensors(d, w, base, where).items())
                if "state_indices" in given and shape.P:  # padding rows (-1) as the workload has them
                    shape = replace(shape, pad=int((given["state_indices"] < 0).sum()))
                case = Case("gdn", fib_domain(d.name, w["uuid"]), shape, dtype, seed)
                _check_structure(d, case, given, where)
                notes = ["inputs drawn from the case id (model domain), not torch.randn"]
                if given:
                    notes.append(f"{', '.join(sorted(k for k, t in kinds.items() if t == 'safetensors'))} "
                                 f"from the workload's safetensors")
                scale = w.get("inputs", {}).get("scale", {})
                if scale.get("type") == "scalar" and not math.isclose(scale["value"], case.shape.N ** -0.5):
                    notes.append(f"scale {scale['value']} replaced by ours, N**-0.5")
                fc = FibCase(d.name, w["uuid"], case, "; ".join(notes), given)
                fc.inputs(case)  # the workload's tensors fit the case (else a clear error now)
                if any(o.case.domain == case.domain for o in out):
                    raise ValueError(f"{where}: two workloads of {d.name} share the uuid prefix of the case "
                                     f"domain {case.domain}")
                out.append(fc)
    return out


def install_cases(fcases: list[FibCase], options: list[str] | None = None) -> None:
    """Register each workload as the case source of its domain (``wkvoracle.inputs.CASE_SOURCES``), and the
    options that load it again for the reproduce commands of its rows (``judge.commands.CASE_OPTIONS``)."""
    from wkvoracle.inputs import CASE_SOURCES

    from ..judge.commands import CASE_OPTIONS

    for fc in fcases:
        CASE_SOURCES[fc.case.domain] = fc.inputs
        if options is not None:
            CASE_OPTIONS[fc.case.domain] = list(options)


@dataclass(frozen=True)
class FibSource:
    """What ``verify --fib-definition D --fib-workloads W [--fib-solution S] [--fib-dataset-root R]`` loads:
    the paths, absolute (a worker process loads the same), as the results file records them."""

    definitions: tuple[str, ...]
    workloads: tuple[str, ...]
    solutions: tuple[str, ...] = ()
    dataset_root: str | None = None

    @classmethod
    def of(cls, definitions, workloads, solutions=(), dataset_root=None) -> FibSource:
        absolute = lambda ps: tuple(str(Path(p).resolve()) for p in ps)  # noqa: E731
        return cls(absolute(definitions), absolute(workloads), absolute(solutions),
                   str(Path(dataset_root).resolve()) if dataset_root else None)

    @classmethod
    def from_dict(cls, d: dict) -> FibSource:
        return cls(tuple(d["definitions"]), tuple(d["workloads"]), tuple(d.get("solutions", ())),
                   d.get("dataset_root"))

    def as_dict(self) -> dict:
        return {"definitions": list(self.definitions), "workloads": list(self.workloads),
                "solutions": list(self.solutions), "dataset_root": self.dataset_root}

    def options(self) -> list[str]:
        """The command-line options that load this source (paths as seen from the working directory)."""
        import shlex

        from ..judge.commands import shown_path

        out: list[str] = []
        for flag, paths in (("--fib-definition", self.definitions), ("--fib-workloads", self.workloads),
                            ("--fib-solution", self.solutions)):
            for p in paths:
                out += [flag, shlex.quote(shown_path(p))]
        if self.dataset_root:
            out += ["--fib-dataset-root", shlex.quote(shown_path(self.dataset_root))]
        return out

    def install(self, seed: int = 0) -> list[FibCase]:
        """Load the definitions, register ``gdn.fib.reference`` and the solutions' variants, and register
        the workloads as cases; returns them (at ``seed``)."""
        defs = load_definitions(self.definitions)
        if not defs:
            raise ValueError(f"no GDN definition in {', '.join(self.definitions)}")
        fcases = fib_cases(defs, self.workloads, seed=seed, root=self.dataset_root)
        if not fcases:
            raise ValueError(f"no workload of a loaded definition in {', '.join(self.workloads)}")
        register_fib(defs, self.solutions)
        install_cases(fcases, self.options())
        _INSTALLED[self] = fcases
        return fcases


_INSTALLED: dict[FibSource, list[FibCase]] = {}


def installed_cases(src: FibSource, seed: int = 0) -> list[Case]:
    """The cases of ``src``'s workloads at ``seed`` (installed first where it is not yet)."""
    from dataclasses import replace

    fcases = _INSTALLED.get(src) or src.install(seed)
    return [replace(fc.case, seed=seed) for fc in fcases]


# --- variants -----------------------------------------------------------------------------------------------

class FibVariant(KernelVariant):
    """A flashinfer-bench implementation of loaded GDN definitions: a definition's own reference ``run()``
    (value-returning, plain torch) or a solution's entry point. It converts our canonical inputs to the
    definition's named ones (:meth:`Definition.arguments`) and its outputs back."""

    operator: ClassVar[str] = "gdn"
    source: ClassVar[str] = "flashinfer-bench"
    dtypes: ClassVar[frozenset[str]] = frozenset({"bf16"})
    conventions: ClassVar[frozenset[str]] = frozenset({"gva", "pool", "varlen", "raw"})

    def __init__(self, name: str, definitions: list[Definition], fn: Callable[[Definition], Callable], *,
                 dps: bool = False, device: str = "cpu", backend: str = "torch", algorithm: str = "reference",
                 unavailable: str = "") -> None:
        self.name, self.definitions, self._fn = name, list(definitions), fn  # type: ignore[misc]
        self.dps, self.device = dps, device  # type: ignore[misc]
        self.backend, self.algorithm = backend, algorithm  # type: ignore[misc]
        self._unavailable = unavailable
        self._fns: dict[str, Callable] = {}

    def available(self) -> Availability:
        if self._unavailable:
            return Availability.no(self._unavailable)
        try:
            import torch
        except ImportError:
            return Availability.no("torch is not installed")
        if self.device == "cuda" and not torch.cuda.is_available():
            return Availability.no("the solution targets CUDA (spec.target_hardware) and no CUDA device "
                                   "is visible")
        return Availability.yes()

    def definition(self, case: Case) -> Definition | str:
        reasons = []
        for d in self.definitions:
            why = d.matches(case.shape)
            if why is None:
                return d
            reasons.append(why)
        return "; ".join(reasons) or "no definition loaded"

    def supports(self, case: Any) -> Availability:
        base = super().supports(case)
        if not base:
            return base
        d = self.definition(case)
        if isinstance(d, Definition):
            return Availability.yes()
        return Availability.no(f"no loaded definition: {d}")

    def effective_inputs(self, inputs: dict, dtype: str) -> dict:
        """As the kernel sees them: each input rounded to the dtype the definition gives it (dt_bias is
        fp32 in some definitions, bf16 in others' docs)."""
        out = super().effective_inputs(inputs, dtype)
        for d in self.definitions:
            for name in ("A_log", "dt_bias", "state"):
                dt = d.dtype(name) or d.dtype("initial_state" if name == "state" else name)
                if dt and dt != "fp32" and isinstance(out.get(name), np.ndarray):
                    out[name] = round_to(out[name], dt)
            break  # every loaded GDN definition types them alike (the repository's, at least)
        return out

    def prepare(self, inputs: dict, case: Any) -> tuple:
        d = self.definition(case)
        if not isinstance(d, Definition):
            raise Unsupported(d)
        args = d.arguments(inputs)
        if self.device != "cpu":  # a GPU solution: its inputs (and so its allocated outputs) on the device
            args = [a.to(self.device) if hasattr(a, "to") else a for a in args]
        return d, args, (d.allocate(args) if self.dps else None)

    def call(self, native: tuple) -> list:
        """The raw outputs, in the definition's order and form."""
        d, args, outs = native
        if d.name not in self._fns:
            self._fns[d.name] = self._fn(d)
        fn = self._fns[d.name]
        if self.dps:
            fn(*args, *outs)
            return list(outs)
        res = fn(*args)
        return list(res) if isinstance(res, (tuple, list)) else [res]

    def run(self, native: tuple) -> tuple:
        return native[0], self.call(native)

    def returned_dtypes(self, out: tuple, case: Any) -> dict[str, str | None]:
        return {k: dtype_name(v) for k, v in out[0].canonical(out[1]).items()}

    def to_canonical(self, out: tuple) -> dict:
        import torch

        return {k: v.detach().to("cpu", torch.float64).numpy() for k, v in out[0].canonical(out[1]).items()}


def reference_variant(definitions: list[Definition]) -> FibVariant:
    """``gdn.fib.reference``: each definition's own ``run()``."""
    return FibVariant("gdn.fib.reference", definitions, Definition.reference_fn)


_BUILT = (".cu", ".cpp", ".cc", ".cxx", ".c")  # the C/C++/CUDA sources their TorchBuilder compiles


def _build_reason(lang: str, binding: str | None) -> str:
    """Why a C++/CUDA solution cannot be built here, or ""."""
    if binding != "torch":
        return (f"language {lang!r} with binding {binding!r}: only torch-bound C++/CUDA solutions are built "
                f"here (flashinfer-bench's TorchBuilder); python and triton ones are imported")
    try:
        from torch.utils.cpp_extension import CUDA_HOME
    except ImportError:
        return "torch is not installed (its cpp_extension builds the solution)"
    if lang == "cuda" and not CUDA_HOME:
        return "a CUDA solution needs nvcc (CUDA_HOME): torch.utils.cpp_extension found no CUDA toolkit"
    return ""


def _build(sol: dict, slug: str, func: str) -> Callable:
    """A torch-bound C++/CUDA solution compiled as flashinfer-bench 0.1.2's ``TorchBuilder`` does
    (``compile/builders/torch_builder.py``): its sources written to a folder, the C/C++/CUDA ones given to
    ``torch.utils.cpp_extension.load`` with that folder on the include path, the entry symbol read from
    the module. The folder is keyed by the sources' digest under ``~/.cache/wkvbench/fib``, so the
    verification's workers build once (cpp_extension's lock) and a later run reuses the build."""
    import hashlib
    import os

    from torch.utils.cpp_extension import load

    digest = hashlib.sha256(json.dumps(sol["sources"], sort_keys=True).encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wkvbench" / "fib"
    root = cache / f"{slug[:80]}-{digest}"
    if str(root) in _FAILED_BUILDS:  # a later trial: the same build error, not cpp_extension's missing .so
        raise RuntimeError(_FAILED_BUILDS[str(root)])
    paths = _write_sources(sol, root)
    try:
        mod = load(name=f"fib_{slug[:80]}_{digest}", sources=[str(p) for p in paths if p.suffix in _BUILT],
                   extra_include_paths=[str(root)], with_cuda=sol["spec"].get("language") == "cuda",
                   build_directory=str(root), verbose=False)
    except Exception as exc:
        _FAILED_BUILDS[str(root)] = str(exc)
        raise
    if not hasattr(mod, func):
        raise AttributeError(f"solution {sol['name']}: the built module exports no {func!r}")
    return getattr(mod, func)


# builds that failed in this process, by folder: on the H100 (2026-11-28) the first trial of a solution whose
# build failed read the compiler's error, the next two "cannot open shared object file" (cpp_extension imports
# what it takes for an earlier build)
_FAILED_BUILDS: dict[str, str] = {}


def _write_sources(sol: dict, root: Path) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for src in sol["sources"]:
        target = (root / src["path"]).resolve()
        if root.resolve() not in target.parents:
            raise ValueError(f"solution {sol['name']}: source path {src['path']!r} leaves its folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.is_file() or target.read_text() != src["content"]:
            target.write_text(src["content"])
        out.append(target)
    return out


def solution_variant(path: str | Path, definitions: list[Definition]) -> FibVariant:
    """``gdn.fib.<solution name>``: a Solution JSON's entry point, for the one loaded definition it names:
    python/triton sources imported from a temporary folder, torch-bound C++/CUDA ones built
    (:func:`_build`)."""
    sol = json.loads(Path(path).read_text())
    spec = sol["spec"]
    lang = spec.get("language") or (spec.get("languages") or ["?"])[0]
    slug = re.sub(r"[^A-Za-z0-9_]+", "_", sol["name"]).strip("_").lower()
    name = f"gdn.fib.{slug}"
    defs = [d for d in definitions if d.name == sol["definition"]]
    hw = [h.lower() for h in spec.get("target_hardware", [])]
    device = "cpu" if "cpu" in hw else "cuda"
    why = "" if defs else f"its definition {sol['definition']} is not loaded"
    built = lang in ("cuda", "cpp")
    if built:
        why = why or _build_reason(lang, spec.get("binding"))
    elif lang not in ("python", "triton"):
        why = f"language {lang!r}: only python and triton sources load here, and torch-bound C++/CUDA ones build"
    file, _, func = spec["entry_point"].partition("::")

    def entry(_d: Definition) -> Callable:
        if built:
            return _build(sol, slug, func)
        root = Path(tempfile.mkdtemp(prefix=f"fib_{slug}_"))
        _write_sources(sol, root)
        sys.path.insert(0, str(root))
        try:
            mod_name = f"fib_solution_{slug}"
            spec_ = importlib.util.spec_from_file_location(mod_name, root / file)
            module = importlib.util.module_from_spec(spec_)  # type: ignore[arg-type]
            sys.modules[mod_name] = module
            spec_.loader.exec_module(module)  # type: ignore[union-attr]
        finally:
            sys.path.remove(str(root))
        return getattr(module, func)

    return FibVariant(name, defs, entry, dps=bool(spec.get("destination_passing_style", True)), device=device,
                      backend=lang, algorithm=slug, unavailable=why)


def register_fib(definitions: list[Definition], solutions: Iterable[str | Path] = ()) -> list[FibVariant]:
    """Register ``gdn.fib.reference`` and one variant per solution (replacing any of the same name)."""
    made = [reference_variant(definitions)] + [solution_variant(p, definitions) for p in solutions]
    for v in made:
        unregister(v.name)
        register(v)
    return made


# --- flashinfer-bench's verdict, beside ours --------------------------------------------------------------

@dataclass
class FibVerdict:
    passed: bool
    max_abs: float = 0.0
    max_rel: float = 0.0
    reason: str = ""
    how: str = "re-implemented"  # or "flashinfer_bench.bench.utils.compute_error_stats"


@functools.cache
def _their_stats() -> tuple[Callable, Any] | None:
    """flashinfer-bench's own ``compute_error_stats`` and config, where the package imports."""
    try:
        from flashinfer_bench.bench.config import BenchmarkConfig
        from flashinfer_bench.bench.utils import compute_error_stats
    except Exception:  # not installed, or its imports (flashinfer, tvm-ffi) fail here
        return None
    return compute_error_stats, BenchmarkConfig(atol=ATOL, rtol=RTOL)


def error_stats(out, ref, atol: float = ATOL, rtol: float = RTOL) -> tuple[float, float, bool]:
    """``compute_error_stats`` of flashinfer_bench/bench/utils.py (0.1.2), re-implemented: max |err|,
    max |err| / (|ref| + 1e-8), and whether any element exceeds both atol and rtol."""
    import torch

    x, y = out.to(torch.float32), ref.to(torch.float32)
    err = (x - y).abs()
    if err.numel() == 0:
        return 0.0, 0.0, False
    rel = err / (y.abs() + 1e-8)
    return float(err.max()), float(rel.max()), bool(((err > atol) & (rel > rtol)).any())


def fib_verdict(outs: list, refs: list, atol: float = ATOL, rtol: float = RTOL) -> FibVerdict:
    """flashinfer-bench's verdict of one trial (``DefaultEvaluator.check_correctness``): per output in
    order, shape, then dtype, then inf/nan, then the elementwise atol-AND-rtol rule."""
    import torch

    theirs = _their_stats() if (atol, rtol) == (ATOL, RTOL) else None
    how = "flashinfer_bench.bench.utils.compute_error_stats" if theirs else "re-implemented"
    v = FibVerdict(True, how=how)
    # a GPU solution's outputs against the reference's, which ran on the CPU: compared on the CPU (the
    # first H100 run, 2026-11-27, stopped here: "Expected all tensors to be on the same device")
    outs = [o.detach().cpu() if isinstance(o, torch.Tensor) else o for o in outs]
    refs = [r.detach().cpu() if isinstance(r, torch.Tensor) else r for r in refs]
    for name, o, r in zip(("output", "state"), outs, refs):
        if tuple(o.shape) != tuple(r.shape):
            return FibVerdict(False, reason=f"{name}: INCORRECT_SHAPE {list(o.shape)} vs {list(r.shape)}",
                              how=how)
        if o.dtype != r.dtype:
            return FibVerdict(False, reason=f"{name}: INCORRECT_DTYPE {o.dtype} vs {r.dtype}", how=how)
        if not torch.isfinite(o).all():
            return FibVerdict(False, math.inf, math.inf, f"{name}: inf/nan", how)
        if theirs:
            a, rl, bad, _ = theirs[0](o, r, theirs[1])
        else:
            a, rl, bad = error_stats(o, r, atol, rtol)
        v.max_abs, v.max_rel = max(v.max_abs, a), max(v.max_rel, rl)
        if bad:
            v.passed = False
            v.reason = v.reason or f"{name}: elements beyond atol {atol:g} and rtol {rtol:g}"
    return v


@dataclass
class Comparison:
    """One variant on one workload: our verdict per trial (seed) and flashinfer-bench's."""

    fcase: FibCase
    variant: str
    ours: list = field(default_factory=list)  # CheckResult per trial
    theirs: list = field(default_factory=list)  # FibVerdict per trial (empty: not run, see ours)

    @property
    def ours_pass(self) -> bool | None:
        statuses = {r.status for r in self.ours}
        if statuses <= {"SKIP"}:
            return None
        return statuses <= {"PASS"}  # an XFAIL (a known failure) fails our oracle all the same

    @property
    def theirs_pass(self) -> bool | None:
        """Their rule's verdict over the trials; None where it was not applied (skipped, or a trial our
        comparison could not judge: ``how`` "error")."""
        if not self.theirs or any(v.how == "error" for v in self.theirs):
            return None
        return all(v.passed for v in self.theirs)

    @property
    def worst(self) -> str:
        """Our worst tensor: its error as a multiple of its limit, over the trials."""
        best = ("", 0.0)
        for r in self.ours:
            for k, e in r.errors.items():
                lim = r.limits.get(k)
                if lim and e.rel / lim > best[1]:
                    best = (k, e.rel / lim)
        return f"{best[0]} {best[1]:.2g}x limit" if best[0] else ""

    def as_row(self) -> dict:
        """This comparison as a row of a ``wkvbench.fib/1`` file (``wkvbench fib --output``)."""
        from dataclasses import asdict

        ours = [{"seed": r.case.seed, "status": r.status, "reason": _short(r.reason),
                 "errors": {k: {"rel": e.rel, "limit": r.limits.get(k)} for k, e in r.errors.items()}}
                for r in self.ours]
        return {"workload": self.fcase.label, "case": self.fcase.case.id, "variant": self.variant,
                "mapping": self.fcase.mapping, "ours": ours, "ours_pass": self.ours_pass,
                "theirs": [{**asdict(v), "reason": _short(v.reason)} for v in self.theirs],
                "theirs_pass": self.theirs_pass, "worst": self.worst}


_DIAGNOSTIC = re.compile(r"^[^\n]*(?:\berror\b[^\n]*:|: (?:fatal )?error)[^\n]*$", re.M | re.I)


def _short(reason: str, limit: int = 600) -> str:
    """A reason as a results row keeps it: an exception's message can print whole tensors (pybind's
    "incompatible function arguments ... Invoked with: tensor(...)", 940 KB for 15 rows on the H100). A failed
    build keeps its compiler's diagnostics (``file(line): error: ...``) after the first line, not the nvcc
    command lines that fill its head (the H100's prefill solutions, 2026-11-28: 17-29 KB each, the error cut)."""
    if len(reason) <= limit:
        return reason
    first = reason.splitlines()[0][:200]
    diags = [m.group(0).strip()[:200] for m in _DIAGNOSTIC.finditer(reason)
             if not m.group(0).startswith(first[:40])][:6]
    if diags:
        kept = " | ".join([first, *diags])[:limit]
        return kept + f" ... [{len(reason) - len(kept)} characters cut]"
    return reason[:limit] + f" ... [{len(reason) - limit} characters cut]"


def compare(variants: list[KernelVariant], fcases: list[FibCase], reference: FibVariant,
            trials: int = TRIALS, checker: Any = None,
            on_row: Callable[[Comparison], None] | None = None) -> list[Comparison]:
    """Each variant on each workload, ``trials`` seeds (0..trials-1, fresh inputs each, as their 3 trials):
    our check against the float64 oracle, and their rule against the definition's reference ``run()`` on
    the same inputs. A variant that is not a :class:`FibVariant` (an in-tree adapter) is compared in the
    definition's form through :meth:`Definition.from_canonical`. ``on_row``: called with each row as it
    is made (the command prints it and rewrites its output file: a crash loses nothing finished)."""
    from ..judge.check import Checker

    checker = checker or Checker()
    rows = []
    for fc in fcases:
        for v in variants:
            row = Comparison(fc, v.name)
            for seed in range(trials):
                case = Case(fc.case.op, fc.case.domain, fc.case.shape, fc.case.dtype, seed)
                res = checker.check(v, case)
                row.ours.append(res)
                if res.status == "SKIP":
                    continue
                inputs = checker.inputs(case)
                d = reference.definition(case)
                if not isinstance(d, Definition):
                    continue
                refs = reference.call(reference.prepare(dict(inputs), case))
                try:
                    if isinstance(v, FibVariant):
                        outs = v.call(v.prepare(dict(inputs), case))
                    else:
                        outs = d.from_canonical(v.to_canonical(v.run(v.prepare(dict(inputs), case))))
                except Exception as exc:  # their RUNTIME_ERROR
                    row.theirs.append(FibVerdict(False, reason=f"RUNTIME_ERROR {type(exc).__name__}: {exc}"))
                    continue
                try:
                    row.theirs.append(fib_verdict(outs, refs))
                except Exception as exc:  # a fault of ours in comparing: this row unjudged, not the run lost
                    row.theirs.append(FibVerdict(False, reason=f"not judged: {type(exc).__name__}: {exc}",
                                                 how="error"))
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


def select(globs: Iterable[str], pool: Iterable[KernelVariant]) -> list[KernelVariant]:
    globs = list(globs)
    return [v for v in pool if any(fnmatch.fnmatchcase(v.name, g) for g in globs)]
