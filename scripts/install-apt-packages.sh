#!/usr/bin/env bash
# Installs the Debian packages listed in $1 that are not installed yet.
set -euo pipefail

mapfile -t wanted < <(grep -v '^\s*#' "$1" | grep -v '^\s*$')
missing=()
for package in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "installing Debian packages: ${missing[*]}"
sudo=""
if [[ $(id -u) != 0 ]]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
