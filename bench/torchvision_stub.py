"""A stand-in `torchvision` for the recall bench, installed on sys.meta_path before timm is imported.

Why: timm imports torchvision at import time (`torchvision.ops.misc.FrozenBatchNorm2d`,
`torchvision.transforms` in timm.data), but PyPI's torchvision wheels are built against other torch
builds and fail to import beside the local torch 2.13 CPU wheel. Model construction never uses
torchvision (only `norm_layer="frozenbatchnorm"` and the data pipeline do), so every `torchvision.*`
module is made on demand and every attribute is a placeholder class that raises when instantiated:
a model that really needed torchvision fails loudly and is skipped, never silently measured wrong.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types


class _PlaceholderMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{cls.__name__}.{name}")


def _placeholder(name: str) -> type:
    def refuse(self, *args, **kwargs):
        raise RuntimeError(f"torchvision stub: {name} is not available in the recall bench")

    return _PlaceholderMeta(name, (), {"__init__": refuse, "__call__": refuse})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _placeholder(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname == "torchvision" or fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def install() -> None:
    if not any(isinstance(f, _StubFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _StubFinder())
