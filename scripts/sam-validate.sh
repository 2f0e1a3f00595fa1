#!/usr/bin/env bash
# Validate template.yaml offline: cfn-lint (project venv) then `sam validate --lint` (SAM CLI venv).
# Usage: scripts/sam-validate.sh        (any cwd; env VENV=path overrides the project venv, default .venv)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="${VENV:-.venv}"
SAM_VENV="${SAM_VENV:-.venv-sam}"
SAM_CLI_VERSION="${SAM_CLI_VERSION:-1.170.0}"

# aws-sam-cli pins an old boto3, so it lives in its own venv; create it once if missing.
if [[ ! -x "$SAM_VENV/bin/sam" ]]; then
  PY312="$HOME/.pyenv/versions/3.12.1/bin/python3.12"
  [[ -x "$PY312" ]] || PY312="$(command -v python3.12 || true)"
  if [[ -z "$PY312" ]]; then
    echo "sam-validate: python3.12 not found (needed to create $SAM_VENV)" >&2
    exit 1
  fi
  echo "sam-validate: creating $SAM_VENV with aws-sam-cli==$SAM_CLI_VERSION ..."
  "$PY312" -m venv "$SAM_VENV"
  "$SAM_VENV/bin/pip" install --quiet "aws-sam-cli==$SAM_CLI_VERSION"
  echo "sam-validate: $SAM_VENV ready ($("$SAM_VENV/bin/sam" --version))"
fi

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
