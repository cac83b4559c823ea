# Sourced by the namespaced suites (multihost_test.sh, tests/soak/soak.sh); needs $LOG, a folder.
#
# launch NAME RANKS_PER_HOST NHOSTS [ENV=VAL...] -- PROGRAM ARGS...: one process per rank, rank r on
# host r / RANKS_PER_HOST, all started at once; waits for them; rc of each in $LOG/NAME.rc.R.
# Host 0's address is the rendezvous.
launch() {
  local name=$1 per=$2 hosts=$3
  shift 3
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  # Below the ephemeral range (32768+), where sockets of earlier runs may still hold a port.
  local n=$((per * hosts)) port=$((20000 + RANDOM % 12000)) r pids=()
  local addr=10.77.0.1:$port
  for e in "${envs[@]}"; do [[ $e == NCCL_SOCKET_FAMILY=6 ]] && addr="[fd77::1]:$port"; done
  for ((r = 0; r < n; r++)); do
    local h=$((r / per))
    ip netns exec btt-h$h env NCCL_HOSTID=btt-h$h BATON_RANK=$r BATON_NRANKS=$n BATON_LOCAL_RANK=$((r % per)) \
      NCCL_COMM_ID=$addr NCCL_SOCKET_IFNAME=veth0 BATON_BOOTSTRAP_TIMEOUT=30 "${envs[@]}" \
      "$@" >"$LOG/$name.out.$r" 2>&1 &
    pids+=($!)
  done
  for ((r = 0; r < n; r++)); do
    wait "${pids[$r]}"
    echo $? >"$LOG/$name.rc.$r"
  done
}
