"""The program part of a readout audit job: build the readout /input, run the program, read its features.

The readout twin of `service.selectors.run.run_container`: the same sandbox, limits,
run record (`selector/run.json`, shown to the owner) and faults. A program that crashes,
hangs, runs out of a limit or writes features the upload reader refuses is the
submitter's (`SelectorFailed`); a sandbox that could not be built is the service's
(`SandboxUnavailable`, retried).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from leaderboard.readout.inputs import Representation
from sandbox.base import Limits, RunSpec, RunStatus
from sandbox.execute import run_readout_program
from service.catalog import ReadoutCatalog, prepare_readout_setting_input
from service.selectors.run import SandboxUnavailable, SelectorFailed, provenance, run_tree, selector_image
from service.submissions import Manifest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProgramOutcome:
    """The checked features of a readout program and the report's record of what ran."""

    features: Representation
    provenance: dict


def run_readout_container(ctx, sid: str, manifest: Manifest, catalog: ReadoutCatalog) -> ProgramOutcome:
    """Run submission `sid`'s program on its readout setting and return its checked features.

    Raises `SelectorFailed` when the program is at fault, `SandboxUnavailable` when the
    worker is.
    """
    if ctx.sandbox is None:
        raise SandboxUnavailable("this worker has no selector sandbox (EXPAUDIT_SANDBOX=none)")
    setting_id = manifest.settings[0]
    limits = ctx.selector_limits or Limits()
    observations = catalog.observations(setting_id)
    with run_tree(ctx.sandbox) as work:
        image = selector_image(ctx, manifest, work)  # first: a bad archive needs no /input
        prepare_readout_setting_input(catalog, setting_id, work / "input")
        output = work / "output"
        output.mkdir()
        spec = RunSpec(image=image, input_dir=work / "input", output_dir=output, limits=limits)
        run = run_readout_program(ctx.sandbox, spec, observations, manifest.name)
    result = run.result
    ctx.repo.write_selector_run(sid, {**result.to_dict(), "setting_id": setting_id,
                                      "backend": manifest.selector_backend})
    log.info("readout program of %s: %s (%s)", sid, result.status.value, result.reason)
    if result.status is RunStatus.SETUP_FAILED:
        raise SandboxUnavailable(f"the sandbox could not run the program: {result.reason}")
    if run.features is None:
        raise SelectorFailed(f"program {result.status.value}: {result.reason}")
    return ProgramOutcome(run.features, provenance(manifest, result))
