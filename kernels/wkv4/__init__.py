"""wkv4 variants."""

from . import torch_recurrent  # noqa: F401
from . import wkvbench_cuda  # noqa: F401
from . import rwkv_cuda  # noqa: F401
from . import fla_triton  # noqa: F401
