"""How a training run was launched: its world size, and launches that silently lost processes.

``accelerate launch --num_processes 2`` without ``--multi_gpu`` (or a config saying so) starts *one*
process through accelerate's simple launcher: the run trains with half the effective batch and twice the
steps, and nothing fails. That launcher sets ``MASTER_ADDR``/``MASTER_PORT`` only when more than one
process was asked for, and never ``WORLD_SIZE``; a real multi-process launcher (torchrun, accelerate's
multi-GPU/CPU launchers, ``srun`` + accelerate) always sets ``WORLD_SIZE``. :func:`launch_warnings` turns
such mismatches into messages that the stage logs loudly and records in ``train_metrics.json``.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger("xlt.training")

# DeepSpeed's comm layer calls torch.distributed.{all_gather_into_tensor,reduce_scatter_tensor}, which
# torch deprecates with a FutureWarning on every call: tens of thousands of identical lines per run.
DEEPSPEED_DEPRECATIONS = r"`torch\.distributed\.(all_gather_into_tensor|reduce_scatter_tensor)` is deprecated"


def quiet_deepspeed_deprecations() -> None:
    """Ignore only the two torch deprecation warnings DeepSpeed's collectives raise (nothing xlt can change)."""
    warnings.filterwarnings("ignore", message=DEEPSPEED_DEPRECATIONS, category=FutureWarning)


def asked_for_several_processes(env: Mapping[str, str]) -> bool:
    """True when accelerate's simple launcher was asked for more than one process (see the module docstring)."""
    return "ACCELERATE_MIXED_PRECISION" in env and "MASTER_PORT" in env and "WORLD_SIZE" not in env


def deepspeed_train_batch_size(path: str | None) -> int | None:
    """An explicit ``train_batch_size`` in the DeepSpeed JSON (None when absent or ``"auto"``)."""
    if not path:
        return None
    value = json.loads(Path(path).read_text()).get("train_batch_size")
    return value if isinstance(value, int) else None


def launch_warnings(
    world_size: int,
    per_device: int,
    accumulation: int,
    env: Mapping[str, str] | None = None,
    deepspeed: str | None = None,
    visible_gpus: int = 0,
) -> list[str]:
    """Messages for a launch that does not train with the batch the recipe and launcher asked for."""
    env = os.environ if env is None else env
    effective = per_device * accumulation * world_size
    out = []
    if world_size == 1 and asked_for_several_processes(env):
        out.append(
            "accelerate launch was asked for several processes but started ONE (no --multi_gpu, or a "
            f"config without distributed_type): effective batch {effective} instead of {per_device * accumulation} "
            "x N processes, and N times the steps. Add --multi_gpu (on CPU too), or use "
            "`accelerate launch --multi_gpu --num_processes N`."
        )
    if world_size == 1 and visible_gpus > 1:
        out.append(
            f"{visible_gpus} GPUs are visible but training runs in one process on one of them; "
            "use `accelerate launch --multi_gpu --num_processes N -m xlt.train ...` to use them all."
        )
    ds_batch = deepspeed_train_batch_size(deepspeed)
    if ds_batch is not None and ds_batch != effective:
        out.append(
            f"the DeepSpeed config asks for train_batch_size {ds_batch}, but per-device batch {per_device} x "
            f"accumulation {accumulation} x world size {world_size} = {effective}"
        )
    return out


def report_launch(args: Any, t: Any) -> dict[str, Any]:
    """Log the world size and any launch warning; return the fields for ``train_metrics.json``."""
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    problems = launch_warnings(
        args.world_size, t.per_device_train_batch_size, t.gradient_accumulation_steps,
        deepspeed=args.deepspeed if isinstance(args.deepspeed, str) else None, visible_gpus=gpus,
    )
    effective = t.per_device_train_batch_size * t.gradient_accumulation_steps * args.world_size
    if args.process_index == 0:
        log.info(
            "world size %d (per-device batch %d x accumulation %d x %d processes = effective batch %d), device %s",
            args.world_size, t.per_device_train_batch_size, t.gradient_accumulation_steps, args.world_size,
            effective, args.device,
        )
        for msg in problems:
            log.warning("LAUNCH PROBLEM: %s", msg)
            from rich.console import Console
            from rich.panel import Panel

            Console(stderr=True).print(Panel(msg, title="LAUNCH PROBLEM", style="bold yellow"))
    return {"world_size": args.world_size, "effective_batch_size": effective, "launch_warnings": problems}
