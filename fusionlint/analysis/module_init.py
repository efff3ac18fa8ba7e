"""The ``__init__`` of an nn.Module built in compiled code (``Block(cfg)`` in a forward or a method it
calls): where Dynamo stops tracing it, and which of its lines then run eagerly.

Measured with torch 2.13 CPU (backend "eager", tests/test_module_init_breaks.py and FL112's examples):
a parameter-free ``__init__`` is traced inline, with no break. One that makes parameters breaks at
its first parameter-making call (``nn.Linear(...)``, ``nn.Parameter(...)``: GB0264); Dynamo then runs
``__init__`` as a frame of its own, breaks again at ``super().__init__()`` ("Uninitialized nn.Module",
GB0119) and runs the whole frame eagerly: the later ``nn.Linear(...)``, ``print(...)``... do not break.
``nn.Module.__init__(self)`` called directly breaks at once (GB0007, then GB0119), parameters or not.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.index import FileIndex, FunctionInfo
from fusionlint.analysis.names import resolve
from fusionlint.analysis.walk import iter_nodes

PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# torch.nn modules whose constructor makes parameters (by default): building one in compiled code runs
# `nn.Parameter(...)`, measured GB0264 for nn.Linear, nn.Conv2d, nn.LayerNorm (torch 2.13 CPU);
# parameter-free ones (nn.Softmax, nn.Upsample, nn.Dropout) trace. module -> keywords that may drop every
# parameter (`elementwise_affine=False`); `bias=False` keeps the weight: `nn.Linear(8, 8, bias=False)` and
# `nn.Conv1d(2, 2, 1, bias=False)` in forward measured GB0264 (torch 2.13 CPU).
PARAM_MODULES: dict[str, tuple[str, ...]] = {
    **{n: () for n in ("Linear", "Bilinear", "LazyLinear")},
    **{f"{kind}{d}d": () for kind in ("Conv", "ConvTranspose", "LazyConv", "LazyConvTranspose") for d in (1, 2, 3)},
    **{n: ("elementwise_affine",) for n in ("LayerNorm", "RMSNorm")},
    **{n: ("affine",) for n in ("GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm")},
    **{n: () for n in ("Embedding", "EmbeddingBag", "MultiheadAttention", "PReLU")},
}
_MODULE_CLASS = ("torch.nn.Module", "torch.nn.modules.module.Module")


def makes_parameters(call: cst.Call, aliases: dict[str, str]) -> Optional[str]:
    """"nn.Parameter" / the torch.nn module's qualified name when ``call`` makes parameters, else None."""
    qual = resolve(call.func, aliases) or ""
    if qual in PARAMETER:
        return "nn.Parameter"
    if qual.startswith("torch.nn.") and qual.count(".") == 2 and qual[9:] in PARAM_MODULES:
        dropping = PARAM_MODULES[qual[9:]]
        if any(a.keyword is not None and a.keyword.value in dropping for a in call.args):
            return None  # `nn.LayerNorm(d, elementwise_affine=False)`: may make no parameter
        return qual
    return None


def is_explicit_module_init(call: cst.Call, aliases: dict[str, str]) -> bool:
    """``nn.Module.__init__(self)``."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value == "__init__" and (resolve(func.value, aliases) or "") in _MODULE_CLASS


def compiled_module_init(fn: Optional[FunctionInfo]) -> bool:
    """Is ``fn`` the ``__init__`` of an nn.Module class that compiled code reaches (a constructor call)?"""
    return (
        fn is not None and fn.name == "__init__" and fn.parent is None and fn.cls is not None
        and fn.cls.kind == "module" and fn.frames is not None
    )


def trace_end(fn: FunctionInfo, aliases: dict[str, str]) -> Optional[cst.Call]:
    """The call where Dynamo's trace of this compiled module ``__init__`` breaks: ``nn.Module.__init__(self)``
    or the first parameter-making call (in source order: a call in a branch not taken is a known miss)."""
    for call in iter_nodes(fn.node.body, (cst.Call,)):
        if is_explicit_module_init(call, aliases) or makes_parameters(call, aliases):
            return call
    return None


def eager_nodes(index: FileIndex) -> frozenset[int]:
    """ids of the nodes of compiled module ``__init__`` functions that come after their trace end: they run
    eagerly (rules that judge compiled code skip them)."""
    out: set[int] = set()
    for fn in index.functions.values():
        if not compiled_module_init(fn):
            continue
        end = trace_end(fn, index.aliases)
        if end is None:
            continue
        after = False
        for node in iter_nodes(fn.node.body, (cst.CSTNode,), into_nested_defs=True):
            if node is end:
                after = True
            elif after:
                out.add(id(node))
    return frozenset(out)
