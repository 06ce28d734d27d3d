"""How every bench program times its calls: interleaved rounds, the median
over all of them, and the CPU time the process spent per second of them.

`interleaved` runs the functions to compare in rounds; in each round each
function runs a block of calls in a row (a model served call after call, its
weights warm in the caches and its own threads, spinning or asleep between
calls as its library chooses, not another library's), so that all see the
same load from whatever else runs on the machine. A function's figure is the
median of all its timed calls over all rounds. Over the same timed calls it
also sums the process's CPU time (`time.process_time`: every thread of the
process, including threads that spin while idle) and the wall time; their
ratio says how many cores the call kept busy, which `check_threads` holds
against the thread count it was given. Where the machine says (Linux'
/proc/stat), it also gives how many cores other processes (and, in a virtual
machine, the hypervisor's other guests) kept busy meanwhile: on a shared
machine they take cores from the timed calls, which then read slower and
keep fewer cores busy than they were given.
"""

import gc
import os
import statistics
import time
from dataclasses import dataclass

# The shortest stretch one sample times: a call shorter than this is repeated
# within the sample, so that the clock's resolution and its own cost (tens of
# nanoseconds) stay small against what is timed.
MIN_SAMPLE = 20e-6
# A call this long or longer runs no untimed call before its blocks: reloading
# its weights into the caches is a small part of it, and the extra call would
# double a slow model's time for nothing.
REWARM_BELOW = 0.1


@dataclass
class Timing:
    seconds: float  # median seconds per call over all rounds' calls
    cpu_per_wall: float  # process CPU seconds per wall second over the timed calls
    calls: int  # timed calls, all rounds together
    others_per_wall: float | None  # CPU seconds of the rest of the machine per wall second; None where unknown


def machine_busy_seconds():
    """The CPU seconds every process of the machine has run since it booted,
    stolen time included (Linux' /proc/stat, in clock ticks), or None where
    there is no /proc/stat."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()[1:9]
    except OSError:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, fields)
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def interleaved(functions, rounds=5, budget=1.0, settle=0.02):
    """A Timing for each of ``functions`` (callables taking no arguments),
    from ``rounds`` interleaved rounds filling about ``budget`` seconds per
    function (at least one timed call per round). Before each block the
    clock waits ``settle`` seconds, so that threads the previous function
    left spinning have gone to sleep and neither count towards this one's
    CPU time nor take its cores, and a function faster than REWARM_BELOW
    runs once untimed, to bring its weights back into the caches."""
    once = []
    for fn in functions:
        fn()  # first calls compile, allocate and load weights
        start = time.perf_counter()
        fn()
        once.append(max(time.perf_counter() - start, 1e-9))
    inner = [max(1, int(MIN_SAMPLE / t)) for t in once]
    samples_per_block = [max(1, int(budget / rounds / (t * k))) for t, k in zip(once, inner)]
    samples = [[] for _ in functions]
    cpu, wall, machine = ([0.0] * len(functions) for _ in range(3))
    known = machine_busy_seconds() is not None
    # A collection of torch's millions of objects, started by whichever call
    # allocates at the wrong time, would be timed as that call's (timeit does the same).
    gc.disable()
    try:
        for _ in range(rounds):
            for k, fn in enumerate(functions):
                time.sleep(settle)
                if once[k] < REWARM_BELOW:
                    fn()
                block_machine = machine_busy_seconds()
                block_cpu, block_start = time.process_time(), time.perf_counter()
                for _ in range(samples_per_block[k]):
                    start = time.perf_counter()
                    for _ in range(inner[k]):
                        fn()
                    samples[k].append((time.perf_counter() - start) / inner[k])
                wall[k] += time.perf_counter() - block_start
                cpu[k] += time.process_time() - block_cpu
                if known:
                    machine[k] += machine_busy_seconds() - block_machine
    finally:
        gc.enable()
    # The machine's count moves in clock ticks (10 ms): over blocks of a
    # fraction of a second, others' load is good to a tenth of a core or so.
    return [
        Timing(statistics.median(s), c / w, len(s) * n, max(0.0, m - c) / w if known else None)
        for s, c, w, n, m in zip(samples, cpu, wall, inner, machine)
    ]


def seconds_per_call(fn, budget=0.3, rounds=3):
    """The median seconds per call of ``fn`` timed alone (a row with nothing to interleave it with)."""
    return interleaved([fn], rounds=rounds, budget=budget, settle=0.0)[0].seconds


# The bounds on cpu/wall that `check_threads` accepts for N threads.
# Above: N busy threads give N whatever they do, spinning included, so more
# than N means threads beyond those asked for (a second pool, a caller that
# spins while its workers run); the margin covers the clock's granularity and
# the process's own helper threads. Below: spinning only raises the ratio, but
# a graph's serial stretches (Python between calls, ops too small to split,
# the gaps where a pool's threads sleep) legitimately leave cores idle, so
# only a path that kept fewer than 60% of its cores busy is flagged, and only
# where every library splits the work (real-size models: a small model's ops
# are rightly run on one thread); at N = 1 that is a call that waited on
# something other than the CPU.
OVER_MARGIN = 0.25
UNDER_FRACTION = 0.6


def check_threads(cpu_per_wall, threads, parallel_work=True):
    """ "" when ``cpu_per_wall`` fits ``threads`` threads, else a flag saying
    which way it is off; too few cores busy counts only for ``parallel_work``."""
    if cpu_per_wall > threads + OVER_MARGIN:
        return "more cores busy than threads"
    if parallel_work and cpu_per_wall < UNDER_FRACTION * threads:
        return "fewer cores busy than threads"
    return ""


def usage_columns(times, threads, row, flags):
    """Each path's cpu/wall over its timed calls (``times``: path -> Timing),
    marked "!" where check_threads flags it; each flag joins ``flags``,
    named by ``row`` ("bert-base batch 1, 2 thread(s)") and the path."""
    columns = []
    for path, timing in times.items():
        flag = check_threads(timing.cpu_per_wall, threads)
        columns.append(f"{timing.cpu_per_wall:4.2f}{'!' if flag else ' '}")
        if flag:
            flags.append(f"  {row}, {path}: {flag}")
    return " ".join(columns)


def print_thread_flags(flags):
    """The flags usage_columns gathered, under a heading, where there are any."""
    if flags:
        print("\nthread check (cpu/wall outside the bounds of bench/timing.py's check_threads):")
        print("\n".join(flags))
