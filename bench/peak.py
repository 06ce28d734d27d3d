"""This machine's float32 FMA peak per core and its memory bandwidth, at 1
and 2 threads, the ceilings bench/models.py holds its achieved GFLOP/s to.

Measured by tools/peak/peak.cpp (fused multiply-adds on independent AVX-512
accumulators, AVX2 where the CPU lacks AVX-512; STREAM's triad on arrays far
larger than the caches; a read-only sum of such an array, the stream a
decode step's weights make, which bench/generate.py holds decoding to), which this module compiles into build/peak with the
C++ compiler opgraph's op packages are built with ($CXX, else c++), again
whenever the source is newer than the program. The per-core FMA peak counts
each thread's CPU time, so it holds on a shared machine; the figures per wall
second (FMA of all threads, triad) read lower there: measure those on a
quiet machine.

    python bench/peak.py [--threads 1 2]
"""

import argparse
import functools
import json
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tools" / "peak" / "peak.cpp"
PROGRAM = ROOT / "build" / "peak" / "peak"


@dataclass
class Peak:
    isa: str  # the vector instructions the FMA loop used: "avx512" or "avx2"
    threads: int
    fma_gflops_per_core: float  # per CPU second of a thread: what a core does, however shared the machine
    fma_gflops: float  # all threads together, per wall second
    triad_gbs: float  # all threads together, per wall second
    read_gbs: float  # a read-only stream (a decode's weights), all threads together, per wall second


def _program():
    """The peak program, compiled first where it is missing or older than its source."""
    if not PROGRAM.exists() or PROGRAM.stat().st_mtime < SOURCE.stat().st_mtime:
        PROGRAM.parent.mkdir(parents=True, exist_ok=True)
        # -O2 and no -march: each loop names its instruction set itself, chosen when it runs.
        subprocess.run(
            [
                os.environ.get("CXX", "c++"),
                "-std=c++20",
                "-O2",
                "-Wall",
                "-Wextra",
                "-pthread",
                str(SOURCE),
                "-o",
                str(PROGRAM),
            ],
            check=True,
        )
    return PROGRAM


# The instruction sets a CPU's speed depends on, as /proc/cpuinfo names them.
ISA_FLAGS = ["avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8"]


def cpu_description():
    """The CPU's vendor and model, and the instruction sets of ISA_FLAGS it has,
    from /proc/cpuinfo ("Intel Xeon (family 6, model 143; avx2 fma avx512f ...)")."""
    fields = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
            if not line.strip():
                break
    except OSError:
        return platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    vendor = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(fields.get("vendor_id"), fields.get("vendor_id"))
    return (
        f"{vendor} {fields.get('model name', '?')} (family {fields.get('cpu family', '?')}, model "
        f"{fields.get('model', '?')}; {' '.join(f for f in ISA_FLAGS if f in flags)})"
    )


@functools.cache
def measure_peak(threads):
    """The Peak of this machine at ``threads`` threads (measured once per process; about a second)."""
    result = subprocess.run([str(_program()), str(threads)], capture_output=True, text=True, check=True)
    return Peak(**json.loads(result.stdout))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print(cpu_description())
    print(
        f"{'threads':>7} {'isa':>7} {'FMA GFLOP/s per core':>21} {'all threads':>12} {'triad GB/s':>11} "
        f"{'read GB/s':>10}"
    )
    for threads in args.threads:
        peak = measure_peak(threads)
        print(
            f"{threads:>7} {peak.isa:>7} {peak.fma_gflops_per_core:>21.1f} {peak.fma_gflops:>12.1f} "
            f"{peak.triad_gbs:>11.1f} {peak.read_gbs:>10.1f}"
        )


if __name__ == "__main__":
    main()
