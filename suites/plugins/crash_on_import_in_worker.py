"""Test plug-in: imports fine in the parent, fails to import inside a verify worker process."""

import os

from wkvbench.run.plugins import register_function
from wkvoracle import recurrent_gla

if "WKVBENCH_RESULT_FD" in os.environ:  # set only in workers
    raise RuntimeError("WORKER-IMPORT-PLUGIN: cannot import here")
register_function("gla.crash.startup", "gla", lambda inputs, dtype: recurrent_gla(**inputs))
