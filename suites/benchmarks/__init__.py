"""asv benchmarks (see asv.conf.json). Filled by the benchmarks issue."""
