"""Performance: the timing engine (``timing``), the roofline floor (``roofline``), the benchmarks
and their shards (``bench``, ``bench_merge``), the engine's stability check (``stability``) and the
bench samples into asv's history (``asv_record``).
"""
