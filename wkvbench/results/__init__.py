"""Results files: the one place that names, versions, writes and reads them.

Every schema and the atomic write and read (``schemas``), the verify file written while a run goes
on and read back to resume it (``verify_file``), a gpu run's ``run.json`` (``runfile``), asv's result
files as gate inputs (``asv_results``) and the provenance every file records (``provenance``).
"""
