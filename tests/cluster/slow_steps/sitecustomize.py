"""Loaded at interpreter start where this folder is on ``PYTHONPATH`` (the real-scheduler tests' jobs): with
``XLT_TEST_STEP_SLEEP=S`` every optimizer step of a training ends with a sleep of S seconds.

A run that trains until the scheduler stops it (``training.max_steps=100000``) waits on SLURM's own timers
(GraceTime, KillWait, a paused controller) for minutes; at full speed it takes a core all that time from
the tests running beside it. Paced, it still trains, takes its steps, saves and answers its signals at a
step's end, as at full speed: only the idle time between steps is new. Without the variable, nothing changes;
with it, transformers is patched when a process imports it (a process that never trains pays nothing).
"""

import os

if os.environ.get("XLT_TEST_STEP_SLEEP"):
    import importlib.abc
    import importlib.util
    import sys
    import time

    _PAUSE = float(os.environ["XLT_TEST_STEP_SLEEP"])
    _MODULE = "transformers.trainer_callback"

    def _pace(module) -> None:
        real = module.CallbackHandler.on_step_end

        def on_step_end(self, args, state, control):
            time.sleep(_PAUSE)
            return real(self, args, state, control)

        module.CallbackHandler.on_step_end = on_step_end

    class _WhenImported(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name != _MODULE:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            run = spec.loader.exec_module

            def exec_module(module) -> None:
                run(module)
                _pace(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _WhenImported())
