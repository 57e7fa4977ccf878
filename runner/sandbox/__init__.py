"""Running submitted selectors in a sandbox: the /input-/output protocol and two backends.

`protocol` writes the read-only input tree and reads the scores back;
`base` is the one interface (`SelectorSandbox.run(RunSpec) -> RunResult`);
`local` runs a selector directory in Linux namespaces (no engine needed);
`docker_backend` runs an image through a Docker engine (production).
"""
