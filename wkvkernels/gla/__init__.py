"""gla variants."""

from . import (  # noqa: F401
    fla_naive,
    fla_triton,
    ggml_cpu,  # noqa: F401
    ggml_cuda,  # noqa: F401
    torch_recurrent,  # noqa: F401
)
