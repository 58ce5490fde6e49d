"""Repository rule that exposes LibTorch as @libtorch//:torch.

By default it wraps Debian's libtorch-dev (1.13, CPU): the C++ frontend headers live in
/usr/include/torch/csrc/api/include and must be on an -isystem path of every dependent.
When $FGL_LIBTORCH_DIR is set (see `build:cuda` in .bazelrc) it wraps that LibTorch
distribution instead (include/ and lib/ as shipped by pytorch.org), e.g. a CUDA build.
"""

_BUILD_SYSTEM = """
package(default_visibility = ["//visibility:public"])

# Only the frontend's include root is declared here; the rest of LibTorch's headers sit under
# /usr/include, a built-in include directory of the toolchain.
cc_library(
    name = "torch",
    hdrs = glob(["api_include/**/*.h"]),
    includes = ["api_include"],
    linkopts = ["-ltorch", "-ltorch_cpu", "-lc10"],
)
"""

_BUILD_DIST = """
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "torch",
    hdrs = glob(["include/**/*.h", "include/**/*.cuh"]),
    includes = ["include", "include/torch/csrc/api/include"],
    linkopts = [
        "-L{lib}",
        "-Wl,-rpath,{lib}",
        "-Wl,--no-as-needed",
        "-ltorch",
        "-ltorch_cpu",
        "-lc10",
        {cuda_libs}
        "-Wl,--as-needed",
    ],
)
"""

def _libtorch_repository_impl(ctx):
    dist = ctx.os.environ.get("FGL_LIBTORCH_DIR", "")
    if dist:
        root = ctx.path(dist)
        if not root.get_child("include").exists or not root.get_child("lib").exists:
            fail("FGL_LIBTORCH_DIR=%s must contain include/ and lib/ of a LibTorch distribution" % dist)
        ctx.symlink(root.get_child("include"), "include")
        cuda = root.get_child("lib").get_child("libtorch_cuda.so").exists
        ctx.file("BUILD", _BUILD_DIST.format(
            lib = str(root.get_child("lib")),
            cuda_libs = '"-ltorch_cuda", "-lc10_cuda",' if cuda else "",
        ))
        return
    api = ctx.path("/usr/include/torch/csrc/api/include")
    if not api.exists:
        fail("LibTorch headers not found at %s: run third_party/install_deps.sh (Debian libtorch-dev)" % api)
    ctx.symlink(api, "api_include")
    ctx.file("BUILD", _BUILD_SYSTEM)

libtorch_repository = repository_rule(
    implementation = _libtorch_repository_impl,
    environ = ["FGL_LIBTORCH_DIR"],
    local = True,
)
