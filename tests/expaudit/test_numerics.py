"""The OpenBLAS and torch CPU kernels are pinned before numpy and torch load, an explicit choice
wins, and the kernels are reported."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from expaudit.numerics import (BLAS_KERNEL, TORCH_CPU_CAPABILITY, blas_kernel, cpu_has_avx2, kernel_env,
                               pin_kernels, torch_cpu_capability)

avx2_only = pytest.mark.skipif(not cpu_has_avx2(), reason="the pinned kernels need an x86-64 CPU with AVX2")


def test_no_pin_where_the_kernels_could_not_run(monkeypatch):
    from expaudit import numerics

    monkeypatch.setattr(numerics, "cpu_has_avx2", lambda: False)
    assert numerics.kernel_env() == {}
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    numerics.pin_kernels()
    assert "OPENBLAS_CORETYPE" not in os.environ


@avx2_only
def test_pin_sets_a_default_and_leaves_an_explicit_choice(monkeypatch):
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    pin_kernels()
    assert os.environ["OPENBLAS_CORETYPE"] == BLAS_KERNEL
    assert os.environ["ATEN_CPU_CAPABILITY"] == TORCH_CPU_CAPABILITY
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Sandybridge")
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    pin_kernels()
    assert os.environ["OPENBLAS_CORETYPE"] == "Sandybridge"
    assert os.environ["ATEN_CPU_CAPABILITY"] == "default"


def _kernel_in_fresh_python(code: str, env_extra: dict) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    return out.stdout.strip()


@avx2_only
def test_importing_a_package_of_the_project_pins_the_kernel_before_numpy_loads():
    code = ("import simulator.stack_scenes, numpy; from expaudit.numerics import blas_kernel; "
            "print(blas_kernel())")
    assert _kernel_in_fresh_python(code, {}) == BLAS_KERNEL


@avx2_only
def test_an_explicit_kernel_is_what_numpy_loads():
    code = "import benchmark_data, numpy; from expaudit.numerics import blas_kernel; print(blas_kernel())"
    assert _kernel_in_fresh_python(code, {"OPENBLAS_CORETYPE": "Sandybridge"}) == "Sandybridge"


@avx2_only
def test_the_test_process_runs_the_pinned_kernel_and_cells_record_it():
    import json

    from simulator.provenance import BLAS_KERNEL_KEY, package_versions

    assert blas_kernel() == BLAS_KERNEL
    assert json.loads(package_versions())[BLAS_KERNEL_KEY] == BLAS_KERNEL


@avx2_only
def test_importing_a_package_of_the_project_pins_torch_before_it_loads():
    assert kernel_env()["ATEN_CPU_CAPABILITY"] == TORCH_CPU_CAPABILITY
    code = "import simulator, torch; from expaudit.numerics import torch_cpu_capability; print(torch_cpu_capability())"
    assert _kernel_in_fresh_python(code, {}) == TORCH_CPU_CAPABILITY.upper()
    assert _kernel_in_fresh_python(code, {"ATEN_CPU_CAPABILITY": "default"}) == "DEFAULT"


@avx2_only
def test_policy_cells_record_the_torch_kernels():
    import json

    from simulator.provenance import TORCH_KERNEL_KEY, policy_package_versions

    assert torch_cpu_capability() == TORCH_CPU_CAPABILITY.upper()
    assert json.loads(policy_package_versions("cpu"))[TORCH_KERNEL_KEY] == TORCH_CPU_CAPABILITY.upper()


def test_policy_cells_record_the_cpu_they_ran_on():
    """Same flags, another CPU, another final state: the CPU is part of a policy cell's record."""
    import json

    from expaudit.numerics import cpu_model, cpu_vendor
    from simulator.provenance import CPU_KEY, policy_package_versions

    recorded = json.loads(policy_package_versions("cpu"))[CPU_KEY]
    assert recorded == cpu_model()
    if cpu_vendor():  # x86-64 Linux: "<vendor> family <f> model <m> (<name>)"
        assert recorded.startswith(f"{cpu_vendor()} family ") and " model " in recorded
