#!/usr/bin/env bash
# Validate template.yaml offline: cfn-lint (project venv) then `sam validate --lint` (SAM CLI venv).
# Usage: scripts/sam-validate.sh        (any cwd; env VENV=path overrides the project venv, default .venv)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="${VENV:-.venv}"
SAM_VENV="${SAM_VENV:-.venv-sam}"

# The SAM CLI lives in a venv of its own, created once if missing.
SAM_VENV="$SAM_VENV" scripts/sam-venv.sh

if [[ ! -x "$VENV/bin/cfn-lint" ]]; then
  echo "sam-validate: $VENV/bin/cfn-lint not found (pip install -r requirements-dev.txt into $VENV)" >&2
  exit 1
fi

# Offline: no telemetry, a dummy region, and dummy credentials unless real ones are configured.
export SAM_CLI_TELEMETRY=0
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="${AWS_REGION:-$AWS_DEFAULT_REGION}"
if [[ -z "${AWS_ACCESS_KEY_ID:-}" && -z "${AWS_PROFILE:-}" ]]; then
  export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_SESSION_TOKEN=testing
fi

echo "sam-validate: [1/2] $VENV/bin/cfn-lint template.yaml"
"$VENV/bin/cfn-lint" template.yaml

echo "sam-validate: [2/2] sam validate --lint"
"$SAM_VENV/bin/sam" validate --lint --template-file template.yaml

echo "sam-validate: OK"
