"""wkv4 variants."""

from . import (  # noqa: F401  (each module registers its variants at import)
    fla_triton,
    rwkv_cuda,
    rwkvfla_triton,
    torch_recurrent,
    wkvbench_cuda,
)
