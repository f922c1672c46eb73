#!/usr/bin/env bash
# Installs the Debian tools that the tests (`test`: ffmpeg, to decode our output independently; chromium,
# for the browser phone's end-to-end test; openssl, for the fake Discord voice server's certificate;
# redis-server, the real Redis the cluster tests start on a free port; curl, to stream a say the way a
# user pipes an LLM's output into it) or the
# benchmarks (`bench`: ffmpeg and sox as baselines, GNU time to measure them, chromium for the browser
# phone, redis-server for the cluster benchmark, pocketsphinx with its US English model to measure how
# intelligible the voices are) use, when missing.
# Runs before `npm test` and `npm run bench`; does nothing when everything is there.
set -euo pipefail
case "${1:-}" in
  test) wanted=("ffprobe:ffmpeg" "openssl:openssl" "chromium:chromium" "redis-server:redis-server" "curl:curl") ;;
  bench) wanted=("ffmpeg:ffmpeg" "sox:sox" "pocketsphinx_batch:pocketsphinx pocketsphinx-en-us" "/usr/bin/time:time" "chromium:chromium" "redis-server:redis-server") ;;
  *) echo "usage: $0 test|bench" >&2; exit 2 ;;
esac
need=()
for entry in "${wanted[@]}"; do
  if ! command -v "${entry%%:*}" >/dev/null 2>&1; then
    read -ra packages <<<"${entry#*:}"
    need+=("${packages[@]}")
  fi
done
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "voxbridge: installing ${need[*]} (Debian packages) for $1" >&2
if [ "$(id -u)" -eq 0 ]; then sudo=(); elif command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
  echo "voxbridge: need root (or sudo) to apt-get install ${need[*]}; install them and run again" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
