"""The judge: one variant's outputs on one case against the float64 oracle.

The named case sets (``case_sets``), the error metrics in units of the rounding floor (``metrics``), the
one tolerance table and its known failures (``tolerances``), the validation of canonical inputs
(``validate``) and the check that puts them together (``check``). Imports nothing else of ``wkvbench``.
"""
