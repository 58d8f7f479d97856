"""toolnexus performance suite: ``python -m benchmarks [--quick]`` from the repository root."""
