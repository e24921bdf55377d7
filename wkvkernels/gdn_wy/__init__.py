"""gdn_wy variants."""

from . import (  # noqa: F401  (each module registers its variants at import)
    fla_triton,
    torch_recurrent,
    vllm_triton,
    wkvbench_metal,
)
