"""lm-evaluation-harness's output folder both ways: xlt's LLM results written as the harness writes them
(:mod:`xlt.reporting.harness.export`), and a harness output folder read as a system beside xlt runs
(:mod:`xlt.reporting.harness.read`, :mod:`xlt.reporting.harness.imported`); the format itself, computed as the
harness computes it, is :mod:`xlt.reporting.harness.format`."""
