"""``NodeInfo`` where the extension guide imports it from
(``from opgraph.ir.analyzer import NodeInfo``): what a conversion function
registered with ``opgraph.ir.ops.register_op`` is given about an FX node."""

from .conversion import NodeInfo

__all__ = ["NodeInfo"]
