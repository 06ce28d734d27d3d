"""CUDA from Python: whether opgraph can run on a GPU here, and the stream its
kernels run on.

Kernels for a device run on the calling thread's current stream for that
device, the legacy default stream unless :func:`stream` sets another. The
PyTorch bridge runs each call on PyTorch's current stream.
"""

import contextlib

from ._C import (
    cuda_current_stream,
    cuda_device_count,
    cuda_is_available,
    cuda_set_stream,
    cuda_synchronize,
    cuda_unavailable_reason,
)


def is_available() -> bool:
    """Whether CUDA kernels can run: the backend is built and loads, and the driver reports a device."""
    return cuda_is_available()


def unavailable_reason() -> str:
    """Why :func:`is_available` is False (empty when it is True)."""
    return cuda_unavailable_reason()


def device_count() -> int:
    return cuda_device_count()


def synchronize(device: int = 0) -> None:
    """Waits for the work opgraph queued on the device's current stream."""
    cuda_synchronize(device)


def current_stream(device: int = 0) -> int:
    """The calling thread's stream for ``device``, as an integer ``cudaStream_t`` (0: legacy default)."""
    return cuda_current_stream(device)


def _stream_pointer(value) -> int:
    # torch.cuda.Stream has .cuda_stream, cupy.cuda.Stream has .ptr; an int is the pointer itself.
    for attribute in ("cuda_stream", "ptr"):
        if hasattr(value, attribute):
            return int(getattr(value, attribute))
    return int(value)


@contextlib.contextmanager
def stream(value, device: int = 0):
    """Runs opgraph's kernels on ``value`` (a ``torch.cuda.Stream``, a
    ``cupy.cuda.Stream`` or an integer ``cudaStream_t``) for the calling thread
    while the block runs."""
    previous = cuda_current_stream(device)
    cuda_set_stream(device, _stream_pointer(value))
    try:
        yield
    finally:
        cuda_set_stream(device, previous)
