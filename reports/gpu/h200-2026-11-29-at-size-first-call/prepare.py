# prepare() of prefill rows from pageable canonical inputs (as the bench does) and from page-locked copies of them
import statistics, sys, time
sys.path.insert(0, ".")
import numpy as np, torch
import wkvkernels  # noqa: F401
from wkvkernels.base import get
from wkvkernels.cases import Case
from wkvbench.perf.shapes import bench_inputs

def med(f, n=5):
    r = []
    for _ in range(n):
        torch.cuda.synchronize(); t = time.perf_counter(); out = f(); torch.cuda.synchronize(); r.append(time.perf_counter() - t); del out
    return f"{statistics.median(r):.4f} s {[round(v, 3) for v in r]}"

for name, op in (("gdn.fla.chunk", "gdn"), ("wkv7.fla.fused_recurrent", "wkv7"), ("kda.fla.fused_recurrent", "kda")):
    v = get(name)
    case = Case.parse(f"{op}/model/B8-T4096-H32-N64/bf16/s0")
    t = time.perf_counter(); x = bench_inputs(case); gen = time.perf_counter() - t
    def pin(a):
        if not isinstance(a, np.ndarray) or a.dtype != np.float32:
            return a
        h = torch.empty(a.shape, dtype=torch.float32, pin_memory=True); h.numpy()[...] = a; return h.numpy()
    t = time.perf_counter(); xp = {k: pin(a) for k, a in x.items()}; pin_s = time.perf_counter() - t
    mb = sum(a.nbytes for a in x.values() if isinstance(a, np.ndarray)) / 1e6
    print(name, f"inputs {mb:.0f} MB, bench_inputs {gen:.2f} s, page-locked copies {pin_s:.2f} s ")
    print("  prepare, pageable inputs   ", med(lambda: v.prepare(dict(x), case)))
    print("  prepare, page-locked inputs", med(lambda: v.prepare(dict(xp), case)))
