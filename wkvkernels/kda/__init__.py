"""kda variants (Kimi Delta Attention)."""

from . import (  # noqa: F401  (each module registers its variants at import)
    fla_naive,
    fla_triton,
    flashinfer_recurrent,
    sglang_triton,
    torch_recurrent,
    vllm_flashkda,
    vllm_triton,
)
