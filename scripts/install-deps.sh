#!/usr/bin/env bash
# Installs the Debian 12 packages prismsim needs to build and test, if any are missing.
# Idempotent: does nothing (and needs no network) when everything is installed. Arguments name
# more packages (scripts/fuzz.sh and scripts/sanitize.sh add clang and libclang-rt-14-dev).
set -euo pipefail
packages=(g++ cmake ninja-build pkg-config libsimgrid-dev libboost-dev
          libboost-program-options-dev libyaml-cpp-dev libfmt-dev doctest-dev
          python3-matplotlib "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
