"""Machine translation of multiple-choice data: translate-train-all and translate-test.

Modules, in the order data flows through them:

* :mod:`~xlt.translation.segment`   passages -> sentences (and back), so MT never sees multi-sentence inputs.
* :mod:`~xlt.translation.engines`   the MT engines (``translate.engine``: hf, ctranslate2) behind one
  translator interface and one settings object, the deterministic ``echo`` translator for tests.
* :mod:`~xlt.translation.resolution` the run's translator (engine, dtype, compute type) resolved once for
  all its shards, requeues and readers.
* :mod:`~xlt.translation.cache`     cache of translated segments, committed in batches: immutable files,
  safe with writers on many hosts over a network filesystem (:mod:`~xlt.translation.cache_files`).
* :mod:`~xlt.translation.dataset`   translate one dataset into one language: unique segments, cache,
  batches, re-assembly, quality rules.
* :mod:`~xlt.translation.quality`   empty / unchanged / runaway / duplicate-option checks and their rules.
* :mod:`~xlt.translation.importer`  pre-translated data (``translate.import_dir``).
* :mod:`~xlt.translation.union`     the translate-train-all training set (English + translations, sampling).
* :mod:`~xlt.translation.translate_test` benchmark items into English.

Where translations live in a run directory (merged languages, the stage's parts, the segment cache) is the
run directory's layout (:class:`xlt.run.layout.RunDir`); their checked readers are :mod:`xlt.run.artifacts`.
"""
