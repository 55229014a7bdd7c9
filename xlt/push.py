"""`xlt push RUN_DIR --repo-id NAME/MODEL` (or `python -m xlt.push`): share a run's fine-tuned model on the
Hugging Face Hub, with the model card the report stage wrote (:mod:`xlt.reporting.model_card`).

::

    xlt push runs/xlmr_zeroshot/default --repo-id me/xlmr-base-belebele-zeroshot --private
    xlt push runs/xlmr_zeroshot/default --repo-id me/xlmr-base-belebele-zeroshot --revision seed-1 --dry-run

It uploads the files of the run's final model folder (``model/``) that make a model on the Hub, and nothing
else: the card (``README.md``), configs (``*.json``), ``*.safetensors`` weights and tokenizer files. Never
checkpoints (``checkpoint-*/``), optimizer, scheduler or RNG states, ``training_args.bin`` or any other
pickle (``*.bin``, ``*.pt``, ``*.pth``, ``*.pkl``), hidden files or the run's own provenance record; the
dry run lists exactly what would go and what is left out, and why. It refuses (exit status 2, nothing
uploaded):

* a run whose model is missing or no longer what training saved, whose results (``report.json``) are
  missing, damaged or older than its evaluation, or whose card was not written from them;
* a file to upload that holds a secret (a Hugging Face token, or the value of ``HF_TOKEN``,
  ``HUGGING_FACE_HUB_TOKEN`` or ``WANDB_API_KEY``);
* without the network (``HF_HUB_OFFLINE`` set) or a token (``HF_TOKEN`` or ``hf auth login``:
  ``huggingface_hub.get_token()``), saying which is missing (the dry run needs neither).

The upload is one commit through ``huggingface_hub``: ``HfApi.create_repo`` (``exist_ok``), ``create_branch``
for a ``--revision`` other than ``main``, then ``upload_folder`` of the model folder with the exact file list
as its ``allow_patterns``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import struct
import sys
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from xlt.contract import output_id
from xlt.errors import XltError, print_error
from xlt.hub import offline
from xlt.reporting.model_card import card_problem
from xlt.run.artifacts import model_problem
from xlt.run.layout import MODEL_CARD, MODEL_PROVENANCE_FILE, RunDir
from xlt.run.state import REPORT, Damaged, read_state
from xlt.scoring.declaration import names_run_model
from xlt.secrets import SECRET_ENV, secrets_in

# What a model repository holds: the card, configs, safetensors weights, tokenizer files.
ALLOWED = (MODEL_CARD, "*.json", "*.safetensors", "*.model", "vocab.txt", "vocab.json", "merges.txt")
# Never uploaded, whatever else the folder holds (also the upload's ignore_patterns): training state and pickles.
REFUSED = {
    "checkpoint-*": "a training checkpoint",
    "optimizer.*": "optimizer state",
    "scheduler.*": "learning-rate scheduler state",
    "rng_state*": "random-number generator state",
    "trainer_state.json": "Trainer state",
    "training_args.bin": "training arguments (a pickle)",
    "*.bin": "a pickle (weights go as safetensors)",
    "*.pt": "a pickle",
    "*.pth": "a pickle",
    "*.pkl": "a pickle",
    "*.pickle": "a pickle",
    "*.ckpt": "a pickle",
    ".*": "a hidden file",
    MODEL_PROVENANCE_FILE: "the run's own provenance record (the card says what produced the model)",
}
# fnmatch's "*" spans folders: "*/<pattern>" catches a refused name in a subfolder.
IGNORE_PATTERNS = [*REFUSED, *(f"*/{p}" for p in REFUSED)]


class PushError(XltError):
    """The run cannot be pushed as it is, or the Hub cannot be reached: the message says what and the fix."""


@dataclass
class Upload:
    """What ``xlt push`` would upload: the folder, its files (relative POSIX paths, sorted, with sizes) and
    what it leaves out with the reason."""

    folder: Path
    files: list[tuple[str, int]] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    recipe: str = ""

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.files]


def refused_reason(rel: str) -> str | None:
    """Why the file at ``rel`` (relative to the model folder) is never uploaded, else None."""
    for part in rel.split("/"):
        for pattern, why in REFUSED.items():
            if fnmatch(part, pattern):
                return why
    return None


def _scanned_text(path: Path) -> str:
    """The text of a file to look for secrets in: a safetensors file's JSON header (the tensors are
    numbers), any other file's bytes (undecodable ones dropped)."""
    with open(path, "rb") as f:
        if path.suffix == ".safetensors":
            head = f.read(8)
            size = struct.unpack("<Q", head)[0] if len(head) == 8 else 0
            return f.read(min(size, 100_000_000)).decode("utf-8", errors="ignore")
        return f.read().decode("utf-8", errors="ignore")


def known_secrets() -> dict[str, str]:
    """The tokens of this environment ({where: value}): ``SECRET_ENV`` and huggingface_hub's ``get_token()``."""
    from huggingface_hub import get_token  # lazy: start-up time

    out = {name: os.environ[name] for name in SECRET_ENV if os.environ.get(name)}
    token = get_token()
    if token and token not in out.values():
        out["the Hugging Face token of this machine"] = token
    return out


def check_run(run: RunDir) -> dict[str, Any]:
    """Refuse a run whose model, results or card are missing, damaged or out of date; return its report."""
    if not run.path.is_dir():
        raise PushError(f"{run.path}: no such run directory")
    if not run.model.is_dir():
        raise PushError(f"{run.model}: no trained model in this run (run its train stage first)")
    problem = model_problem(run)
    if problem:
        raise PushError(f"{problem}; not pushing weights that are not what training saved")
    try:
        report = read_state(run.report(), REPORT)
    except Damaged as err:
        raise PushError(f"{err.path} is damaged ({err.why}): rerun the run's report stage") from err
    if report is None:
        raise PushError(
            f"{run.report()} is missing: evaluate the model and write the report first "
            f"(python -m xlt.train +recipe=<recipe> runs every stage)"
        )
    if not names_run_model(report.get("model")):
        raise PushError(f"{run.report()} scores eval.model={report.get('model')!r}, not this run's model")
    evaluated = output_id(run, "evaluate")
    if evaluated is None or report["provenance"].get("upstream", {}).get("evaluate") != evaluated:
        raise PushError(
            f"{run.report()} is not the report of this run's evaluation (its evaluate stage is "
            f"{'not done' if evaluated is None else 'newer'}): rerun the report stage"
        )
    try:
        trained = run.done_info("evaluate").get("provenance", {}).get("upstream", {}).get("train")
    except Damaged as err:
        raise PushError(f"{err.path} is damaged ({err.why}): rerun the run's evaluate stage") from err
    if trained != output_id(run, "train"):
        raise PushError(
            f"the evaluation in {run.eval} is not of this run's trained model (it was retrained "
            "since): rerun the evaluate and report stages"
        )
    card = card_problem(run.model_card, run.report(), run.model_provenance)
    if card:
        raise PushError(
            f"the model card is not the card of these results: {card}. Rerun the report stage "
            f"(python -m xlt.report +recipe={report.get('recipe')} with the run's overrides) to "
            "rewrite it"
        )
    return report


def plan_upload(run_dir: str | os.PathLike[str]) -> Upload:
    """Check the run (:func:`check_run`) and list what would be uploaded from its model folder; refuse a
    file to upload that holds a secret."""
    run = RunDir(run_dir)
    report = check_run(run)
    up = Upload(run.model, recipe=str(report.get("recipe") or ""))
    secrets = known_secrets()
    for path in sorted(p for p in run.model.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(run.model).as_posix()
        why = refused_reason(rel)
        if why is None and path.is_symlink():
            why = "a symbolic link"
        if why is None and not any(fnmatch(path.name, p) for p in ALLOWED):
            why = "not a model, tokenizer or card file"
        if why is not None:
            up.left_out.append((rel, why))
            continue
        found = secrets_in(_scanned_text(path), secrets)
        if found:
            raise PushError(
                f"{path} holds a secret ({', '.join(found)}): not pushing. Remove it from the file "
                "(and rotate the token) before sharing the model"
            )
        up.files.append((rel, path.stat().st_size))
    if MODEL_CARD not in up.names or not any(n.endswith(".safetensors") for n in up.names):
        raise PushError(
            f"{run.model} has no {'model card' if MODEL_CARD not in up.names else 'safetensors weights'} "
            "to upload"
        )
    return up


def credentials() -> str:
    """The token of the upload; a :class:`PushError` naming what is missing without the network or a token."""
    from huggingface_hub import get_token  # lazy: start-up time

    if offline():
        raise PushError(
            f"HF_HUB_OFFLINE is set ({os.environ.get('HF_HUB_OFFLINE')}): pushing needs the network. "
            "Run xlt push without it on a machine that reaches huggingface.co (--dry-run works offline)"
        )
    token = get_token()
    if not token:
        raise PushError(
            "no Hugging Face token: set HF_TOKEN (a token with write access) or log in once with "
            "`hf auth login` (huggingface_hub.get_token() found none)"
        )
    return token


def push(
    up: Upload,
    repo_id: str,
    *,
    private: bool = False,
    revision: str | None = None,
    commit_message: str | None = None,
) -> Any:
    """Upload ``up``'s files in one commit (see the module docstring); return huggingface_hub's CommitInfo."""
    from huggingface_hub import HfApi  # lazy: start-up time

    token = credentials()
    api = HfApi(token=token)
    message = commit_message or f"xlt push: {up.recipe or 'model'} ({len(up.files)} files)"
    try:
        api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
        if revision and revision != "main":
            api.create_branch(repo_id, branch=revision, repo_type="model", exist_ok=True)
        return api.upload_folder(
            repo_id=repo_id,
            repo_type="model",
            folder_path=str(up.folder),
            revision=revision,
            allow_patterns=[glob.escape(n) for n in up.names],
            ignore_patterns=IGNORE_PATTERNS,
            commit_message=message,
        )
    except Exception as err:  # huggingface_hub's HTTP errors, no connection, ...: the user's to fix
        raise PushError(f"pushing to {repo_id} failed: {type(err).__name__}: {err}") from err


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def describe(up: Upload, repo_id: str, *, private: bool, revision: str | None) -> str:
    """The dry run's listing: every file to upload with its size, then what is left out and why."""
    where = f"{'private' if private else 'public'} model repository {repo_id}, branch {revision or 'main'}"
    lines = [f"would upload {len(up.files)} file(s) from {up.folder} to the {where}:"]
    lines += [f"  {name}  ({_size(size)})" for name, size in up.files]
    if up.left_out:
        lines.append(f"left out ({len(up.left_out)}):")
        lines += [f"  {name}  ({why})" for name, why in up.left_out]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line of ``xlt push`` (argparse)."""
    parser = argparse.ArgumentParser(
        prog="xlt push", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", help="a finished run directory (its model/ folder is uploaded)"
    )
    parser.add_argument("--repo-id", required=True, help="the Hub repository, e.g. me/xlmr-base-belebele")
    parser.add_argument("--private", action="store_true", help="create the repository private")
    parser.add_argument(
        "--revision",
        "--branch",
        dest="revision",
        default=None,
        help="the branch to commit to (created from main if new; default main)",
    )
    parser.add_argument("--commit-message", default=None)
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="check the run and list exactly what would be uploaded; no network, no token",
    )
    parser.add_argument("--json", action="store_true", help="with --dry-run: the listing as JSON")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from huggingface_hub.utils import validate_repo_id  # lazy: start-up time

        try:
            validate_repo_id(args.repo_id)
        except Exception as err:
            raise PushError(f"--repo-id {args.repo_id!r}: {err}") from err
        up = plan_upload(args.run_dir)
        if args.dry_run:
            if args.json:
                print(
                    json.dumps(
                        {
                            "repo_id": args.repo_id,
                            "private": args.private,
                            "revision": args.revision or "main",
                            "folder": str(up.folder),
                            "files": up.names,
                            "left_out": dict(up.left_out),
                        },
                        indent=2,
                    )
                )
            else:
                print(describe(up, args.repo_id, private=args.private, revision=args.revision))
            return 0
        info = push(
            up, args.repo_id, private=args.private, revision=args.revision, commit_message=args.commit_message
        )
    except XltError as err:
        return print_error(err)
    print(f"pushed {len(up.files)} file(s) to {args.repo_id}: {getattr(info, 'commit_url', info)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
