# The environment of an offline compute node, for every scheduler's batch shell (sourced, not run, by
# slurm/common.sh and gridengine/common.sh): XLT_SETUP (a file sourced first: module load / conda activate),
# then the Hugging Face libraries offline (compute nodes have no network), tokenizers single-threaded.

set -uo pipefail

if [[ -n "${XLT_SETUP:-}" ]]; then
    # Activation scripts (conda, environment modules) read unset variables: not under set -u.
    set +u
    # shellcheck disable=SC1090
    source "$XLT_SETUP" || { echo "xlt: error: XLT_SETUP=$XLT_SETUP failed (status $?)" >&2; exit 2; }
    set -u
fi
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
export HF_DATASETS_OFFLINE="${HF_DATASETS_OFFLINE:-$HF_HUB_OFFLINE}"
export TRANSFORMERS_OFFLINE="${TRANSFORMERS_OFFLINE:-$HF_HUB_OFFLINE}"
export TOKENIZERS_PARALLELISM="${TOKENIZERS_PARALLELISM:-false}"
