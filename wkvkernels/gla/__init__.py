"""gla variants."""

from . import (  # noqa: F401  (each module registers its variants at import)
    fla_naive,
    fla_triton,
    ggml_cpu,
    ggml_cuda,
    torch_recurrent,
)
