"""Where the modules of PyPTO 0.1.0's flat package went, so that what named them still
works: pickles made by that layout (a pickle names the module of each class or function
it needs, such as ``pypto.tensor`` or ``pypto.config``) and code that imported a module
by its old name (``from pypto.errors import ShapeError``).

An import of an old name (or the attribute ``p.<old name>``) gives the module at its new place, loaded once: both names are
the same module object. Nothing is imported until an old name is asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: Old module (under pypto.) -> its module now (under pypto.).
MOVED = {
    "_lib": "_core.lib",
    "errors": "_core.errors",
    "_location": "_core.location",
    "_validate": "_core.validate",
    "dtypes": "_core.dtypes",
    "symbolic": "_core.symbolic",
    "tensor": "tensor_level.tensor",
    "_layout": "tensor_level.layouts",
    "layouts": "tensor_level.layout_transform",
    "methods": "tensor_level.methods",
    "creation": "tensor_level.creation",
    "ops": "tensor_level.ops",
    "nn": "tensor_level.nn",
    "reductions": "tensor_level.reductions",
    "shape_ops": "tensor_level.shape_ops",
    "conv": "tensor_level.conv",
    "update": "tensor_level.update",
    "masking": "tensor_level.masking",
    "einsum": "tensor_level.einsum",
    "dropout": "tensor_level.dropout",
    "tile": "tile_level.tile",
    "tile_config": "tile_level.config",
    "tile_ops": "tile_level.ops",
    "block": "block_level.kernel",
    "block_tile": "block_level.tile",
    "block_trace": "block_level.trace",
    "profile": "tools.profile",
    "profile_report": "tools.profile_report",
    "profile_compare": "tools.profile_compare",
    "debug": "tools.debug",
    "visualize": "tools.visualize",
    "progress": "tools.progress",
    "compile": "runtime.executor",
    "config": "runtime.config",
    "graph": "runtime.graph",
    "pool": "runtime.pool",
    "device": "runtime.device",
    "tracing": "runtime.tracing",
    "tile_recommend": "runtime.tile_recommend",
    "autograd": "autodiff.gradients",
    "optim": "autodiff.optim",
    "_collectives": "distributed.collectives",
    "_dist_executor": "distributed.executor",
    "_dp_train": "distributed.dp_train",
    "_layers": "distributed.layers",
    "_mesh": "distributed.mesh",
    "_pipeline": "distributed.pipeline",
    "_pipeline_schedule": "distributed.pipeline_schedule",
    "_pipeline_trace": "distributed.pipeline_trace",
    "_ranks": "distributed.ranks",
    "_ray_backend": "distributed.ray_backend",
    "_rendezvous": "distributed.rendezvous",
    "_shard_map": "distributed.shard_map",
    "_tp_executor": "distributed.tp_executor",
    "_tp_plan": "distributed.tp_plan",
}


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module now at ``target``."""

    def __init__(self, target: str):
        self.target = target
        self.spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import system has just set the module's __spec__ to the old name's;
        # the module keeps its own.
        module.__spec__ = self.spec


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.partition(".")
        if package != "pypto" or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias("pypto." + MOVED[name]))


def package_getattr(name: str):
    """The package's ``__getattr__``: ``p.dtypes`` and the like, 0.1.0's submodules as
    attributes of the package, are the modules now at their new places."""
    if name in MOVED:
        return importlib.import_module("pypto." + name)
    raise AttributeError(f"module 'pypto' has no attribute {name!r}")


def install(package) -> None:
    """Installs the finder of old names. An old name that is also a public attribute of
    the package (``compile``, ``tile``, ``einsum``, ``dropout``: functions named like
    the modules that defined them) is registered at once instead: a module the import
    system loads later becomes an attribute of its parent package, and would hide the
    function."""
    for old, new in MOVED.items():
        if old in vars(package):
            sys.modules.setdefault(f"{package.__name__}.{old}", importlib.import_module(f"{package.__name__}.{new}"))
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
