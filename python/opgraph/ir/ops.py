"""Seed 004's name for the IR's conversion and execution registries
(``opgraph.ir.registry``): ``from opgraph.ir.ops import register_op``."""

from .registry import get_conversion_fn, get_execution_fn, register_conversion, register_executor, register_op

__all__ = ["get_conversion_fn", "get_execution_fn", "register_conversion", "register_executor", "register_op"]
