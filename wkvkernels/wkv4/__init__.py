"""wkv4 variants."""

from . import (
    fla_triton,  # noqa: F401
    rwkv_cuda,  # noqa: F401
    torch_recurrent,  # noqa: F401
    wkvbench_cuda,  # noqa: F401
)
