"""Loading from the Hugging Face Hub with clear errors when it (or the cache) cannot provide a resource."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from xlt.config.keys import is_split_key
from xlt.errors import ConfigError, HubUnavailableError

GENERIC_PREFETCH = "python -m xlt.prefetch +recipe=<name>"


def prefetch_hint() -> str:
    """The prefetch command for the running Hydra job (its recipe and overrides), for error messages.

    Overrides that only split or schedule work (shard keys, ``force``) are left out; outside a Hydra job
    (or without a recipe) it is the generic form.
    """
    import shlex

    try:
        from hydra.core.hydra_config import HydraConfig

        task = list(HydraConfig.get().overrides.task)
    except Exception:  # no Hydra job running
        task = []
    if not any(o.lstrip("+").startswith("recipe=") for o in task):
        return GENERIC_PREFETCH

    def keep(ov: str) -> bool:
        key = ov.lstrip("+~").split("=")[0]
        return not (key.startswith("hydra") or key == "force" or is_split_key(key))

    return "python -m xlt.prefetch " + shlex.join([o for o in task if keep(o)])


def is_local(name_or_path: str | None) -> bool:
    return bool(name_or_path) and os.path.exists(os.path.expanduser(str(name_or_path)))


def looks_like_path(name: str | None) -> bool:
    """A local path rather than a Hub id ('org/name' or 'name'): absolute, relative, home or nested."""
    name = str(name or "")
    if "://" in name:  # a URL (e.g. MCScript2.0's release zip)
        return False
    return name.startswith(("/", "./", "../", "~", ".")) or name.count("/") > 1 or "\\" in name


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on")


@contextlib.contextmanager
def hub_resource(kind: str, repo_id: str, revision: str | None = None, config_key: str | None = None) -> Iterator[None]:
    """Turn a failed Hub/cache load of ``repo_id`` into a :class:`HubUnavailableError` saying how to fix it.

    ``kind`` is "model", "tokenizer" or "dataset"; ``config_key`` names the config key that can point
    the resource at a local copy instead (e.g. ``model.name_or_path``).
    """
    if looks_like_path(repo_id) and not is_local(repo_id):
        key = f" ({config_key})" if config_key else ""
        raise ConfigError(f"{kind} path '{repo_id}'{key} does not exist; give an existing folder or a Hub id "
                          "like 'org/name'")
    try:
        yield
    except HubUnavailableError:
        raise
    except Exception as err:  # huggingface_hub, datasets and transformers raise many types for this
        if not _looks_like_unreachable(err):
            raise
        rev = f" (revision {revision})" if revision else ""
        mode = "HF_HUB_OFFLINE=1 is set and it is not in the local cache" if offline() else "the Hub could not be reached"
        fix = [
            "connect to the network and run again",
            f"or fill the HF cache on a machine with network access ({prefetch_hint()}) "
            "and run with HF_HUB_OFFLINE=1",
        ]
        if config_key:
            fix.append(f"or point {config_key}=/path/to/local/copy")
        raise HubUnavailableError(
            f"could not load {kind} '{repo_id}'{rev}: {mode}.\n  Fix: " + ";\n       ".join(fix) + "."
        ) from None


_UNREACHABLE_NAMES = (
    "OfflineModeIsEnabled",
    "LocalEntryNotFoundError",
    "ConnectionError",
    "ConnectTimeout",
    "ReadTimeout",
    "DatasetNotFoundError",
    "RepositoryNotFoundError",
    "GatedRepoError",
    "HfHubHTTPError",
    "EntryNotFoundError",
    "RevisionNotFoundError",
)


def _looks_like_unreachable(err: BaseException) -> bool:
    for e in (err, err.__cause__, err.__context__):
        if e is None:
            continue
        if any(c.__name__ in _UNREACHABLE_NAMES for c in type(e).__mro__):
            return True
        text = str(e)
        if any(s in text for s in ("offline mode", "HF_HUB_OFFLINE", "couldn't connect", "Couldn't reach",
                                   "not cached", "cannot find the requested files", "is not a local folder",
                                   "We couldn't connect", "Max retries exceeded", "Name or service not known")):
            return True
    return False
