"""MAX's name for the graph builder's ops (``opgraph.graph.nodes``):
``from opgraph.graph import ops; ops.custom(...)``."""

from .nodes import *  # noqa: F403
from .nodes import __all__  # noqa: F401
