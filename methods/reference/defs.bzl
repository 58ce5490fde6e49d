"""Bazel macros for the reference ports' Python tests (test oracles, methods/*/reference/), run
with Debian's python3-torch through run_python_test.sh."""

def python_reference_test(name, script, data = [], args = [], size = "small"):
    """An sh_test running `script` (relative to this package, in `data`) with /usr/bin/python3."""
    native.sh_test(
        name = name,
        size = size,
        srcs = ["//methods/reference:run_python_test.sh"],
        args = [native.package_name() + "/" + script] + args,
        data = data,
    )

def method_reference(test, data = [], group = "reference"):
    """The package's reference/*.py as the filegroup `group`, and its self-test reference/<test>.py."""
    native.filegroup(
        name = group,
        testonly = True,
        srcs = native.glob(["reference/*.py"]),
        visibility = ["//methods:__subpackages__"],
    )
    python_reference_test(name = test, script = "reference/%s.py" % test, data = [":" + group] + data)
