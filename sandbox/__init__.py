"""Running submitted selectors in a sandbox: the /input-/output protocol and two backends.

- `protocol`: writes the read-only /input tree, reads /output/scores.csv back;
- `base`: the one interface, `SelectorSandbox.run(RunSpec) -> RunResult`;
- `local`: runs a selector directory in Linux namespaces (no engine needed);
  `cgroups` bounds its runs as a whole, `workdir` cleans up after a killed worker;
- `docker_backend`: runs a container image through a Docker engine (production);
- `execute.run_selector`: run, then validate the scores (the job boundary);
- `defaults`: every limit, with its reason; `demo`: a synthetic /input tree;
- the command `expaudit selector run|demo-input|input` lives with the others, in `expaudit.cli`.

A frozen setting's /input tree is built by the service (`service.catalog.selector_input`),
which reads the frozen data; the sandbox itself needs only the audit engine.
See docs/selector_protocol.md.
"""
