"""Value types of the graph builder: ``DType``, ``DeviceRef`` and ``TensorType``."""

import enum

import numpy as np

from .. import dtypes
from .._C import Error


class _DTypeBase(enum.Enum):
    @classmethod
    def of(cls, value):
        """The DType of a DType, a name, a NumPy or a torch dtype."""
        return value if isinstance(value, cls) else cls(dtypes.name_of(value))

    def to_numpy(self):
        return dtypes.to_numpy(self.value)


# Element types as MAX's DType enum spells them (DType.float32), one per
# opgraph dtype: the members come from opgraph.dtypes, the one table.
DType = _DTypeBase("DType", [(name, name) for name in dtypes.NAMES], module=__name__)


class DeviceRef:
    """Where a value lives and a graph runs: ``DeviceRef.CPU()`` or
    ``DeviceRef.GPU(id)`` (a CUDA device; ``InferenceSession`` checks that it is there)."""

    _KINDS = ("cpu", "gpu")

    def __init__(self, kind="cpu", id=0):
        if kind not in self._KINDS:
            raise Error(f"DeviceRef: kind: expected 'cpu' or 'gpu', got {kind!r}")
        if not isinstance(id, int) or id < 0:
            raise Error(f"DeviceRef: id: expected an int >= 0, got {id!r}")
        self.kind, self.id = kind, id

    @classmethod
    def CPU(cls, id=0):  # noqa: N802 (MAX's spelling)
        return cls("cpu", id)

    @classmethod
    def GPU(cls, id=0):  # noqa: N802 (MAX's spelling)
        return cls("gpu", id)

    def runtime_device(self):
        """The device string the C++ Session takes: "cpu" or "cuda:N"."""
        return "cpu" if self.kind == "cpu" else f"cuda:{self.id}"

    def __eq__(self, other):
        return isinstance(other, DeviceRef) and (self.kind, self.id) == (other.kind, other.id)

    def __hash__(self):
        return hash((self.kind, self.id))

    def __repr__(self):
        return f"DeviceRef.{self.kind.upper()}({self.id})"


def _dimension(dim):
    if isinstance(dim, str) and dim.isidentifier():
        return dim
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) and dim >= 0:
        return int(dim)
    raise Error(f"TensorType: a dimension is a size >= 0 or a symbolic name such as 'N', got {dim!r}")


class TensorType:
    """dtype, shape (ints and symbolic names) and device of a graph value."""

    def __init__(self, dtype, shape, device=None):
        self.dtype = DType.of(dtype)
        self.shape = [_dimension(d) for d in shape]
        self.device = device or DeviceRef.CPU()

    @property
    def rank(self):
        return len(self.shape)

    def __eq__(self, other):
        return isinstance(other, TensorType) and (self.dtype, self.shape) == (other.dtype, other.shape)

    def __repr__(self):
        return f"TensorType({self.dtype.value}, {self.shape})"
