#!/usr/bin/env bash
# Installs what the browser tests drive: Debian's headless Chromium and its chromedriver.
# Idempotent: does nothing when both are already on PATH. Needs root (or sudo) for apt-get.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [[ "$(id -u)" != "0" ]]; then
  SUDO="sudo"
fi
echo "install-browser: installing chromium and chromium-driver"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
command -v chromium >/dev/null && command -v chromedriver >/dev/null
echo "install-browser: $(chromium --version 2>/dev/null || echo chromium), $(chromedriver --version | head -1)"
