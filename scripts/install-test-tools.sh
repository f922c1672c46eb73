#!/usr/bin/env bash
# Installs the Debian tools the test suite uses as independent references (ffmpeg decodes our MP3 and
# WAV output to check it). Runs before `npm test`; does nothing when they are already there.
set -euo pipefail
need=()
command -v ffprobe >/dev/null 2>&1 || need+=(ffmpeg)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "voxbridge: installing test tools: ${need[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then sudo=(); elif command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
  echo "voxbridge: need root (or sudo) to apt-get install ${need[*]}; install them and run again" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
