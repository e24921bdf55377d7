"""ggml-python helpers shared by the ggml adapters (``wkvkernels/*/ggml_cpu.py``, ``ggml_cuda.py``).

Four modules: ``env`` (is ggml there, with which SIMD and which CUDA build; its backends, made once
per process), ``graphs`` (each op's conventions, once, as an ``OpGraph``), ``runners`` (``GgmlGraph``
and ``GgmlBackendGraph``, the two ways to run one) and ``variants`` (the adapters' base classes and
the per-op mixins).

``ggml-python`` (PyPI, 0.0.45, vendoring ggml 0.15.3) is a ctypes binding of ``ggml.h``; it is
imported lazily, so listing variants never loads the shared library.

**One graph definition, two ways to run it.** Each op's conventions live once, in an ``OpGraph``
built by ``wkv6_graph``, ``wkv7_graph``, ``gla_graph`` or ``gdn_graph`` (the input arrays with
their ggml ``ne``, the size of ``dst``, and the op call), reached through the per-op mixins
``Wkv6Op``, ``Wkv7Op``, ``GlaOp``, ``GdnOp``. It runs either way:

- ``GgmlGraph`` (the CPU adapters): a ggml context whose memory pool is a NumPy buffer we own,
  computed by ``ggml_graph_compute`` on ggml's CPU code with ``N_THREADS`` threads. The plan
  (``ggml_graph_plan``) and its work buffer are made once in ``prepare`` (the convenience call
  ``ggml_graph_compute_with_ctx`` allocates a fresh work buffer inside the context on every call,
  so repeated timed calls would run the pool dry and abort the process); inputs are written and
  ``dst`` read through NumPy views, and ``ggml_free`` (a finalizer) releases only the context struct.
- ``GgmlBackendGraph`` (the CUDA adapters): ggml's backend API. A ``no_alloc`` context holds the
  tensor metadata and the graph, ``ggml_backend_alloc_ctx_tensors`` puts every tensor in one buffer
  of the backend, ``ggml_backend_tensor_set``/``_get`` copy in and out, and
  ``ggml_backend_graph_compute_async`` runs it. The backend is a parameter (``"cuda"`` or
  ``"cpu"``): on the CPU backend the same path runs here and is tested against ``GgmlGraph``
  (``suites/variants/test_ggml_backend.py``: bit-identical).

Both guard ``dst`` as test-backend-ops does: the bytes after it (``GUARD_BYTES``, a sentinel) are
checked on every ``read()``, so an op that writes past its ``dst`` raises instead of corrupting
memory silently. ``dst`` itself starts as NaN.

CPU threads: ggml-python builds with OpenMP (one worker thread appears at the first 2-thread
compute), the WKV/GLA ops split heads across ``min(n_threads, H)`` threads (so H=1 runs on one),
GDN splits (head, sequence) rows; the results are bit-identical to one thread. On a loaded 2-core
machine the second thread does not pay: a T=1 call took ~10 ms with 2 threads against ~10 µs with
1 (libgomp waking its worker), so timings are only meaningful on an otherwise idle machine.

CUDA: ggml launches on its own stream (not torch's current stream); ``run`` returns without
synchronizing, ``read()`` synchronizes the backend, and a timer must synchronize the device
(``cudaDeviceSynchronize``/``torch.cuda.synchronize()``) or call ``native.synchronize()``; CUDA
events recorded on torch's stream do not see ggml's work. A failing ``GGML_ASSERT`` inside a CUDA
op (head size) aborts the whole process, so ``supports`` refuses those cases first.
"""
