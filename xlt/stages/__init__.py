"""The five stages, one module each, named as the stage; :mod:`xlt.contract` calls them in order.

Each module exposes ``run_stage(cfg, run, ctx)``: ``ctx`` is the :class:`~xlt.contract.StageContext` the
contract builds (inputs, provenance); tests and tools drive one stage with
:func:`xlt.contract.call_stage`. A stage reads and writes the run directory; the layers it calls
(``xlt.data``, ``xlt.translation``, ``xlt.training``, ``xlt.scoring``, ``xlt.reporting``) hold the
library code and never import a stage.

* :mod:`~xlt.stages.build_data`  the English training set (:mod:`xlt.data.assemble`) and its build report;
* :mod:`~xlt.stages.translate`   units, shards, merge, report, import (:mod:`xlt.translation`);
* :mod:`~xlt.stages.train`       set-up, train, save, clean-up (:mod:`xlt.training`);
* :mod:`~xlt.stages.evaluate`    every (benchmark, language) job of a shard, resumably (:mod:`xlt.scoring`);
* :mod:`~xlt.stages.report`      the merged report files and plots (:mod:`xlt.reporting`).
"""
