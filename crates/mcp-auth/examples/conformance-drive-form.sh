#!/bin/bash
# Reads the conformance suite's output; logs in through the HTML form of the authorization URL it prints.
while IFS= read -r line; do
  echo "$line"
  case "$line" in
    http://127.0.0.1:*/authorize\?*)
      (html=$(curl -s "$line")
       id=$(printf '%s' "$html" | sed -n 's/.*name="request_id" value="\([^"]*\)".*/\1/p')
       csrf=$(printf '%s' "$html" | sed -n 's/.*name="csrf_token" value="\([^"]*\)".*/\1/p')
       base=${line%%/authorize*}
       curl -s -L --max-redirs 3 -o /dev/null -w "driver: %{http_code} %{url_effective}\n" \
         --data-urlencode "request_id=$id" --data-urlencode "csrf_token=$csrf" \
         --data-urlencode username=alice --data-urlencode password=wonderland --data-urlencode action=approve \
         "$base/authorize") & ;;
  esac
done
wait
