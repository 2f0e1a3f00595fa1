#!/usr/bin/env bash
# `sam build` without Docker into .aws-sam/ (arm64 layer + functions, python3.12 builder).
# Usage: scripts/sam-build.sh [extra sam build args]   (any cwd)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SAM_VENV="${SAM_VENV:-.venv-sam}"
SAM_VENV="$SAM_VENV" scripts/sam-venv.sh  # a fresh clone has no SAM CLI yet

# The python3.12 builder looks up `python3.12` on PATH: prefer the pyenv build.
PYENV_312="$HOME/.pyenv/versions/3.12.1/bin"
if [[ -x "$PYENV_312/python3.12" ]]; then
  export PATH="$PYENV_312:$PATH"
elif ! command -v python3.12 >/dev/null 2>&1; then
  echo "sam-build: python3.12 not found on PATH" >&2
  exit 1
fi
echo "sam-build: using $(command -v python3.12) ($(python3.12 --version))"

export SAM_CLI_TELEMETRY=0
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"

"$SAM_VENV/bin/sam" build --template-file template.yaml --build-dir .aws-sam/build "$@"
echo "sam-build: OK (.aws-sam/build)"
