#!/bin/bash
# Reads the conformance suite's output; opens the authorization URL it prints, following redirects to its callback.
while IFS= read -r line; do
  echo "$line"
  case "$line" in
    http://127.0.0.1:*/authorize\?*) curl -s -L --max-redirs 3 -o /dev/null -w "driver: %{http_code} %{url_effective}\n" "$line" & ;;
  esac
done
wait
