"""The one machine identity (``provenance.Machine``): the key bench files record, the fields the gate
compares, and the slug that names asv's machine and a GPU run's results folder all come from it."""

from __future__ import annotations

from wkvbench.gate.inputs import identity_of
from wkvbench.perf.bench import identity, machine_slug
from wkvbench.results.provenance import Machine

H100 = {"gpu": {"name": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "cuda": "13.0"},
        "versions": {"torch": "2.11.0", "triton": "3.6.0"}, "machine": {"cpu": "Intel(R) Xeon(R)"}}


def test_key_fields_and_slug_of_a_gpu_box():
    m = Machine.of(H100)
    key = "NVIDIA H100 80GB HBM3|driver 580.159.04|cuda 13.0|torch 2.11.0|triton 3.6.0"
    slug = "NVIDIA-H100-80GB-HBM3-drv580.159.04-cuda13.0-torch2.11.0-triton3.6.0"
    assert identity(H100) == m.key() == key
    assert machine_slug(H100) == m.slug() == slug
    assert identity_of(H100) == m.fields() == {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04",
                                               "cuda": "13.0", "torch": "2.11.0", "triton": "3.6.0"}


def test_a_recorded_key_is_read_back_and_wins_over_the_rest():
    m = Machine.of(H100)
    assert Machine.parse(m.key()) == m
    other = {**H100, "gpu": {"name": "NVIDIA H200"}, "identity": m.key()}
    assert Machine.of(other) == m  # a bench file's recorded identity is what it was measured on


def test_without_a_gpu():
    m = Machine.of({"gpu": None, "machine": {"cpu": "AMD EPYC"}, "versions": {"torch": "2.13.0"}})
    assert m.gpu == "cpu: AMD EPYC" and m.driver == "-" and m.triton == "-"
    assert m.slug() == "cpu-drv-cuda-torch2.13.0-triton"
