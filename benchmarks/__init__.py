"""toolnexus performance suite (issue 3): ``python -m benchmarks [--quick]`` from the repo root."""
