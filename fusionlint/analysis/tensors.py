"""Light tensor inference: which expressions of a function hold tensors.

Deliberately simple and flow-insensitive: a local name is a tensor when any assignment in the
function binds it to a tensor expression (iterated to a fixpoint). It errs towards "not a tensor"
so that rules stay precise: ``if mask is None``, ``float(self.eps)``, ``int(x.shape[0])`` must never
look like tensor-to-Python conversions.
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from fusionlint.analysis.index import ClassInfo, FileIndex, FunctionInfo
from fusionlint.analysis.names import resolve
from fusionlint.analysis.walk import iter_nodes

# Tensor methods/attributes whose result is not a tensor.
NON_TENSOR_METHODS = frozenset(
    {
        "item", "tolist", "size", "dim", "ndimension", "numel", "nelement", "stride", "data_ptr",
        "element_size", "is_contiguous", "is_floating_point", "is_complex", "numpy", "equal",
        "storage_offset", "get_device", "type", "__len__", "is_nonzero", "untyped_storage",
        "is_set_to", "has_names", "dim_order",
    }
)
NON_TENSOR_ATTRS = frozenset(
    {"shape", "dtype", "device", "ndim", "layout", "requires_grad", "is_cuda", "is_leaf", "names", "is_sparse"}
)
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "grad", "data"})
# torch.* callables that do not return tensors.
_NON_TENSOR_TORCH_PREFIXES = (
    "torch.cuda.", "torch.compiler.", "torch._dynamo.", "torch.jit.", "torch.backends.", "torch.distributed.",
    "torch.autograd.", "torch.utils.", "torch.profiler.", "torch.testing.", "torch.nn.init.", "torch.fx.",
    "torch.library.", "torch.onnx.", "torch.export.",
)
_NON_TENSOR_TORCH = frozenset(
    {
        "torch.is_tensor", "torch.numel", "torch.is_floating_point", "torch.is_complex", "torch.Size",
        "torch.device", "torch.dtype", "torch.get_default_dtype", "torch.is_grad_enabled", "torch.no_grad",
        "torch.enable_grad", "torch.inference_mode", "torch.manual_seed", "torch.set_grad_enabled",
        "torch.is_inference_mode_enabled", "torch.equal", "torch.finfo", "torch.iinfo", "torch.compile",
        "torch.get_num_threads", "torch.set_num_threads", "torch.autocast", "torch.Generator",
        "torch.is_autocast_enabled", "torch.broadcast_shapes", "torch.promote_types", "torch.result_type",
        "torch.can_cast", "torch.typename", "torch.is_storage",
    }
)
_TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.", "torch.nested.")
# Un-annotated forward parameters are taken as tensors, except those whose names say otherwise
# (``inputs_shape``, ``device``, ``num_heads``, ``cache``...): found by hand on transformers, where
# ``int(self.padding_idx + inputs_shape[1])`` was flagged as a tensor conversion.
_NON_TENSOR_PARAM = re.compile(
    r"(^|_)(shape|shapes|size|sizes|device|dtype|len|length|lens|num|dim|dims|idx|index|mode|config|cfg|"
    r"training|flag|name|kwargs|args|step|steps|output|outputs|return)(_|$)|^(n|k)_|"
    r"^(cache|past|past_key_values?|layer_past|use_cache)$"
)


def _annotation_says_tensor(annotation: cst.Annotation | None) -> Optional[bool]:
    """True for ``Tensor``, ``torch.Tensor``, ``Optional[Tensor]``, ``Tensor | None``; False for any
    other annotation (``int``, ``list[torch.Tensor]``...); None when there is none."""
    if annotation is None:
        return None
    text = "".join(cst.Module([]).code_for_node(annotation.annotation).split()).strip("'\"")
    if text.startswith(("Optional[", "typing.Optional[")) and text.endswith("]"):
        text = text[text.index("[") + 1 : -1]
    for part in text.split("|"):
        if part != "None":
            text = part
            break
    return text.rsplit(".", 1)[-1] == "Tensor"


def torch_call_returns_tensor(qual: str) -> bool:
    if qual in _NON_TENSOR_TORCH or qual.startswith(_NON_TENSOR_TORCH_PREFIXES):
        return False
    if qual.startswith(_TENSOR_NAMESPACES):
        return True
    if qual.startswith("torch.") and qual.count(".") == 1:
        last = qual[6:]
        return last[:1].islower() or last[:1] == "_"
    return False


class TensorFacts:
    """Tensor-valued names of one function, plus the predicate rules use."""

    def __init__(self, fn: FunctionInfo, index: FileIndex) -> None:
        self.fn = fn
        self.cls: Optional[ClassInfo] = fn.cls
        self.aliases = index.aliases
        self.names: set[str] = set()
        # names bound to anything that is not a tensor, so they never count as tensors via params
        self._params()
        self._assignments()

    # -- parameters ---------------------------------------------------------------------------
    def _params(self) -> None:
        fn = self.fn
        params = list(fn.node.params.posonly_params) + list(fn.node.params.params) + list(fn.node.params.kwonly_params)
        entry = fn.kind in ("forward", "autograd_forward", "autograd_backward", "compiled")
        skip_first = fn.cls is not None and fn.parent is None and not self._is_static(fn.node)
        if fn.kind in ("autograd_forward", "autograd_backward") and not skip_first:
            skip_first = True  # @staticmethod forward(ctx, ...): ctx is not a tensor
        for i, param in enumerate(params):
            if i == 0 and skip_first:
                continue
            says = _annotation_says_tensor(param.annotation)
            if says is True:
                self.names.add(param.name.value)
                continue
            if says is False or not entry:
                continue
            default = param.default
            if default is not None and not (isinstance(default, cst.Name) and default.value == "None"):
                continue  # `scale=1.0`, `dim=-1`, `causal=False`: configuration, not a tensor
            if _NON_TENSOR_PARAM.search(param.name.value):
                continue
            self.names.add(param.name.value)
        star = fn.node.params.star_arg
        if entry and isinstance(star, cst.Param) and _annotation_says_tensor(star.annotation) is not False:
            self.names.add(star.name.value)  # *args of a compiled function: tensors

    @staticmethod
    def _is_static(node: cst.FunctionDef) -> bool:
        for dec in node.decorators:
            if isinstance(dec.decorator, cst.Name) and dec.decorator.value == "staticmethod":
                return True
        return False

    # -- assignments ---------------------------------------------------------------------------
    def _assignments(self) -> None:
        pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
        fors: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []

        kinds = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For)
        for node in iter_nodes(self.fn.node.body, kinds):
            if isinstance(node, cst.Assign):
                pairs.extend((t.target, node.value) for t in node.targets)
            elif isinstance(node, cst.For):
                fors.append((node.target, node.iter))
            elif node.value is not None:  # AnnAssign without a value binds nothing
                pairs.append((node.target, node.value))
        for _ in range(3):  # fixpoint: later assignments may feed earlier-listed ones
            before = len(self.names)
            for target, value in pairs:
                self._bind(target, value)
            for target, iterable in fors:
                if self.is_tensor(iterable) and isinstance(target, cst.Name):
                    self.names.add(target.value)
            if len(self.names) == before:
                break

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            if self.is_tensor(value):
                self.names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements):
                for t, v in zip(elements, value.elements):
                    self._bind(t, v.value)
            elif self._is_tensor_sequence(value):
                for t in elements:
                    if isinstance(t, cst.Name):
                        self.names.add(t.value)
                    elif isinstance(t, cst.StarredElement) and isinstance(t.value, cst.Name):
                        self.names.add(t.value.value)

    def _is_tensor_sequence(self, value: cst.BaseExpression) -> bool:
        """``q, k, v = qkv.unbind(0)``; ``out, (h, c) = self.lstm(x)``; not ``B, N, C = x.shape``."""
        if isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute):
                if func.attr.value in ("unbind", "chunk", "split", "tensor_split", "unflatten", "sort", "topk",
                                       "max", "min", "median", "mode", "kthvalue", "qr", "svd", "eigh", "slogdet"):
                    return self.is_tensor(func.value) or self._torch_name(func.value)
                if isinstance(func.value, cst.Name) and func.value.value == "self" and self.cls is not None:
                    return func.attr.value in self.cls.submodules
            qual = resolve(func, self.aliases) or ""
            return torch_call_returns_tensor(qual)
        return False

    def _torch_name(self, expr: cst.BaseExpression) -> bool:
        return (resolve(expr, self.aliases) or "") == "torch"

    # -- the predicate ---------------------------------------------------------------------------
    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.names
        if isinstance(expr, cst.Attribute):
            attr = expr.attr.value
            base = expr.value
            if isinstance(base, cst.Name) and base.value == "self":
                cls = self.cls
                return cls is not None and (attr in cls.params or attr in cls.buffers or attr in cls.tensor_attrs)
            if attr in TENSOR_ATTRS:
                return self.is_tensor(base)
            if attr in ("weight", "bias") and isinstance(base, cst.Attribute):
                b = base
                if isinstance(b.value, cst.Name) and b.value.value == "self" and self.cls is not None:
                    return b.attr.value in self.cls.submodules
            return False
        if isinstance(expr, cst.Call):
            return self._call_is_tensor(expr)
        if isinstance(expr, cst.BinaryOperation):
            return self.is_tensor(expr.left) or self.is_tensor(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return not isinstance(expr.operator, cst.Not) and self.is_tensor(expr.expression)
        if isinstance(expr, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
                return False
            return self.is_tensor(expr.left) or any(self.is_tensor(c.comparator) for c in expr.comparisons)
        if isinstance(expr, cst.Subscript):
            return self.is_tensor(expr.value) or self._is_tensor_sequence(expr.value)
        if isinstance(expr, cst.IfExp):
            return self.is_tensor(expr.body) or self.is_tensor(expr.orelse)
        return False

    def _call_is_tensor(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                return self.cls is not None and method in self.cls.submodules  # self.lin(x)
            if self.is_tensor(receiver):
                return method not in NON_TENSOR_METHODS
            if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name):
                # self.blocks[i](x) is a Subscript call; self.proj.forward(x)
                if receiver.value.value == "self" and self.cls is not None and method == "forward":
                    return receiver.attr.value in self.cls.submodules
        qual = resolve(func, self.aliases)
        if qual is None:
            return False
        return torch_call_returns_tensor(qual)
