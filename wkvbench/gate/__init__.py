"""The CI regression gate: baseline against candidate results (``core``), its inputs and the machine
identity (``inputs``), the same-vs-same noise (``noise``), interleaved A/B runs (``ab``), its outputs
(``render``) and the Mann-Whitney test (``stats``). Pure logic: no torch import.
"""
