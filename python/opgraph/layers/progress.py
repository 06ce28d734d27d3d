"""A one-line training progress bar: ``12/40 [======>.......] loss: 0.31 - accuracy: 0.91``.

On a terminal the line is redrawn in place; elsewhere (logs, CI) only the
finished line is printed, so output stays one line per epoch.
"""

import sys
import time


class ProgressBar:
    def __init__(self, total, width=30, file=None):
        self.total = total
        self.width = width
        self.file = file or sys.stdout
        self.start = time.perf_counter()
        self.live = self.file.isatty()

    def update(self, done, **metrics):
        if self.live or done == self.total:
            end = "\n" if done == self.total else ""
            print("\r" + self._line(done, metrics), end=end, file=self.file, flush=True)

    def _line(self, done, metrics):
        filled = self.width * done // max(self.total, 1)
        arrow = ">" if filled < self.width else ""
        bar = "=" * filled + arrow + "." * (self.width - filled - len(arrow))
        elapsed = time.perf_counter() - self.start
        values = " - ".join(f"{name}: {value:.4f}" for name, value in metrics.items())
        return f"{done}/{self.total} [{bar}] {elapsed:.1f}s - {values}"
