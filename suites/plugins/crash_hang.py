"""Test plug-in: hangs (sleeps for an hour) on the T = 1 case, exact elsewhere."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import exact_unless_single_token  # noqa: E402

from wkvbench.run.plugins import register_function  # noqa: E402

register_function("gla.crash.hang", "gla",
                  lambda inputs, dtype: exact_unless_single_token(inputs, lambda: time.sleep(3600),
                                                                  "HANG-PLUGIN"))
