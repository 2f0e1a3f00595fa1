#!/usr/bin/env bash
# Create the SAM CLI venv (.venv-sam) when it is missing; `make template` and `make build` both need it.
# aws-sam-cli pins an old boto3, so it lives in a venv of its own, apart from the project's.
# Usage: scripts/sam-venv.sh   (any cwd; env SAM_VENV and SAM_CLI_VERSION override the defaults)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SAM_VENV="${SAM_VENV:-.venv-sam}"
SAM_CLI_VERSION="${SAM_CLI_VERSION:-1.170.0}"

if [[ -x "$SAM_VENV/bin/sam" ]]; then
  exit 0
fi
PY312="$HOME/.pyenv/versions/3.12.1/bin/python3.12"
[[ -x "$PY312" ]] || PY312="$(command -v python3.12 || true)"
if [[ -z "$PY312" ]]; then
  echo "sam-venv: python3.12 not found (needed to create $SAM_VENV)" >&2
  exit 1
fi
echo "sam-venv: creating $SAM_VENV with aws-sam-cli==$SAM_CLI_VERSION ..."
"$PY312" -m venv "$SAM_VENV"
"$SAM_VENV/bin/pip" install --quiet "aws-sam-cli==$SAM_CLI_VERSION"
echo "sam-venv: $SAM_VENV ready ($("$SAM_VENV/bin/sam" --version))"
