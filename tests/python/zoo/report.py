"""Each zoo model's largest absolute error on the Session against PyTorch, per batch size.

.venv/bin/python tests/python/zoo/report.py [name ...]
"""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from zoo import ZOO  # noqa: E402
from zoo.run import max_error, run_on_session  # noqa: E402


def main(names):
    print(f"{'model':<20} {'tolerance':>9}  max abs error per batch")
    with tempfile.TemporaryDirectory() as folder:
        for entry in ZOO:
            if names and entry.name not in names:
                continue
            try:
                errors = ", ".join(
                    f"batch {batch}: {max_error(actual, expected):.2e}"
                    for batch, actual, expected in run_on_session(entry, Path(folder))
                )
            except Exception as e:  # a report lists every model, failed ones included
                errors = f"FAILED {type(e).__name__}: {str(e).splitlines()[0][:200]}"
            print(f"{entry.name:<20} {entry.tolerance:>9.0e}  {errors}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
