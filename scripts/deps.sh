#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs everything sigil needs to build, run and test, from Debian 12
# packages only. Run as root (or with sudo). Safe to run again.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt_get() { if [ "$(id -u)" -eq 0 ]; then apt-get "$@"; else sudo apt-get "$@"; fi; }

runtime=(meson ninja-build pkg-config gcc libc6-dev scdoc
         libuv1-dev libmsgpack-dev libsystemd-dev libsodium-dev libp11-kit-dev)
testing=(clang llvm libclang-rt-14-dev libcmocka-dev libssl-dev valgrind git
         python3 python3-msgpack python3-cryptography
         openssh-client openssh-server minisign signify-openbsd age
         scdoc debhelper dpkg-dev lintian systemd util-linux procps gnuplot-nox
         opensc gnutls-bin python3-pykcs11 softhsm2 p11-kit)

case "${1:-all}" in
  runtime) pkgs=("${runtime[@]}") ;;
  all)     pkgs=("${runtime[@]}" "${testing[@]}") ;;
  *) echo "usage: $0 [runtime|all]" >&2; exit 2 ;;
esac

apt_get update -q
apt_get install -y -q "${pkgs[@]}"
