"""fgl_pinned_cc_binary: a cc_binary whose pinned CPU kernels (nn/cpu_kernels.h) cost no second load."""

load("//third_party:copts.bzl", "FGL_COPTS")

def fgl_pinned_cc_binary(name, visibility = None, tags = None, **kwargs):
    """`name` is a small launcher that sets the pinned environment and executes `name`.bin.

    `name`.bin is the cc_binary given by kwargs (its main still calls nn::PinCpuKernels, which then
    finds the environment set and returns). Copy both files together.
    """
    native.cc_binary(name = name + ".bin", visibility = visibility, tags = tags, **kwargs)
    native.cc_binary(
        name = name,
        copts = FGL_COPTS,
        data = [":" + name + ".bin"],
        visibility = visibility,
        tags = tags,
        deps = ["//nn:pinned_launcher_main"],
    )
