"""Checks beyond one case against the oracle: properties (state passing, batch and packing
invariance, determinism), drift over long sequences, shrinking a failure to replay, the mutant
panel, fault injection for the gate's demos, and the compute-sanitizer helpers.
"""
