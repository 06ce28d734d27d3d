"""opgraph.cpp_extension's ``load`` and ``load_inline`` for PyTorch users:
the package is built and loaded as there, and its ops are registered with
torch.library at once, so that they are ``torch.ops.<ns>.<op>`` afterwards,
as after ``torch.utils.cpp_extension.load(..., is_python_module=False)``.
Both return the package's CustomOpLibrary."""

from .. import cpp_extension as _package_builds
from .library import CustomOpLibrary


def load(name, sources, **options) -> CustomOpLibrary:
    """opgraph.cpp_extension.load(name, sources, **options), then registered."""
    return CustomOpLibrary(_package_builds.load(name, sources, **options))


def load_inline(name, cpp_sources, **options) -> CustomOpLibrary:
    """opgraph.cpp_extension.load_inline(name, cpp_sources, **options), then registered."""
    return CustomOpLibrary(_package_builds.load_inline(name, cpp_sources, **options))
