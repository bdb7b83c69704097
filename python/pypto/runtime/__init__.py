"""The runtime: ``p.compile`` and the ``Executor`` (executor), tracing functions into
Tensor Graphs (tracing), ``p.Graph``, ``p.CompileConfig``, ``p.MemoryPool``, the
simulated devices (device), and ``p.recommend_tile``, which compiles candidate tilings.
Configurations of layers above (``p.DistributedConfig``) register their executors here."""
