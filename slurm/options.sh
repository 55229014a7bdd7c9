# The options of the submit scripts (slurm/submit_eval.sh, submit_translate.sh, paper_sweep.sh), one parser
# (sourced, not run):
#
#   source "$HERE/options.sh"
#   xlt_submit_options "n:p:A:" "usage: ..." "$@"; shift "$XLT_SHIFT"
#
#   -n SHARDS     SHARDS (shards of a translation or evaluation array)
#   -j PARALLEL   PARALLEL (array elements at a time)
#   -p PARTITION  OPTS+=(--partition=PARTITION)
#   -A ACCOUNT    OPTS+=(--account=ACCOUNT)
#
# The caller sets the defaults (SHARDS, PARALLEL, OPTS=()) first. A bad option or a count that is not a whole
# number >= 1 prints the usage and exits 2. Bash 4.2: no namerefs, empty arrays expanded as ${a[@]+"${a[@]}"}.

xlt_submit_options() {
    local spec="$1" usage="$2" opt
    shift 2
    OPTIND=1
    while getopts "$spec" opt; do
        case "$opt" in
            n) SHARDS="$OPTARG" ;;
            j) PARALLEL="$OPTARG" ;;
            p) OPTS+=("--partition=$OPTARG") ;;
            A) OPTS+=("--account=$OPTARG") ;;
            *) echo "$usage" >&2; exit 2 ;;
        esac
    done
    for opt in "${SHARDS:-1}:-n" "${PARALLEL:-1}:-j"; do
        if [[ ! "${opt%:*}" =~ ^[1-9][0-9]*$ ]]; then
            echo "xlt: error: ${opt##*:} ${opt%:*}: give a whole number >= 1" >&2
            echo "$usage" >&2
            exit 2
        fi
    done
    XLT_SHIFT=$((OPTIND - 1))
}
