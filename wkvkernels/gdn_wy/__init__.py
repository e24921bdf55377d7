"""gdn_wy variants."""

from . import (
    fla_triton,  # noqa: F401
    torch_recurrent,  # noqa: F401
)
