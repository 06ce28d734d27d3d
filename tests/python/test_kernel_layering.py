"""The tiers of src/kernels, read from the #include lines of its sources.

From the bottom up: shape/ (geometry and argument checks any device
shares), cpu/util/ (the CPU kernels' helpers), the vendor glue cpu/onednn/
and cpu/mkl/, cpu/engines/ (products, convolutions, pooling), and cpu/ops/,
one file per op family; cpu/passes/, the graph passes that encode the CPU
kernels' rules, beside the ops. A file includes headers of its own tier or of tiers
below it, never above; an op family includes no other family's header, so
that what two families share lives in a tier below them. The CUDA kernels
share shape/ with the CPU ones and include nothing of cpu/.
"""

import re
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[2] / "src" / "kernels"

INCLUDE = re.compile(r'^\s*#\s*include\s+"(kernels/[^"]+)"', re.MULTILINE)

# Each tier, by its folder under src/kernels, and the folders it may
# include from. The top-level headers (define.h, activation.h, builtin.h)
# are the kernel API every tier builds on.
MAY_INCLUDE = {
    "shape": {"shape"},
    "cpu/util": {"shape", "cpu/util"},
    "cpu/onednn": {"shape", "cpu/util", "cpu/onednn"},
    "cpu/mkl": {"shape", "cpu/util", "cpu/onednn", "cpu/mkl"},
    "cpu/engines": {"shape", "cpu/util", "cpu/onednn", "cpu/mkl", "cpu/engines"},
    # ops/ may include ops/ only for the family's own header (checked below).
    "cpu/ops": {"shape", "cpu/util", "cpu/onednn", "cpu/mkl", "cpu/engines", "cpu/ops"},
    # The graph passes of the CPU kernels' rules: over the graph layer and the engines whose rules they share.
    "cpu/passes": {"shape", "cpu/util", "cpu/onednn", "cpu/mkl", "cpu/engines", "cpu/passes"},
    "cuda": {"shape", "cuda"},
}

SOURCE_SUFFIXES = {".h", ".cpp", ".cu", ".cuh"}


def tier_of(path: str) -> str | None:
    """The tier of a path relative to src/kernels ('cpu/ops/conv.cpp' -> 'cpu/ops')."""
    for tier in sorted(MAY_INCLUDE, key=len, reverse=True):
        if path.startswith(tier + "/"):
            return tier
    return None


def violations(sources: dict[str, str]) -> list[str]:
    """What breaks the tiers in `sources` (path relative to src/kernels -> text)."""
    found = []
    for path, text in sorted(sources.items()):
        tier = tier_of(path)
        if tier is None:
            continue
        for include in INCLUDE.findall(text):
            target = include.removeprefix("kernels/")
            if "/" not in target:  # define.h, activation.h, builtin.h
                continue
            target_tier = tier_of(target)
            if target_tier not in MAY_INCLUDE[tier]:
                found.append(
                    f"src/kernels/{path} includes {include}: {tier}/ may include only "
                    f"{', '.join(sorted(MAY_INCLUDE[tier]))} (and the top-level kernel headers)"
                )
            elif tier == "cpu/ops" and target_tier == "cpu/ops" and Path(target).stem != Path(path).stem:
                found.append(
                    f"src/kernels/{path} includes {include}: one op family includes another's "
                    "header; move what they share to util/, engines/ or shape/"
                )
    return found


def kernel_sources() -> dict[str, str]:
    return {
        path.relative_to(KERNELS).as_posix(): path.read_text()
        for path in KERNELS.rglob("*")
        if path.suffix in SOURCE_SUFFIXES
    }


def test_kernel_tiers():
    found = violations(kernel_sources())
    assert not found, "includes that break the kernel tiers:\n" + "\n".join(found)


def test_every_kernel_folder_is_a_tier():
    # A new folder has to say where it stands before anything can include it.
    folders = {
        path.parent.relative_to(KERNELS).as_posix() for path in KERNELS.rglob("*") if path.suffix in SOURCE_SUFFIXES
    }
    assert folders <= set(MAY_INCLUDE) | {".", "cpu", "samples"}, sorted(folders - set(MAY_INCLUDE))


def test_the_check_catches_each_kind_of_violation():
    broken = {
        "cpu/ops/random.cpp": '#include "kernels/cpu/ops/factory.h"\n',
        "cpu/util/rows.h": '#include "kernels/cpu/engines/product.h"\n',
        "cpu/engines/product.cpp": '#include "kernels/cpu/ops/matmul.h"\n',
        "cpu/onednn/onednn.h": '#include "kernels/cpu/engines/product.h"\n',
        "cuda/pool.cu": '#include "kernels/cpu/util/rows.h"\n',
        "shape/pool.h": '#include "kernels/cpu/util/parallel.h"\n',
    }
    found = violations(broken)
    assert len(found) == len(broken), found
    for path in broken:
        assert any(message.startswith(f"src/kernels/{path} includes ") for message in found), path
    fine = {
        "cpu/ops/conv.cpp": '#include "kernels/cpu/ops/conv.h"\n#include "kernels/define.h"\n',
        "cpu/engines/conv.cpp": '#include "kernels/cpu/onednn/onednn.h"\n#include "kernels/shape/conv.h"\n',
        "cuda/pool.cu": '#include "kernels/shape/pool.h"\n',
    }
    assert violations(fine) == []
