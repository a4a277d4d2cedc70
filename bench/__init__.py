"""segmentlog benchmarks: `make bench` (bench/run.py) runs them all and writes bench/results/."""
