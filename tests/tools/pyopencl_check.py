"""Runs the same PyOpenCL computations on the fedcl platform and on PoCL directly, and checks that
both agree with each other and with NumPy. Exits non-zero on any difference."""
import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

N = 100_003

SQUARE_SOURCE = """
__kernel void square_plus(__global const float *x, __global float *y, float add) {
    size_t i = get_global_id(0);
    y[i] = x[i] * x[i] + add;
}
"""


def platform_named(name):
    for platform in cl.get_platforms():
        if platform.name == name:
            return platform
    sys.exit(f"no OpenCL platform named {name!r}; have {[p.name for p in cl.get_platforms()]}")


def compute(platform):
    device = platform.get_devices()[0]
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    rng = np.random.default_rng(7)
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    ints = np.arange(N, dtype=np.int64) * 3 - 1000

    a_dev, b_dev = cla.to_device(queue, a), cla.to_device(queue, b)
    ints_dev = cla.to_device(queue, ints)
    results = {
        "axpy": (2 * a_dev + b_dev).get(),
        "sum": cla.sum(a_dev).get(),
        "dot": cla.dot(a_dev, b_dev).get(),
        "max": cla.max(b_dev).get(),
        "int_sum": cla.sum(ints_dev).get(),
    }
    program = cl.Program(context, SQUARE_SOURCE).build()
    y_dev = cla.empty_like(a_dev)
    program.square_plus(queue, (N,), None, a_dev.data, y_dev.data, np.float32(0.5))
    results["square_plus"] = y_dev.get()
    queue.finish()
    print(f"{platform.name}: {device.name}")
    return results, a, b, ints


def main():
    fedcl, a, b, ints = compute(platform_named("fedcl"))
    pocl, _, _, _ = compute(platform_named("Portable Computing Language"))

    # Against NumPy: exact where the arithmetic is exact, close where the device may fuse a multiply
    # and an add or sum in another order.
    assert np.array_equal(fedcl["axpy"], 2 * a + b), "axpy differs from NumPy"
    assert np.allclose(fedcl["square_plus"], a * a + np.float32(0.5), rtol=1e-6), "kernel differs from NumPy"
    assert fedcl["int_sum"] == ints.sum(), f"integer sum {fedcl['int_sum']} != {ints.sum()}"
    assert fedcl["max"] == b.max(), "max differs from NumPy"
    assert np.isclose(fedcl["sum"], a.sum(dtype=np.float64), rtol=1e-4), "sum differs from NumPy"
    assert np.isclose(fedcl["dot"], np.dot(a.astype(np.float64), b), rtol=1e-4), "dot differs from NumPy"

    # Against PoCL used directly: the same backend runs the same kernels, so the same bits.
    for key in fedcl:
        assert np.array_equal(fedcl[key], pocl[key]), f"{key}: fedcl {fedcl[key]} != PoCL {pocl[key]}"
    print("fedcl and PoCL agree")


if __name__ == "__main__":
    main()
