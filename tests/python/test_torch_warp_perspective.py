"""The warp_perspective example package (OpenCV's cv::warpPerspective) from
NumPy and PyTorch, against cv2 and a plain reference."""

import cv2
import numpy as np
import pytest
import torch

import opgraph
from opgraph.ops import call

# The package's OpenCV (Debian's) interpolates at 1/32-pixel steps; cv2 and
# the reference below interpolate exactly. On images with values in [0, 1]
# the two differ by at most about 2/32.
TOLERANCE = dict(rtol=0, atol=0.07)


@pytest.fixture(scope="module")
def ops(torch_examples):
    return torch_examples["warp_perspective"]


def reference(image, warp, height, width):
    """The definition: each output pixel samples the image bilinearly at the
    inverse homography of its coordinates; zero outside the image."""
    inverse = np.linalg.inv(warp.astype(np.float64))
    rows, cols = image.shape[:2]
    out = np.zeros((height, width) + image.shape[2:], np.float64)

    def pixel(r, c):
        return image[r, c] if 0 <= r < rows and 0 <= c < cols else 0.0

    for y in range(height):
        for x in range(width):
            u, v, w = inverse @ [x, y, 1.0]
            if w == 0:
                continue
            sx, sy = u / w, v / w
            c0, r0 = int(np.floor(sx)), int(np.floor(sy))
            fx, fy = sx - c0, sy - r0
            out[y, x] = (1 - fy) * ((1 - fx) * pixel(r0, c0) + fx * pixel(r0, c0 + 1)) + fy * (
                (1 - fx) * pixel(r0 + 1, c0) + fx * pixel(r0 + 1, c0 + 1)
            )
    return out.astype(np.float32)


def random_homography(rng, dtype=np.float64):
    warp = np.eye(3) + rng.normal(scale=0.1, size=(3, 3)) * [[1, 1, 10], [1, 1, 10], [0.01, 0.01, 0]]
    return warp.astype(dtype)


SHAPES = [
    ((1, 1), 1, 1),
    ((7, 11), 5, 13),
    ((13, 17), 13, 17),
    ((31, 29, 3), 23, 37),
    ((8, 9, 4), 8, 9),
    ((16, 5, 1), 3, 19),
]


@pytest.mark.parametrize("shape, height, width", SHAPES)
@pytest.mark.parametrize("warp_dtype", [np.float32, np.float64])
def test_matches_cv2_and_reference(warp_perspective_package, shape, height, width, warp_dtype):
    rng = np.random.default_rng(sum(shape) * 100 + height)
    image, warp = rng.random(shape, dtype=np.float32), random_homography(rng, warp_dtype)
    result = call("my_ops::warp_perspective", image, warp, height=height, width=width)
    assert result.dtype == np.float32 and result.shape == (height, width) + shape[2:]
    expected = cv2.warpPerspective(image, warp, (width, height))
    np.testing.assert_allclose(result, expected.reshape(result.shape), **TOLERANCE)
    np.testing.assert_allclose(result, reference(image, warp, height, width), **TOLERANCE)
    np.testing.assert_allclose(expected.reshape(result.shape), reference(image, warp, height, width), atol=1e-4)


def test_pixel_shifts_are_exact(warp_perspective_package):
    image = np.random.default_rng(0).random((9, 10), dtype=np.float32)
    shift = np.array([[1, 0, 2], [0, 1, -3], [0, 0, 1]], np.float32)
    result = call("my_ops::warp_perspective", image, shift, height=9, width=10)
    np.testing.assert_array_equal(result, cv2.warpPerspective(image, shift, (10, 9)))
    np.testing.assert_array_equal(result[:6, 2:], image[3:, :8])  # dst(x + 2, y - 3) = src(x, y)


def test_strided_image(warp_perspective_package):
    rng = np.random.default_rng(1)
    base, warp = rng.random((20, 30), dtype=np.float32), random_homography(rng)
    image = base[::2, ::3]
    np.testing.assert_allclose(
        call("my_ops::warp_perspective", image, warp, height=6, width=7),
        reference(np.ascontiguousarray(image), warp, 6, 7),
        **TOLERANCE,
    )


@pytest.mark.parametrize(
    "image, warp, attrs, message",
    [
        (
            np.ones((4, 4), np.float64),
            np.eye(3),
            dict(height=2, width=2),
            r"image: expected float32, got float64\[4, 4\]",
        ),
        (np.ones(4, np.float32), np.eye(3), dict(height=2, width=2), r"image: expected rank 2 .* got float32\[4\]"),
        (np.ones((4, 4, 5), np.float32), np.eye(3), dict(height=2, width=2), r"image: expected 1 to 4 channels"),
        (np.ones((0, 4), np.float32), np.eye(3), dict(height=2, width=2), r"image: expected at least one pixel"),
        (
            np.ones((4, 4), np.float32),
            np.eye(2),
            dict(height=2, width=2),
            r"warp: expected a 3x3 homography, got float64\[2, 2\]",
        ),
        (
            np.ones((4, 4), np.float32),
            np.eye(3, dtype=np.int32),
            dict(height=2, width=2),
            r"warp: expected float32 or float64, got int32\[3, 3\]",
        ),
        (np.ones((4, 4), np.float32), np.eye(3), dict(height=0, width=2), r"height: expected at least 1, got 0"),
    ],
)
def test_bad_input_is_a_clear_error(warp_perspective_package, image, warp, attrs, message):
    with pytest.raises(opgraph.Error, match=r"^my_ops::warp_perspective: " + message):
        call("my_ops::warp_perspective", image, warp, **attrs)


def test_eager_traced_scripted_and_compiled_agree(ops):
    rng = np.random.default_rng(2)
    image, warp = torch.from_numpy(rng.random((12, 14), dtype=np.float32)), torch.from_numpy(random_homography(rng))
    expected = torch.from_numpy(call("my_ops::warp_perspective", image, warp, height=10, width=9))

    def warp_image(image, warp):
        return torch.ops.my_ops.warp_perspective(image, warp, height=10, width=9)

    torch.testing.assert_close(warp_image(image, warp), expected, rtol=0, atol=0)
    torch.testing.assert_close(ops.warp_perspective(image, warp, height=10, width=9), expected, rtol=0, atol=0)
    out = torch.empty(10, 9)
    ops.warp_perspective[{"height": 10, "width": 9}](out, image, warp)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    traced = torch.jit.trace(warp_image, (image, warp))
    scripted = torch.jit.script(warp_image)
    compiled = torch.compile(warp_image, backend="aot_eager", fullgraph=True)
    for fn in (traced, scripted, compiled):
        torch.testing.assert_close(fn(image, warp), expected, rtol=0, atol=0)


def test_compiled_with_dynamic_image_sizes_does_not_recompile(ops):
    from torch._dynamo.testing import CompileCounter

    counter = CompileCounter()
    fn = torch.compile(
        lambda image, warp: ops.warp_perspective(image, warp, height=6, width=8) * 2,
        backend=counter,
        dynamic=True,
        fullgraph=True,
    )
    warp = torch.eye(3)
    for rows, cols in [(5, 7), (9, 4), (11, 13)]:
        image = torch.rand(rows, cols)
        torch.testing.assert_close(fn(image, warp), 2 * ops.warp_perspective(image, warp, height=6, width=8))
    assert counter.frame_count == 1


def test_not_differentiable_says_so(ops):
    image = torch.rand(4, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="my_ops::warp_perspective: is not differentiable"):
        ops.warp_perspective(image, torch.eye(3), height=4, width=4).sum().backward()


def test_in_a_graph_saved_and_run_by_a_session(warp_perspective_package, tmp_path):
    from opgraph.graph import DType, Graph, InferenceSession, TensorType
    from opgraph.graph import ops as graph_ops

    rng = np.random.default_rng(3)
    image = rng.random((20, 24, 3), dtype=np.float32)
    warp = np.array([[1.0, 0.1, -2.0], [0.05, 0.9, 1.5], [0.0005, 0.0002, 1.0]], np.float32)
    with Graph(
        "warp",
        input_types=[TensorType(DType.float32, [20, 24, 3]), TensorType(DType.float32, [3, 3])],
        custom_extensions=[warp_perspective_package],
    ) as graph:
        x, m = graph.inputs
        warped = graph_ops.custom(
            name="warp_perspective",
            values=[x, m],
            out_types=[TensorType(DType.float32, [16, 18, 3])],
            parameters={"height": 16, "width": 18},
        )[0]
        graph.output(graph_ops.relu(warped))
    expected = call("my_ops::warp_perspective", image, warp, height=16, width=18)
    np.testing.assert_array_equal(InferenceSession().load(graph).execute(image, warp)[0], expected)
    graph.save(tmp_path / "warp.opg")
    session = opgraph.Session(tmp_path / "warp.opg")
    np.testing.assert_array_equal(session.run(image, warp)[0], expected)
    np.testing.assert_allclose(expected, cv2.warpPerspective(image, warp, (18, 16)), atol=0.07)


def test_two_argument_call_gives_the_tutorials_8x8_output(ops):
    """PyTorch's TorchScript tutorial calls torch.ops.my_ops.warp_perspective(image, warp)."""
    rng = np.random.default_rng(4)
    image, warp = rng.random((32, 32), dtype=np.float32), random_homography(rng, np.float32)
    expected = call("my_ops::warp_perspective", image, warp, height=8, width=8)
    np.testing.assert_array_equal(call("my_ops::warp_perspective", image, warp), expected)
    result = torch.ops.my_ops.warp_perspective(torch.from_numpy(image), torch.from_numpy(warp))
    assert result.shape == (8, 8)
    np.testing.assert_array_equal(result.numpy(), expected)
    assert str(opgraph.op_schema("my_ops::warp_perspective")).endswith("int height=8, int width=8) -> Tensor")
