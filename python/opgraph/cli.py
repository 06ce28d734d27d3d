"""Where the `opgraph` command line tool installed with this package is."""

import shutil
import sys
from pathlib import Path

from ._C import Error


def executable() -> Path:
    """The `opgraph` executable installed with this package: in the scripts
    folder of its environment (a venv's bin/, beside sys.executable), in
    DIR/bin for `pip install --target DIR`, or else on PATH."""
    package = Path(__file__).resolve().parent
    for candidate in (package.parent / "bin" / "opgraph", Path(sys.executable).with_name("opgraph")):
        if candidate.is_file():
            return candidate
    found = shutil.which("opgraph")
    if found is None:
        raise Error("the opgraph executable is neither beside the opgraph package nor on PATH")
    return Path(found)
