"""The top layer: what needs every app (the demo population, the simulator, the benchmarks)."""
