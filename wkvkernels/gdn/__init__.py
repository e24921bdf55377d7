"""gdn variants."""

from . import (  # noqa: F401  (each module registers its variants at import)
    fla_naive,
    fla_triton,
    flashinfer_chunk,
    flashinfer_decode,
    flashinfer_decode_bf16state,
    flashinfer_decode_vlast,
    flashinfer_mtp,
    ggml_cpu,
    ggml_cuda,
    ggml_metal,
    mlx_fast,
    mlx_lm_metal,
    mlx_lm_ops,
    rwkv_ops_cuda,
    rwkv_ops_native,
    rwkv_ops_triton,
    sglang_cutedsl,
    sglang_triton,
    torch_recurrent,
    vllm_triton,
)
