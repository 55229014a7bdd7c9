"""The run directory as a package: its layout (:mod:`xlt.run.layout`), the lock that makes one run its only
writer (:mod:`xlt.run.lock`), the atomic writers (:mod:`xlt.run.files`), the checked readers of its files
(:mod:`xlt.run.state`), the checked readers of what each stage leaves for later ones (:mod:`xlt.run.artifacts`;
results and predictions: :mod:`xlt.run.results`) and the fingerprints that tie each output to what produced it
(:mod:`xlt.run.fingerprint`)."""
