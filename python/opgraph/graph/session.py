"""``InferenceSession``: runs built graphs on opgraph's C++ Session, shaped
like MAX's ``InferenceSession(devices=[CPU()]).load(graph).execute(...)``."""

from .. import _C, cuda
from .._C import Error
from ..package import load_package
from .builder import GraphBuilder
from .types import DeviceRef


def CPU(id=0):  # noqa: N802 (MAX's spelling)
    return DeviceRef.CPU(id)


def Accelerator(id=0):  # noqa: N802 (MAX's spelling)
    """The GPU ``id`` (a CUDA device)."""
    return DeviceRef.GPU(id)


class Model:
    """A loaded graph: ``execute(*arrays)`` returns the outputs, as NumPy
    arrays for host inputs (on a GPU too: they are copied in and out)."""

    def __init__(self, session):
        self.session = session

    @property
    def input_metadata(self):
        return self.session.inputs

    @property
    def output_metadata(self):
        return self.session.outputs

    def execute(self, *inputs):
        return self.session.run(*inputs)

    __call__ = execute


class InferenceSession:
    """``InferenceSession(devices=[CPU()], custom_extensions=[...])``: the
    custom extensions (package locations as opgraph.load_package takes them)
    are loaded first, so that graphs and .opg files naming their ops load."""

    def __init__(self, devices=None, num_threads=None, custom_extensions=()):
        devices = list(devices or [CPU()])
        for device in devices:
            if not isinstance(device, DeviceRef):
                raise Error(f"InferenceSession: devices: expected DeviceRef.CPU() or DeviceRef.GPU(), got {device!r}")
        # Graphs run on the first device given, as MAX places them.
        self.device = devices[0]
        if self.device.kind == "gpu" and not cuda.is_available():
            raise Error(f"InferenceSession: {self.device!r} is not available: {cuda.unavailable_reason()}")
        self.num_threads = num_threads
        self.extensions = [load_package(path, "InferenceSession: custom_extensions") for path in custom_extensions]

    def load(self, graph, weights_registry=None):
        """A Model for a Graph built in Python, an opgraph.Graph (with
        ``weights_registry``: name -> array) or an .opg path."""
        options = dict(threads=self.num_threads, device=self.device.runtime_device())
        if isinstance(graph, GraphBuilder):
            return Model(_C.Session(graph.to_graph(), weights=graph.constants, **options))
        if isinstance(graph, _C.Graph):
            return Model(_C.Session(graph, weights=weights_registry or {}, **options))
        return Model(_C.Session(graph, **options))
