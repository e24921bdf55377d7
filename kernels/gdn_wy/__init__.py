"""gdn_wy variants."""

from . import torch_recurrent  # noqa: F401
from . import fla_triton  # noqa: F401
