"""Conversion and execution registries for ops the defaults do not cover."""

from .registry import get_conversion_fn, get_execution_fn, register_executor, register_op

__all__ = ["get_conversion_fn", "get_execution_fn", "register_executor", "register_op"]
