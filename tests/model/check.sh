#!/usr/bin/env bash
# Model-checks the kernel's protocols with spin: every correct model must pass with 0 errors and
# every statement reachable, and every broken variant must fail. Exits non-zero otherwise.
# Usage: tests/model/check.sh [-k]   (-k keeps the scratch directory and prints its path)
# Needs spin (Debian package "spin") and a C compiler (CC, default gcc). Builds under /tmp only.
set -u

here=$(cd "$(dirname "$0")" && pwd)
spin=${SPIN:-spin}
cc=${CC:-gcc}
keep=0
[ "${1:-}" = "-k" ] && keep=1

command -v "$spin" >/dev/null || { echo "model: spin not found (apt-get install spin)"; exit 2; }
command -v "$cc" >/dev/null || { echo "model: $cc not found"; exit 2; }

scratch=$(mktemp -d /tmp/tc-model.XXXXXX) || exit 2
if [ "$keep" = 1 ]; then
    echo "model: scratch directory $scratch"
else
    trap 'rm -rf "$scratch"' EXIT
fi

# model | spin -D flags | expected outcome: pass (0 errors, every statement reached),
# pass-part (0 errors; a variant that leaves some paths out on purpose), fail (some error)
runs=(
    "mailbox.pml||pass"
    "mailbox.pml|-DBROKEN|fail"
    "mailbox.pml|-DBROKEN_CLAIM|fail"
    "mailbox_word.pml||pass"
    "mailbox_word.pml|-DBROKEN_LOADSTORE|fail"
    "mailbox_word.pml|-DBROKEN_TIMEOUT|fail"
    "mailbox_word.pml|-DBROKEN_LATE|fail"
    "mailbox_word.pml|-DBROKEN_UNLOCK|fail"
    "mailbox_word.pml|-DBROKEN_PUBLISH|fail"
    "mailbox_word.pml|-DNOSPIN -DNA=1 -DNPUT=2 -DMAXFIRE=2|pass"
    "semaphore_word.pml||pass"
    "semaphore_word.pml|-DN1=2 -DN2=0|pass"
    "semaphore_word.pml|-DCLOSE -DN2=0|pass"
    "semaphore_word.pml|-DBROKEN_LATE_PUBLISH|fail"
    "semaphore_word.pml|-DBROKEN_NOFLAG_CHECK|fail"
    "semaphore_word.pml|-DBROKEN_NOFLAG_CHECK -DNOINV|fail"
    "semaphore_word.pml|-DBROKEN_SPLIT_UNLOCK|fail"
    "semaphore_word.pml|-DBROKEN_STALE|fail"
    "semaphore_word.pml|-DBROKEN_CHAIN -DN1=2 -DN2=0|fail"
    "semaphore_word.pml|-DBROKEN_OLD|fail"
    "event_s.pml||pass"
    "event_s.pml|-DRESTORE_ENTRY -DINITIALLY_SET|pass"
    "event_s.pml|-DBROKEN_CLAIM_COUNTS|fail"
    "event_s.pml|-DBROKEN_NO_RESTORE|fail"
    "event_s.pml|-DBROKEN_RESUME_FIRST|fail"
    "event_s.pml|-DBROKEN_NO_RECHECK|fail"
    "event_s.pml|-DBROKEN_TIMEOUT|fail"
    "event_s.pml|-DBROKEN_PUBLISH_FIRST|fail"
    "event.pml||pass"
    "event.pml|-DBROKEN_NOCHECK|fail"
    "event.pml|-DBROKEN_NOCLAIM|fail"
    "event_manual.pml||pass"
    "event_manual.pml|-DBROKEN_SPLIT|fail"
    "event_manual.pml|-DBROKEN_SPLIT -DNO_DESTROY|fail"
    "timed_wait.pml||pass"
    "timed_wait.pml|-DBROKEN|fail"
    "timed_wait.pml|-DBROKEN_NOWAIT|fail"
    "timed_wait.pml|-DBROKEN_NOARMING|fail"
    "timed_coroutine.pml||pass"
    "timed_coroutine.pml|-DBROKEN_SUBMIT_ARMED|fail"
    "timed_coroutine.pml|-DBROKEN_NO_HANDOFF|fail"
    "strand_pump.pml||pass"
    "strand_pump.pml|-DNO_CLOSE|pass-part"
    "strand_pump.pml|-DBROKEN -DNO_CLOSE|fail"
    "strand_pump.pml|-DBROKEN|fail"
    "strand_pump.pml|-DBROKEN_EARLY|fail"
    "scheduler_close.pml||pass"
    "scheduler_close.pml|-DBROKEN_FLAG|fail"
    "scheduler_close.pml|-DBROKEN_NOWAIT|fail"
    "split_gate.pml||pass"
    "split_gate.pml|-DCLOSE -DN2=0|pass-part"
    "split_gate.pml|-DBROKEN_LOOK_FIRST|fail"
    "split_gate.pml|-DBROKEN_GRANT_UNTAKEN|fail"
    "split_gate.pml|-DBROKEN_STALE_SEEN|fail"
    "split_gate.pml|-DKA=2 -DN1=2 -DMAXFIRE=0 -DBROKEN_NO_REGRANT|fail"
    "busycount.pml||pass"
    "busycount.pml|-DBROKEN_DIRTY|fail"
    "busycount.pml|-DBROKEN_ONEHALF|fail"
)

status=0
n=0
start=$(date +%s.%N)
for entry in "${runs[@]}"; do
    IFS='|' read -r model defs expect <<<"$entry"
    n=$((n + 1))
    dir="$scratch/$n"
    mkdir -p "$dir"
    cp "$here/$model" "$dir/"
    name="$model${defs:+ $defs}"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # defs is a list of flags
    if ! (cd "$dir" && "$spin" -o3 $defs -a "$model" >spin.log 2>&1); then
        echo "FAIL  $name: spin -a failed"; sed 's/^/    /' "$dir/spin.log"; status=1; continue
    fi
    # SAFETY: assertions and invalid end states (deadlocks, lost wake-ups); -w: quiet pan's
    # own array-index warnings, which are not ours.
    if ! (cd "$dir" && "$cc" -O1 -w -DSAFETY -o pan pan.c >cc.log 2>&1); then
        echo "FAIL  $name: compiling pan failed"; sed 's/^/    /' "$dir/cc.log"; status=1; continue
    fi
    (cd "$dir" && ./pan -m200000 >pan.log 2>&1)
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$dir/pan.log" | head -n1)
    states=$(awk '/states, stored/ { print $1; exit }' "$dir/pan.log")
    first=$(grep -m1 -E '^pan:1: ' "$dir/pan.log" | sed 's/^pan:1: //')
    truncated=$(grep -c -E 'max search depth too small|depth limit' "$dir/pan.log")
    # statements never reached, other than the end of a process that loops for ever
    unreached=$(grep -E '^[[:space:]]+[^ ]+\.pml:[0-9]+, state [0-9]+, ' "$dir/pan.log" \
        | grep -v '"-end-"' || true)
    if [ -z "$errors" ]; then
        echo "FAIL  $name: pan printed no result"; sed 's/^/    /' "$dir/pan.log" | tail -20
        status=1; continue
    fi
    [ "$expect" = pass-part ] && unreached=""
    if [ "$expect" != fail ]; then
        if [ "$errors" = 0 ] && [ "$truncated" = 0 ] && [ -z "$unreached" ]; then
            if [ "$expect" = pass ]; then
                echo "ok    $name: 0 errors, $states states, every statement reached (${secs}s)"
            else
                echo "ok    $name: 0 errors, $states states (${secs}s)"
            fi
        else
            echo "FAIL  $name: expected to pass: $errors errors${first:+ ($first)}," \
                "truncated=$truncated (${secs}s)"
            [ -n "$unreached" ] && printf '    unreached: %s\n' "${unreached//$'\n'/ | }"
            status=1
        fi
    else
        if [ "$errors" -gt 0 ]; then
            echo "ok    $name: fails as it must: $first after $states states (${secs}s)"
        else
            echo "FAIL  $name: broken variant passed ($states states): the check cannot fail"
            status=1
        fi
    fi
done
end=$(date +%s.%N)
total=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
if [ "$status" = 0 ]; then
    echo "model: all $n runs as expected (${total}s)"
else
    echo "model: FAILED (${total}s)"
fi
exit "$status"
