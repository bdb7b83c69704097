"""Tools over compiled runs: the profiler and its report and comparison, the debugger,
the compilation viewer and its assets, and progress bars. They read what the Go core
reports; the runtime hands them out (``executor.profile()``, ``.debug()``,
``.visualize()``)."""
