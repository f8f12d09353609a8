# Sourced by the CI scripts. retry CMD...: runs CMD up to three times, 10 s
# then 30 s apart, for installs from the package registries, where a
# dropped connection or a registry hiccup should not fail the run.
retry() {
  local attempt delay
  for attempt in 1 2 3; do
    if "$@"; then
      return 0
    fi
    [ "$attempt" = 3 ] && break
    delay=$((attempt == 1 ? 10 : 30))
    echo "retry: attempt $attempt of '$*' failed; again in ${delay} s" >&2
    sleep "$delay"
  done
  echo "retry: '$*' failed three times" >&2
  return 1
}
