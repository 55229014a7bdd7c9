"""Run xlt's entry points as a user does: ``python -m <module> args`` from the repository root, offline."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1",
       "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}


def xlt(*args: str, env: dict[str, str] | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python -m *args`` in the repository root with the offline test environment (plus ``env``)."""
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, env={**ENV, **(env or {})},
                          capture_output=True, text=True, timeout=timeout)


def start(*args: str, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """:func:`xlt` started in the background, stdout and stderr into ``log`` (``wait()`` for it)."""
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", *args], cwd=REPO, env={**ENV, **(env or {})},
                                stdout=out, stderr=subprocess.STDOUT, text=True)


def free_port() -> int:
    """A TCP port free on this host now (for a launcher's rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
