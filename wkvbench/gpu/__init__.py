"""``python -m wkvbench gpu``: the whole GPU evidence of one box as one results set.

The run and its phases (``run``), the side tasks beside its verification (``side``), and the joining
of verify rows and property files within one run (``verify_merge``).
"""
