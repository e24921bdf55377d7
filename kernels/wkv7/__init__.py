"""wkv7 variants."""

from . import torch_recurrent  # noqa: F401
from . import rwkv_ops_native  # noqa: F401
from . import ggml_cpu  # noqa: F401
from . import rwkv_ops_cuda  # noqa: F401
from . import rwkv_cuda  # noqa: F401
from . import ggml_cuda  # noqa: F401
from . import fla_naive, fla_triton  # noqa: F401
