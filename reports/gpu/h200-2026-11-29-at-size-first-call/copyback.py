# the at-size copy back as wkvkernels._torch.to_numpy makes it: float64 (before), float32 inside exact_float32
import statistics, sys, time, os, tempfile
sys.path.insert(0, ".")
import numpy as np, torch
from wkvkernels._torch import exact_float32, to_numpy
from wkvbench.perf.at_size import save_arrays, compact
def t(f, n=5):
    r=[]
    for _ in range(n):
        torch.cuda.synchronize(); a=time.perf_counter(); f(); r.append(time.perf_counter()-a)
    return f"{statistics.median(r):.4f} s  {[round(v,3) for v in r]}"
shapes = {"prefill y [8,4096,32,64]": (8,4096,32,64), "decode state [256,32,64,64]": (256,32,64,64)}
d = tempfile.mkdtemp()
for name, sh in shapes.items():
    for dt in (torch.bfloat16, torch.float32):
        g = torch.randn(sh, device="cuda").to(dt)
        print(name, dt)
        print("  float64 copy (before)          ", t(lambda: to_numpy(g)))
        def f32():
            with exact_float32(): return to_numpy(g)
        print("  exact_float32, pinned (now)    ", t(f32))
        x64 = to_numpy(g); x32 = f32()
        assert x32.dtype == np.float32 and np.array_equal(x32.astype(np.float64), x64)
        print("  compact+save of float64 (before)", t(lambda: save_arrays(os.path.join(d, "a"), compact({"y": x64}))))
        print("  compact+save of float32 (now)  ", t(lambda: save_arrays(os.path.join(d, "a"), compact({"y": x32}))))
