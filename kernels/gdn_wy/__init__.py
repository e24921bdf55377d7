"""gdn_wy variants."""

from . import torch_recurrent  # noqa: F401
