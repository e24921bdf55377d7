"""wkv6 variants."""

from . import (  # noqa: F401  (each module registers its variants at import)
    fla_naive,
    fla_triton,
    ggml_cpu,
    ggml_cuda,
    ggml_metal,
    rwkv_cuda,
    rwkv_ops_cuda,
    rwkv_ops_native,
    rwkvfla_triton,
    torch_recurrent,
)
