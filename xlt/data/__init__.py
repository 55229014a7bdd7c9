"""Data: the uniform record (schema), the six training sources, the training set's assembly and build
report, and the evaluation benchmarks' definitions. It knows neither the run directory nor the contract."""
