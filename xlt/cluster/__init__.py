"""Running on a cluster: sweep files (:mod:`~xlt.cluster.sweeps`), the scheduler seam
(:mod:`~xlt.cluster.backend`: one ``Scheduler`` per scheduler, :mod:`~xlt.cluster.slurm` and
:mod:`~xlt.cluster.gridengine`, chosen from the environment; docs/schedulers.md), what the scheduler reports and
the decisions taken from it (:mod:`~xlt.cluster.scheduler`: why a ``TERM`` came, the restart count, the requeue
cap), checkpoint-then-exit on the scheduler's signals and the preemption record (:mod:`~xlt.cluster.signals`),
the run plan of a sweep (:mod:`~xlt.cluster.plan`) and the commands the sbatch scripts call (:mod:`~xlt.cluster.commands`, ``python -m xlt.cluster``). docs/preemption.md and docs/clusters.md.

The package imports nothing itself: the batch shell's ``python -m xlt.cluster after-stop`` runs inside
the scheduler's kill wait (30 s by default), so it loads only what that command needs; import from the modules."""
