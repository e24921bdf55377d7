import sys

from .run.cudawait import apply_env

apply_env()  # WKVBENCH_CUDA_WAIT, before anything creates a CUDA context

from .cli import main  # noqa: E402

sys.exit(main())
