"""Seed 002, appendix A (JIT compilation with load): the seed's code with
``torch.utils.cpp_extension`` changed to ``opgraph.torch.cpp_extension``
(which builds an opgraph package and registers its ops with torch.library,
as torch's leaves a TORCH_LIBRARY extension's ops in torch.ops). ``op.cpp``
is the warp_perspective package's source (a link to examples/
warp_perspective/warp_perspective.cpp); run from this folder, with OpenCV's
headers on the compiler's path (CPATH), as the seed's build needs them too.
"""
import torch

import opgraph.torch.cpp_extension

opgraph.torch.cpp_extension.load(
    name="warp_perspective",
    sources=["op.cpp"],
    extra_ldflags=["-lopencv_core", "-lopencv_imgproc"],
    is_python_module=False,
    verbose=True
)

print(torch.ops.my_ops.warp_perspective)
print(torch.ops.my_ops.warp_perspective(torch.rand(5, 7), torch.eye(3)).shape)
