"""Per-function IAM in the integration tests: each invoked handler's AWS calls are checked against the
role template.yaml gives that function (edgecron_cli.local.iam), and what they call is compared with
the checked-in permission matrix, tests/iam/permissions.json.

Regenerate the matrix after a change of what the code calls (the whole integration suite, which
observes every call instead of refusing any):

    make iam-permissions        # = EDGECRON_IAM_RECORD=1 .venv/bin/pytest tests/integration

EDGECRON_IAM_RECORD=add adds what a partial run observed to the matrix and removes nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edgecron_cli.local.iam import Denial, IamCheck, denied_entries, observed_matrix, unused_grants
from edgecron_cli.local.provision import Provisioned

ROOT = Path(__file__).resolve().parents[2]
MATRIX_PATH = ROOT / "tests" / "iam" / "permissions.json"
RECORD_ENV = "EDGECRON_IAM_RECORD"
REGENERATE = "make iam-permissions"

_check: IamCheck | None = None
_function_names: dict[str, str] = {}  # functions/<name>/ -> physical function name


def _identity() -> str:
    from edgecron.data.aws import calling_function

    return calling_function.get()


def install(provisioned: Provisioned) -> IamCheck:
    """Check every AWS call a handler invoked through the harness makes (record mode: observe only)."""
    global _check
    for logical_id, function in provisioned.template.functions.items():
        _function_names[Path(function.code_uri).name] = provisioned.function_name(logical_id)
    _check = IamCheck(provisioned, _identity, enforce=recording() is None)
    _check.install()
    return _check


def recording() -> str | None:
    """`replace` or `add` when this session regenerates the matrix, else None."""
    value = os.environ.get(RECORD_ENV, "").strip().lower()
    if not value or value in ("0", "false", "no"):
        return None
    return "add" if value == "add" else "replace"


@contextmanager
def acting_as(name: str) -> Iterator[None]:
    """Calls made inside are the calls of functions/<name> (unchecked when IAM is not installed)."""
    from edgecron.data.aws import calling_function

    token = calling_function.set(_function_names.get(name, ""))
    try:
        yield
    finally:
        calling_function.reset(token)


def describe(denials: list[Denial]) -> str:
    lines = [f"AWS would refuse {len(denials)} call(s) (IAM, template.yaml):"]
    lines += [f"  AccessDenied: {d.function} may not {d.action} on {d.resource}" for d in denials]
    return "\n".join(lines)


def read_matrix() -> dict[str, list[str]]:
    if not MATRIX_PATH.is_file():
        return {}
    document: dict[str, list[str]] = json.loads(MATRIX_PATH.read_text(encoding="utf-8"))
    return document


def write_matrix(matrix: dict[str, list[str]]) -> None:
    MATRIX_PATH.parent.mkdir(parents=True, exist_ok=True)
    ordered = {function: sorted(set(entries)) for function, entries in sorted(matrix.items())}
    MATRIX_PATH.write_text(json.dumps(ordered, indent=2) + "\n", encoding="utf-8")


def session_problems(check: IamCheck, also_observed: dict[str, list[str]] | None = None) -> list[str]:
    """What fails the session: refused calls, and calls the matrix does not list (record mode writes
    the matrix instead). `also_observed`: matrix entries other processes of the session observed."""
    observed = observed_matrix(check)
    for function, entries in (also_observed or {}).items():
        observed[function] = sorted({*observed.get(function, []), *entries})
    mode = recording()
    if mode is not None:
        matrix = observed
        if mode == "add":
            matrix = {
                f: sorted(set(read_matrix().get(f, [])) | set(observed.get(f, [])))
                for f in {*read_matrix(), *observed}
            }
        write_matrix(matrix)
        return []
    problems = [describe(check.denials)] if check.denials else []
    listed = read_matrix()
    missing = [
        f"  {function}: {entry}"
        for function, entries in observed.items()
        for entry in entries
        if entry not in listed.get(function, [])
    ]
    if missing:
        problems.append(
            f"calls missing from {MATRIX_PATH.relative_to(ROOT)} (regenerate it: {REGENERATE}):\n"
            + "\n".join(missing)
        )
    return problems


def matrix_problems(check: IamCheck) -> list[str]:
    """The matrix against the template: listed calls it refuses, and grants nothing listed uses."""
    policies = {policy.logical_id: policy for policy in check.policies.values()}
    matrix = read_matrix()
    return denied_entries(policies, matrix, check.book) + unused_grants(policies, matrix, check.book)


def current() -> IamCheck | None:
    return _check
