"""wkv4 variants."""

from . import torch_recurrent  # noqa: F401
