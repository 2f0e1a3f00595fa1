"""The queue consumers' process, seen from the stack: a start that fails says why and leaves no process."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgecron_cli.local.consumers_process import ConsumersProcess, Setup
from edgecron_cli.local.moto_process import MotoProcess
from edgecron_cli.local.provision import Provisioned
from edgecron_cli.local.template import load_template

ROOT = Path(__file__).resolve().parents[2]


def test_a_consumers_process_that_cannot_start_says_why_and_leaves_no_process(
    moto: MotoProcess, tmp_path: Path
) -> None:
    template = load_template(ROOT / "template.yaml")
    unprovisioned = Provisioned(template=template, name_prefix="never-provisioned-")  # no table, no queue
    exits: list[int] = []
    consumers = ConsumersProcess(on_exit=exits.append)
    setup = Setup(
        provisioned=unprovisioned,
        root=ROOT,
        environment={},
        moto_socket=moto.socket_path,
        moto_endpoint=moto.endpoint_url,
        concurrency=1,
        denials_path=tmp_path / "denials.jsonl",
        verbose=False,
    )
    with pytest.raises(RuntimeError, match=r"the queue consumers could not start: !Ref AppsTable"):
        consumers.start(setup)
    assert consumers.pid is not None
    assert not Path(f"/proc/{consumers.pid}").exists() or _zombie(consumers.pid)
    assert exits == []  # a start that failed is not an unexpected exit


def _zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
