"""`python -m xlt.translate +recipe=<name> [overrides]`: translate the training set (the translate stage).

Shard the work over jobs or GPUs (each shard takes every K-th unit of (language, split, rows)); the
shard that finishes last merges the parts into ``data/translated/<lang>`` and writes the report, and
rerunning with the default ``translate.num_shards=1`` merges whatever is already translated::

    python -m xlt.translate +recipe=xlmr_translate_train_all translate.num_shards=4 translate.shard_index=0
    ...
    python -m xlt.translate +recipe=xlmr_translate_train_all        # resumes / merges

Use ``translate.import_dir=<folder>`` to import ready translations instead (see xlt.translation.importer).
"""

from xlt.cli import make_main

main = make_main(["translate"])

if __name__ == "__main__":
    main()
