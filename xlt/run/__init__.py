"""The run directory as a package: its layout (:mod:`xlt.run.layout`), the lock that makes one run its only
writer (:mod:`xlt.run.lock`), the atomic writers (:mod:`xlt.run.files`), the checked readers
(:mod:`xlt.run.state`) and the fingerprints that tie each output to what produced it
(:mod:`xlt.run.fingerprint`)."""
