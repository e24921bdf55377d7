"""Test plug-in: calls abort() (SIGABRT) on the T = 1 case, exact elsewhere."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import exact_unless_single_token  # noqa: E402

from wkvbench.run.plugins import register_function  # noqa: E402

register_function("gla.crash.abort", "gla",
                  lambda inputs, dtype: exact_unless_single_token(inputs, os.abort, "ABORT-PLUGIN"))
