"""`bazel run` targets that regenerate paper tables."""

def fgl_table(name, table):
    """`bazel run //experiments:<name> [-- --quick]` regenerates one table's report."""
    native.sh_binary(
        name = name,
        srcs = ["run_table.sh"],
        args = ["$(location %s)" % table],
        data = [table, ":table_runner", ":run"],
    )

def fgl_all_tables(name, tables):
    """One target that regenerates every table (a failed cell fails the whole target)."""
    native.sh_binary(
        name = name,
        srcs = ["run_table.sh"],
        args = ["$(location %s)" % t for t in tables],
        data = tables + [":table_runner", ":run"],
    )
