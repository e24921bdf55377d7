"""FlashInfer's GDN decode with a bf16 state: ``flashinfer.gdn_decode.gated_delta_rule_decode_pretranspose``
given a bfloat16 state at K = V = 128 (flashinfer-python 0.7.2.post1), which dispatches to the BF16-state
CuTe DSL kernels ``gdn_kernels/gdn_decode_bf16_state.py`` (``gated_delta_rule`` for T = 1,
``gated_delta_rule_mtp`` for T > 1).

Everything else as ``gdn.flashinfer.decode`` (raw gates, ``use_qk_l2norm``, K-last ``[B, HV, V, K]``,
``y`` written in bf16 and cast to q's dtype). The state is held in bf16 between calls (the kernel keeps
fp32 inside a call; the state it reads and writes back is bf16), so it is declared ``state_precision =
"bf16"``. No pool here: flashinfer's bf16 path redirects an index -1 to ``initial_state[0]`` ("a sacrificial
null buffer ... reads from and writes back to slot 0", gated_delta_rule_decode_pretranspose's docstring),
and the judge compares untouched slots bit for bit with the fp32 pool given, which a bf16 pool cannot
hold; tools/gpu_smoke_flashinfer.py checks the slot-0 write directly.
"""

from __future__ import annotations

from typing import Any

from wkvkernels.base import Availability, register
from wkvkernels.gdn.flashinfer_decode import GdnFlashinferDecode


class GdnFlashinferDecodeBf16State(GdnFlashinferDecode):
    """``gated_delta_rule_decode_pretranspose`` with a bf16 state, K = V = 128, any T."""

    name = "gdn.flashinfer.decode_bf16state"
    conventions = frozenset({"gva", "raw", "qkn"})
    state_dtype = "bf16"
    state_precision = "bf16"
    bench_max_T = (128, "for T > 1 this runs gated_delta_rule_mtp's bf16-state kernel, the multi-token decode "
                        "of speculative decoding, compiled for each T with q and k of every token staged in shared "
                        "memory (8 T (K + 8) bytes, gdn_decode_bf16_state.py smem_bytes): at T = 4096 it compiled "
                        "for 699 s on the H100 and then could not launch (CUDA_LAUNCH_INVALID_CONFIG, 4.5 MB of "
                        "227 KiB)")
    state_precision_reason = ("bf16 state by design: flashinfer-python 0.7.2.post1 gdn_decode.py, "
                              "gated_delta_rule_decode_pretranspose: \"Bfloat16: BF16 state backend (T=1 or MTP "
                              "for T>1) when K=V=128\" (gdn_kernels/gdn_decode_bf16_state.py)")

    def supports(self, case: Any) -> Availability:
        if not (base := super(GdnFlashinferDecode, self).supports(case)):  # dtype, conventions first
            return base
        if case.shape.N != 128:
            return Availability.no(f"head size {case.shape.N}: the bf16-state path is K = V = 128 only "
                                   "(other sizes fall to the fp32-state kernel, which asserts a float32 state)")
        return base


register(GdnFlashinferDecodeBf16State)
