"""python/opgraph/_C.pyi, the committed type stub of opgraph._C, is what
nanobind's stubgen writes for the installed module: a change to the bindings
(python/src/) that is not in the stub fails here, with the difference."""

import difflib
import subprocess
import sys

from conftest import ROOT

COMMITTED = ROOT / "python" / "opgraph" / "_C.pyi"


def test_committed_stub_matches_the_module(tmp_path):
    generated = tmp_path / "_C.pyi"
    subprocess.run(
        [sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "opgraph._C", "-o", str(generated)],
        check=True,
        cwd=tmp_path,  # the installed package, not the source tree's python/opgraph
    )
    diff = "".join(
        difflib.unified_diff(
            COMMITTED.read_text().splitlines(keepends=True),
            generated.read_text().splitlines(keepends=True),
            fromfile="python/opgraph/_C.pyi (committed)",
            tofile="stubgen -m opgraph._C (installed)",
        )
    )
    assert not diff, f"python/opgraph/_C.pyi is out of date; `make stubs` updates it:\n{diff}"
