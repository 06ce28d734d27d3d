"""Seed 004's names for the IR's conversion and execution registries
(``opgraph.ir.registry``): ``from opgraph.ir.ops import register_op``, and
``opgraph.ir.ops.registry``, which is that same module (its debugging tips
import ``get_conversion_fn`` from there)."""

import sys

from .. import registry
from ..registry import get_conversion_fn, get_execution_fn, register_conversion, register_executor, register_op

sys.modules[f"{__name__}.registry"] = registry

__all__ = [
    "get_conversion_fn",
    "get_execution_fn",
    "register_conversion",
    "register_executor",
    "register_op",
    "registry",
]
