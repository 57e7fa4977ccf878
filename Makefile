# The two commands of the README: `make serve` and `make test`.
# Each installs what it needs first (Debian packages, .venv, the project).

.PHONY: serve test bootstrap bootstrap-dev

serve:
	scripts/bootstrap.sh sim
	.venv/bin/expaudit serve

test:
	scripts/bootstrap.sh dev,sim,embed,policies
	scripts/run_tests.sh

bootstrap:
	scripts/bootstrap.sh sim

bootstrap-dev:
	scripts/bootstrap.sh dev,sim,embed,policies
