"""Interpreted stand-ins for the ``tl`` builtins that flash-linear-attention < 0.6 binds to module-level
names (``fla/ops/utils/op.py``: ``exp = tl.exp``, ``exp2 = tl.math.exp2``, ``log = tl.log``,
``log2 = tl.log2``, and from 0.2.2 ``gather = tl.gather`` where Triton has it, in 0.6.0 too; 0.1.x:
``fla/ops/utils/exp.py``). The Triton interpreter executes a kernel by
patching the ``tl`` functions it reaches through ``tl.``; a builtin captured under another name at
import time escapes that patch and raises "Did you forget to add @triton.jit ? (`_semantic` argument
must be provided outside of JIT functions.)" on every call. Each stand-in is a ``@triton.jit`` function
calling the builtin through ``tl.``, which the interpreter does patch: the same arithmetic.

Imported only by ``_fla_env.patch_interpreted_aliases``, in a process whose FLA kernels are
interpreted (``TRITON_INTERPRET=1`` set before start), so these are interpreted functions too.
"""

import triton
import triton.language as tl


@triton.jit
def exp(x):
    return tl.exp(x)


@triton.jit
def exp2(x):
    return tl.math.exp2(x)


@triton.jit
def log(x):
    return tl.log(x)


@triton.jit
def log2(x):
    return tl.log2(x)


@triton.jit
def gather(src, index, axis: tl.constexpr):
    return tl.gather(src, index, axis)


STAND_INS = {"exp": exp, "exp2": exp2, "log": log, "log2": log2, "gather": gather}
