"""wkv6 variants."""

from . import (  # noqa: F401
    fla_naive,
    fla_triton,
    ggml_cpu,  # noqa: F401
    ggml_cuda,  # noqa: F401
    rwkv_cuda,  # noqa: F401
    rwkv_ops_cuda,  # noqa: F401
    rwkv_ops_native,  # noqa: F401
    torch_recurrent,  # noqa: F401
)
