"""EdgeCron benchmarks: cost per million deliveries, fire precision, scan scaling,
catch-up cost, batch concurrency and throughput. Run `python -m bench` (or `make bench`); the figures
and how they are taken are in docs/benchmarks.md."""
