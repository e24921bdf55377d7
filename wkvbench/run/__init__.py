"""Running the verification matrix: the selection, the runner and its isolation.

``verify`` (``Selection``, ``run``, the report), the crash-isolated worker processes (``isolate``,
``_worker``, run as ``python -m wkvbench.run._worker``) and how their work is grouped (``units``),
third-party variants (``plugins``), pinned Triton autotuning during verification (``autotune``), how
a process waits for its GPU (``cudawait``) and the processes and load sampling of a long run
(``procs``).
"""
