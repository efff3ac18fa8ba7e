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

from fusionlint.semantic.bindings import PARAMETER, Reaching, bindings, reaching_plain_values, target_names
from fusionlint.semantic.flags import flag_params
from fusionlint.semantic.guards import OTHER_CLASS, TENSOR, narrowed
from fusionlint.semantic.param_names import NON_TENSOR_PARAM
from fusionlint.analysis.index import ClassInfo, FileIndex, FunctionInfo
from fusionlint.analysis.literals import int_literal
from fusionlint.analysis.names import dotted, resolve
from fusionlint.analysis.render import expression_code
from fusionlint.analysis.walk import iter_nodes

# Tensor methods/attributes whose result is not a tensor.
NON_TENSOR_METHODS = frozenset(
    {
        "item", "tolist", "size", "dim", "ndimension", "numel", "nelement", "stride", "data_ptr",
        "element_size", "is_contiguous", "is_floating_point", "is_complex", "numpy", "equal",
        "storage_offset", "get_device", "type", "__len__", "is_nonzero", "untyped_storage",
        "is_set_to", "has_names", "dim_order",
        # the other questions a tensor answers with a Python bool (kornia's `not value.is_inference()`)
        "is_coalesced", "is_conj", "is_inference", "is_neg", "is_pinned", "is_same_size", "is_shared", "is_signed",
    }
)
NON_TENSOR_ATTRS = frozenset(
    {"shape", "dtype", "device", "ndim", "layout", "requires_grad", "is_cuda", "is_leaf", "names", "is_sparse"}
)
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "grad", "data"})
# Public attributes and methods of torch.Tensor (torch 2.13.0, ``dir(torch.Tensor)``; an in-place
# ``foo_`` counts when ``foo`` is listed). A name used with anything else (``cache.get_seq_length()``,
# ``features.pop(0)``, ``outputs.last_hidden_state``) is not a tensor, whatever its annotation says:
# found by hand on transformers, where ``cache: torch.Tensor | None`` holds a KV-cache object.
TENSOR_API = frozenset(
    """
    H T abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr adjoint all allclose amax amin
    aminmax angle any apply_ arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argsort
    argwhere as_strided as_strided_scatter as_subclass asin asinh atan atan2 atanh backward baddbmm
    bernoulli bfloat16 bincount bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift
    bitwise_xor bmm bool broadcast_to byte cauchy_ ccol_indices cdouble ceil cfloat chalf char cholesky
    cholesky_inverse cholesky_solve chunk clamp clamp_max clamp_min clip clone coalesce col_indices conj
    conj_physical const_data_ptr contiguous copy_ copysign corrcoef cos cosh count_nonzero cov cpu cross
    crow_indices cuda cummax cummin cumprod cumsum data data_ptr deg2rad dense_dim dequantize det detach
    device diag diag_embed diagflat diagonal diagonal_scatter diff digamma dim dim_order dist div divide dot
    double dsplit dtype eig element_size eq equal erf erfc erfinv exp exp2 expand expand_as expm1
    exponential_ fill_ fill_diagonal_ fix flatten flip fliplr flipud float float_power floor floor_divide
    fmax fmin fmod frac frexp gather gcd ge geometric_ geqrf ger get_device grad grad_dtype grad_fn greater
    greater_equal gt half hardshrink hash_tensor heaviside histc histogram hsplit hypot i0 igamma igammac
    imag index index_add index_copy index_fill index_put index_reduce index_select indices inner int
    int_repr inverse ipu is_coalesced is_complex is_conj is_contiguous is_cpu is_cuda is_distributed
    is_floating_point is_inference is_ipu is_leaf is_maia is_meta is_mkldnn is_mps is_mtia is_neg is_nested
    is_nonzero is_pinned is_quantized is_same_size is_set_to is_shared is_signed is_sparse is_sparse_csr
    is_vulkan is_xla is_xpu isclose isfinite isinf isnan isneginf isposinf isreal istft item itemsize kron
    kthvalue layout lcm ldexp le lerp less less_equal lgamma log log10 log1p log2 log_normal_ log_softmax
    logaddexp logaddexp2 logcumsumexp logdet logical_and logical_not logical_or logical_xor logit logsumexp
    long lstsq lt lu lu_solve mH mT map2_ map_ masked_fill masked_scatter masked_select matmul matrix_exp
    matrix_power max maximum mean median min minimum mm mode module_load moveaxis movedim msort mtia mul
    multinomial multiply mv mvlgamma name nan_to_num nanmean nanmedian nanquantile nansum narrow narrow_copy
    nbytes ndim ndimension ne neg negative nelement new new_empty new_empty_strided new_full new_ones
    new_tensor new_zeros nextafter nonzero nonzero_static norm normal_ not_equal numel numpy orgqr ormqr
    outer output_nr permute pin_memory pinverse polygamma positive pow prelu prod put q_per_channel_axis
    q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point qr qscheme quantile rad2deg random_
    ravel real reciprocal record_stream register_hook register_post_accumulate_grad_hook reinforce relu
    remainder renorm repeat repeat_interleave requires_grad reshape reshape_as resize resize_as
    resize_as_sparse_ resolve_conj resolve_neg retain_grad retains_grad roll rot90 round row_indices rsqrt
    scatter scatter_add scatter_reduce select select_scatter set_ sgn shape share_memory_ short sigmoid sign
    signbit sin sinc sinh size slice_inverse slice_scatter slogdet smm softmax solve sort sparse_dim
    sparse_mask sparse_resize_ sparse_resize_and_clear_ split split_with_sizes sqrt square squeeze sspaddmm
    std stft storage storage_offset storage_type stride sub subtract sum sum_to_size svd swapaxes swapdims
    symeig t take take_along_dim tan tanh tensor_split tile to to_dense to_mkldnn to_padded_tensor to_sparse
    to_sparse_bsc to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr tolist topk trace transpose
    triangular_solve tril triu true_divide trunc type type_as unbind unflatten unfold uniform_ unique
    unique_consecutive unsafe_chunk unsafe_split unsafe_split_with_sizes unsqueeze untyped_storage values
    var vdot view view_as volatile vsplit where xlogy xpu zero_
    """.split()
)
# Methods and torch functions that return a tuple of tensors, not a tensor.
SEQUENCE_METHODS = frozenset({"unbind", "split", "chunk", "tensor_split", "hsplit", "vsplit", "dsplit"})
_SEQUENCE_TORCH = frozenset(
    {"torch.unbind", "torch.split", "torch.chunk", "torch.tensor_split", "torch.hsplit", "torch.vsplit", "torch.dsplit",
     "torch.meshgrid", "torch.broadcast_tensors", "torch.functional.split", "torch.functional.meshgrid"}
)


def is_tensor_api(name: str) -> bool:
    """Is ``name`` an attribute or method of ``torch.Tensor``? (Private names: not known, so yes.)"""
    if name.startswith("_") or name in TENSOR_API:
        return True
    return name.endswith("_") and name[:-1] in TENSOR_API
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
        "torch.can_cast", "torch.typename", "torch.is_storage", "torch.seed", "torch.initial_seed",
    }
)
# torch.is_*/get_*/set_*... query or change global state (``torch.get_autocast_dtype``, ``torch.is_autocast_enabled``).
_NON_TENSOR_TORCH_VERBS = ("is_", "get_", "set_", "are_", "use_")
_TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.", "torch.nested.")
def _annotation_says_tensor(annotation: cst.Annotation | None) -> Optional[bool]:
    """True for ``Tensor``, ``torch.Tensor``, ``Optional[Tensor]``, ``Tensor | None``; False for any
    other annotation (``int``, ``list[torch.Tensor]``...); None when there is none."""
    if annotation is None:
        return None
    text = "".join(expression_code(annotation.annotation).split()).strip("'\"")
    if text.startswith(("Optional[", "typing.Optional[")) and text.endswith("]"):
        text = text[text.index("[") + 1 : -1]
    for part in text.split("|"):
        if part != "None":
            text = part
            break
    return text.rsplit(".", 1)[-1] in TENSOR_ANNOTATIONS


def _annotation_text(annotation: cst.Annotation) -> str:
    """The annotation's code without spaces or quotes, ``Optional[...]`` and ``| None`` taken off."""
    text = "".join(expression_code(annotation.annotation).split()).strip("'\"")
    if text.startswith(("Optional[", "typing.Optional[")) and text.endswith("]"):
        text = text[text.index("[") + 1 : -1]
    parts = [p for p in text.split("|") if p != "None"]
    return parts[0] if len(parts) == 1 else text


def _annotation_holds_tensors(annotation: cst.Annotation | None) -> Optional[str]:
    """"dict" for a mapping annotated to hold tensors (``Dict[str, Tensor]``, ``dict[str, torch.Tensor]``,
    ``Mapping[str, Tensor]``), "sequence" for a list or tuple of them (``List[Tensor]``,
    ``Tuple[Tensor, ...]``, ``tuple[Tensor, Tensor]``, ``Sequence[Tensor]``); None otherwise."""
    if annotation is None:
        return None
    text = _annotation_text(annotation)
    match = _CONTAINER_ANNOTATION.fullmatch(text)
    if match is None:
        return None
    kind, inner = match.group(1).rsplit(".", 1)[-1], match.group(2)
    if kind in ("Dict", "dict", "Mapping", "MutableMapping"):
        key, sep, value = inner.partition(",")
        return "dict" if sep and "[" not in key and _is_tensor_name(value) else None
    items = [i for i in inner.split(",") if i != "..."]
    return "sequence" if items and all(_is_tensor_name(i) for i in items) else None


def _is_tensor_name(text: str) -> bool:
    return text.rsplit(".", 1)[-1] in TENSOR_ANNOTATIONS


_CONTAINER_ANNOTATION = re.compile(r"((?:typing\.)?(?:Dict|dict|Mapping|MutableMapping|List|list|Tuple|tuple|Sequence))\[(.+)\]")


# torch's typed tensor classes are tensors too: transformers annotates `input_ids: torch.LongTensor`
# and `hidden_states: torch.FloatTensor` throughout
TENSOR_ANNOTATIONS = frozenset({
    "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
    "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
})


def torch_call_returns_tensor(qual: str) -> bool:
    if qual in _NON_TENSOR_TORCH or qual in _SEQUENCE_TORCH or qual.startswith(_NON_TENSOR_TORCH_PREFIXES):
        return False
    if qual.startswith(_TENSOR_NAMESPACES):
        return True
    if qual.startswith("torch.") and qual.count(".") == 1:
        last = qual[6:]
        if last.startswith(_NON_TENSOR_TORCH_VERBS) and last != "get_rng_state":
            return False
        return last[:1].islower() or last[:1] == "_"
    return False


def _bound_by(node: cst.CSTNode) -> list[str]:
    """Names a ``+=``, ``with ... as``, ``:=`` or comprehension ``for`` binds."""
    if isinstance(node, cst.With):
        return [n for item in node.items if item.asname is not None for n in target_names(item.asname.name)]
    return target_names(node.target)


class TensorFacts:
    """Tensor-valued names of one function, plus the predicate rules use."""

    def __init__(self, fn: FunctionInfo, index: FileIndex) -> None:
        self.fn = fn
        self.cls: Optional[ClassInfo] = fn.cls
        self.aliases = index.aliases
        self._tensor_classes = index.tensor_classes
        self.names: set[str] = set()
        # names bound to tuples of tensors (``parts = x.split(2)``): their items are tensors
        self.sequences: set[str] = set()
        # names bound only to dicts whose every value is a tensor (``feats = {"a": x, "b": y}``, or ``{}``
        # then only ``feats[k] = t``): ``feats["a"]``, ``feats.get(k)`` and the values of ``.values()`` and
        # ``.items()`` are tensors
        self.tensor_dicts: set[str] = set()
        # names used with something torch.Tensor does not have (``cache.get_seq_length()``): never tensors
        self._blocked: set[str] = set()
        # name -> why it is a tensor, the first reason found: a sentence, or (what, node) rendered by ``why``
        self._why: dict[str, object] = {}
        self._bindings: dict[str, list[cst.BaseExpression]] = {}
        # names bound to a submodule's output (``outputs = self.model(x)``): ``outputs[0]`` is a tensor
        # even when ``outputs`` itself is a ModelOutput or a tuple
        self._module_outputs: set[str] = set()
        # is_tensor / is_sequence answers per node (libcst nodes hash by identity), valid while the
        # facts above stay as they are.
        # Without them ``x[0][0]...`` re-derived every prefix of the chain at every level: 600
        # subscripts took 10.7 CPU-s.
        self._tensor_memo: dict[cst.CSTNode, bool] = {}
        self._sequence_memo: dict[cst.CSTNode, bool] = {}
        self._guards: Optional[dict[cst.Name, str]] = None  # reads an isinstance/is None guard decides
        self._binding_counts: Optional[dict[str, int]] = None  # name -> its bindings (``_bound_once``)
        # reads of a name the function binds again (``n = torch.arange(n)``) -> the plain bindings
        # before each; filled on first use (``_before_rebinding``)
        self._rebinding_reads: Optional[dict[cst.Name, list[cst.BaseExpression]]] = None
        self._pairs: list = []
        self._params()
        self._tensor_params = frozenset(self.names)
        params = self.fn.node.params
        self._param_names = frozenset(p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params))
        self._assignments()
        self._not_tensors_by_use()

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
            default = param.default
            if says is True:
                if not _literal_default(default):  # `output_attentions: torch.Tensor | None = False`
                    self._add(param.name.value, ("annotated", param.annotation.annotation))
                continue
            if says is False:
                # `params: Dict[str, torch.Tensor]`, `feats: List[Tensor]`: their items are tensors
                holds = _annotation_holds_tensors(param.annotation)
                name = param.name.value
                if holds is not None and name not in self._blocked:
                    (self.tensor_dicts if holds == "dict" else self.sequences).add(name)
                continue
            if not entry:
                continue
            if default is not None and not (isinstance(default, cst.Name) and default.value == "None"):
                continue  # `scale=1.0`, `dim=-1`, `causal=False`: configuration, not a tensor
            if NON_TENSOR_PARAM.search(param.name.value):
                continue
            self._add(param.name.value, f"parameter of {fn.qualname}, whose parameters are tensors unless a default, "
                                        "an annotation or a use says otherwise")
        for name, where in fn.tensor_params.items():  # the project model: passed a tensor by a compiled caller, or used as one
            self._add(name, where)
        star = fn.node.params.star_arg
        if entry and isinstance(star, cst.Param) and _annotation_says_tensor(star.annotation) is not False:
            self._add(star.name.value, f"*{star.name.value} of {fn.qualname}, whose positional arguments are tensors")

    def _add(self, name: str, why: object = None) -> None:
        if name not in self._blocked and name not in self.names:
            self.names.add(name)
            if why is not None:
                self._why.setdefault(name, why)
            self._facts_changed()

    def why(self, name: str) -> Optional[str]:
        """Why ``name`` is a tensor in this function ("assigned `x.sum(-1)` in Net.forward"), or None
        when it is not one (or the reason was not recorded)."""
        if name not in self.names:
            return None
        why = self._why.get(name)
        if why is None or isinstance(why, str):
            return why
        what, node = why
        code = _short_code(node)
        qualname = self.fn.qualname
        if what == "annotated":
            return f"parameter of {qualname} annotated `{code}`"
        if what == "iterates":
            return f"loop variable over `{code}` in {qualname}"
        if what == "unpacked":
            return f"unpacked from `{code}` in {qualname}"
        return f"assigned `{code}` in {qualname}"

    def _facts_changed(self) -> None:
        self._tensor_memo.clear()
        self._sequence_memo.clear()

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
        comp_fors: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []

        # name -> what `name.append(...)` adds: a list that starts empty and only ever gets tensors
        # appended is a sequence of tensors (`parts = []; parts.append(x * i); for p in parts: ...`)
        appends: dict[str, list[cst.BaseExpression]] = {}
        # name -> the values `name[key] = value` stores; names changed through a method (`.update()`)
        stored: dict[str, list[cst.BaseExpression]] = {}
        changed: set[str] = set()
        kinds = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.Call)
        for node in iter_nodes(self.fn.node.body, kinds):
            if isinstance(node, cst.Call):
                func = node.func
                if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value == "append"
                        and len(node.args) == 1 and node.args[0].keyword is None and node.args[0].star == ""):
                    appends.setdefault(func.value.value, []).append(node.args[0].value)
                elif (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                        and func.attr.value in _DICT_CHANGING_METHODS):
                    changed.add(func.value.value)
            elif isinstance(node, cst.Assign):
                pairs.extend((t.target, node.value) for t in node.targets)
            elif isinstance(node, cst.For):
                fors.append((node.target, node.iter))
            elif isinstance(node, cst.CompFor):  # `[int(r.max()) for r in x]`: r is a row of x
                comp_fors.append((node.target, node.iter))
            elif node.value is not None:  # AnnAssign without a value binds nothing
                pairs.append((node.target, node.value))
        self._appends = appends
        for target, value in pairs:
            if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
                stored.setdefault(target.value.value, []).append(value)
            if isinstance(target, cst.Name):
                self._bindings.setdefault(target.value, []).append(value)
                if self._submodule_call(value):
                    self._module_outputs.add(target.value)
        # A comprehension's variable lives in the comprehension only, but these facts are per name for
        # the whole function: it counts only when the function binds that name nowhere else
        # (depth_pro's `[len(i) for i in scaled_images]` beside `for i in range(n)`)
        elsewhere = set(self._bindings) | self._param_names
        for target, _ in fors:
            elsewhere |= set(target_names(target))
        comp_fors = [(t, it) for t, it in comp_fors if not set(target_names(t)) & elsewhere]
        self._pairs, self._fors = pairs, fors + comp_fors
        self._dict_values = {
            name: [*stored.get(name, ()), *(e.value for v in values if isinstance(v, cst.Dict) for e in v.elements)]
            for name, values in self._bindings.items()
            if name not in changed and values and all(_dict_display(v) for v in values)
        }
        self._fixpoint()

    def _fixpoint(self) -> None:
        pairs, fors = self._pairs, self._fors
        for _ in range(3):  # fixpoint: later assignments may feed earlier-listed ones
            before = len(self.names) + len(self.sequences) + len(self.tensor_dicts)
            for target, value in pairs:
                self._bind(target, value)
            for name, added in self._appends.items():
                if name not in self.sequences and name not in self._blocked and self._tensor_list(name, added):
                    self.sequences.add(name)
                    self._facts_changed()
            for name, values in self._dict_values.items():
                if (name not in self.tensor_dicts and name not in self._blocked and values
                        and all(self.is_tensor(v) for v in values)):
                    self.tensor_dicts.add(name)
                    self._facts_changed()
            for target, iterable in fors:
                if isinstance(target, cst.Name) and (self.is_tensor(iterable) or self.is_sequence(iterable)):
                    self._add(target.value, ("iterates", iterable))
                elif isinstance(target, (cst.Tuple, cst.List)):
                    for name, rows in self._zipped_rows(target, iterable):
                        self._add(name, ("iterates", rows))
                    value = self._dict_method(iterable, "items")
                    if value is not None and len(target.elements) == 2 and isinstance(target.elements[1].value, cst.Name):
                        self._add(target.elements[1].value.value, ("iterates", iterable))
            if len(self.names) + len(self.sequences) + len(self.tensor_dicts) == before:
                break

    def _dict_method(self, expr: cst.BaseExpression, method: str) -> Optional[str]:
        """The name of the dict of tensors in ``expr`` when it is ``name.<method>(...)``, else None."""
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == method:
            recv = expr.func.value
            if isinstance(recv, cst.Name) and recv.value in self.tensor_dicts:
                return recv.value
        return None

    def _tensor_list(self, name: str, added: list[cst.BaseExpression]) -> bool:
        """``name`` is only ever bound to ``[]`` and everything appended to it is a tensor."""
        bound = self._bindings.get(name)
        return (
            bool(bound) and all(isinstance(v, cst.List) and not v.elements for v in bound)
            and all(self.is_tensor(v) for v in added)
        )

    def _zipped_rows(self, target: cst.Tuple | cst.List, iterable: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
        """The names of ``for i, row in enumerate(x)`` / ``for a, b in zip(x, ys)`` that take the rows of
        a tensor (or the items of a tuple of tensors), with what they iterate."""
        if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)
                and iterable.func.value in ("enumerate", "zip") and iterable.func.value not in self.aliases):
            return []
        args = [a.value for a in iterable.args if a.keyword is None and a.star == ""]
        if len(args) != len(iterable.args):
            return []
        names = [e.value for e in target.elements]
        if iterable.func.value == "enumerate":
            if len(args) != 1 or len(names) != 2:
                return []
            pairs = [(names[1], args[0])]
        else:
            if len(args) != len(names):
                return []
            pairs = list(zip(names, args))
        return [(n.value, rows) for n, rows in pairs
                if isinstance(n, cst.Name) and (self.is_tensor(rows) or self.is_sequence(rows))]

    def _not_tensors_by_use(self) -> None:
        """A name read with an attribute or method that ``torch.Tensor`` lacks is not a tensor, unless
        one of its assignments plainly computes one (``out = []; out.append(t); out = torch.stack(out)``).
        The facts are then recomputed without it, so nothing derived from it counts either."""
        suspects: set[str] = set()
        for node in iter_nodes(self.fn.node.body, (cst.Attribute,)):
            base = node.value
            if isinstance(base, cst.Name) and base.value in self.names and not is_tensor_api(node.attr.value):
                if self.guarded(base) in (OTHER_CLASS, TENSOR):
                    continue  # read as a narrowed class (`isinstance(e, EdgeIndex) and e.is_undirected`)
                suspects.add(base.value)
        # a parameter the function fills in with a Python flag (`calc_aux_loss = default(calc_aux_loss,
        # self.training)`) is a switch, whatever its callers pass (fusionlint.semantic.flags)
        flags = flag_params(self.fn.node, frozenset(self.names & self._param_names), self.cls)
        if not suspects and not flags:
            return
        blocked = set(flags)
        if suspects:
            self.names -= suspects
            self._facts_changed()
            try:
                blocked |= {n for n in suspects if not any(self._plainly_tensor(v) for v in self._bindings.get(n, ()))}
            finally:
                self.names |= suspects
                self._facts_changed()
        if blocked:
            self._blocked = blocked
            self._tensor_params = self._tensor_params - blocked  # a read before a re-binding sees it too
            self.names, self.sequences, self.tensor_dicts, self._why = set(), set(), set(), {}
            self._facts_changed()
            self._params()
            self._fixpoint()

    def _submodule_call(self, value: cst.BaseExpression) -> bool:
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
            return False
        recv = value.func.value
        return (
            isinstance(recv, cst.Name) and recv.value == "self" and self.cls is not None
            and value.func.attr.value in self.cls.submodules
        )

    def _plainly_tensor(self, value: cst.BaseExpression) -> bool:
        """A tensor by its own form, not merely the result of some submodule (``self.backbone(x)``
        may return a list of feature maps)."""
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            recv = value.func.value
            if isinstance(recv, cst.Name) and recv.value == "self":
                return False
        return self.is_tensor(value)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            if self.is_tensor(value):
                self._add(target.value, ("assigned", value))
            elif self.is_sequence(value) and target.value not in self._blocked and target.value not in self.sequences:
                self.sequences.add(target.value)
                self._facts_changed()
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            returned = self._returned_items(value)
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements):
                for t, v in zip(elements, value.elements):
                    self._bind(t, v.value)
                return
            if returned is not None and not any(isinstance(t, cst.StarredElement) for t in elements):
                # `h, mask = to_dense_batch(x, batch)`: the items the project function returns as tensors,
                # for names the function binds nowhere else (PyG's gcn_norm re-binds `adj_t` to a
                # SparseTensor in another branch)
                for i, t in enumerate(elements):
                    if i in returned and isinstance(t, cst.Name) and self._bound_once(t.value):
                        self._add(t.value, ("unpacked", value))
            if self._is_tensor_sequence(value) or self.is_tensor(value):
                self._bind_items(elements, value)

    def _bind_items(self, elements: list, value: cst.BaseExpression) -> None:
        # unpacking a tensor walks its first dimension: `q, k, v = qkv.permute(2, 0, 3, 1, 4)`;
        # a project submodule's tuple says which of its items are no tensors
        not_tensors = self._non_tensor_items(value, elements)
        for i, t in enumerate(elements):
            if i in not_tensors:
                continue
            if isinstance(t, cst.Name):
                self._add(t.value, ("unpacked", value))
            elif isinstance(t, cst.StarredElement) and isinstance(t.value, cst.Name):
                self._add(t.value.value, ("unpacked", value))

    def _bound_once(self, name: str) -> bool:
        """Is ``name`` bound by one binding of the function and not a parameter (which counts as one)?"""
        if self._binding_counts is None:
            self._binding_counts = {n: len(values) for n, values in bindings(self.fn.node).items()}
        return self._binding_counts.get(name) == 1 and name not in self._param_names

    def _returned_items(self, value: cst.BaseExpression) -> Optional[frozenset[int]]:
        """The positions where the project function ``value`` calls returns tensors, if it returns tuples."""
        if not (isinstance(value, cst.Call) and self.fn.item_calls):
            return None
        written = dotted(value.func)
        found = self.fn.item_calls.get(written) if written is not None else None
        return found[0] if found is not None else None

    def _non_tensor_items(self, value: cst.BaseExpression, targets: list) -> frozenset[int]:
        """Positions of ``targets`` that ``value``, a call of a project submodule whose forward returns
        a tuple of that length, surely does not fill with a tensor (``[(h, w)] * b``, a size)."""
        if not (self._submodule_call(value) and not any(isinstance(t, cst.StarredElement) for t in targets)):
            return frozenset()
        items = self.cls.submodule_items.get(value.func.attr.value)
        return items[1] if items is not None and items[0] == len(targets) else frozenset()

    def _is_tensor_sequence(self, value: cst.BaseExpression) -> bool:
        """``q, k, v = qkv.unbind(0)``; ``out, (h, c) = self.lstm(x)``; not ``B, N, C = x.shape``."""
        if isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute):
                if func.attr.value in ("unbind", "chunk", "split", "tensor_split", "unflatten", "sort", "topk",
                                       "max", "min", "median", "mode", "kthvalue", "qr", "svd", "eigh", "slogdet",
                                       "hsplit", "vsplit", "dsplit", "nonzero"):
                    return self.is_tensor(func.value) or self._torch_name(func.value)
                if isinstance(func.value, cst.Name) and func.value.value == "self" and self.cls is not None:
                    return func.attr.value in self.cls.submodules
            qual = resolve(func, self.aliases) or ""
            return torch_call_returns_tensor(qual) or qual in _SEQUENCE_TORCH or qual in ("torch.where", "torch.nonzero")
        return self.is_sequence(value)

    def is_sequence(self, expr: cst.BaseExpression) -> bool:
        """A tuple of tensors: ``x.split(2)``, ``torch.unbind(x, -1)``, ``torch.where(mask)``,
        ``x.nonzero(as_tuple=True)``, a name bound to one, or a slice of one."""
        if isinstance(expr, cst.Name):
            return expr.value in self.sequences
        known = self._sequence_memo.get(expr)
        if known is None:
            known = self._sequence_memo[expr] = self._is_sequence(expr)
        return known

    def _is_sequence(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.sequences
        if isinstance(expr, (cst.Tuple, cst.List)):  # `(h, h * 2)`: every item a tensor
            return bool(expr.elements) and all(
                isinstance(e, cst.Element) and self.is_tensor(e.value) for e in expr.elements)
        if isinstance(expr, cst.ListComp):
            # `[(s[0] // p, s[1] // p) for s in sizes]` over a tensor: each item a tensor or a tuple of
            # tensors (transformers' Mistral3 re-binds `image_sizes` so, then unpacks `h, w` from an item)
            elt = expr.elt
            return self.is_tensor(elt) or (isinstance(elt, cst.Tuple) and self._is_sequence(elt))
        if isinstance(expr, cst.Subscript):
            return self.is_sequence(expr.value) and _is_slice(expr)
        if not isinstance(expr, cst.Call):
            return False
        if (isinstance(expr.func, cst.Name) and expr.func.value in ("tuple", "list") and len(expr.args) == 1
                and isinstance(expr.args[0].value, (cst.GeneratorExp, cst.ListComp))):
            return self._is_sequence(cst.ListComp(elt=expr.args[0].value.elt, for_in=expr.args[0].value.for_in))
        if self._dict_method(expr, "values") is not None:
            return True
        func = expr.func
        if isinstance(func, cst.Attribute) and not (isinstance(func.value, cst.Name) and func.value.value == "self") and not self._module_path(func.value):
            method = func.attr.value
            if method in SEQUENCE_METHODS:
                return self.is_tensor(func.value)
            if method == "nonzero" and _as_tuple(expr):
                return self.is_tensor(func.value)
        qual = resolve(func, self.aliases) or ""
        if qual in _SEQUENCE_TORCH:
            return True
        if qual == "torch.where":
            return len(expr.args) == 1
        return qual == "torch.nonzero" and _as_tuple(expr)

    def _module_path(self, expr: cst.BaseExpression) -> bool:
        """``torch``, ``F``, ``torch.nn.functional``: a dotted name rooted at an import."""
        while isinstance(expr, cst.Attribute):
            expr = expr.value
        return isinstance(expr, cst.Name) and expr.value in self.aliases and expr.value not in self.names

    def _torch_name(self, expr: cst.BaseExpression) -> bool:
        return (resolve(expr, self.aliases) or "") == "torch"

    # -- re-binding ---------------------------------------------------------------------------------
    def _before_rebinding(self, name: cst.Name) -> Optional[bool]:
        """Is ``n`` a tensor at this read of a name that the function binds again? The read sees the
        bindings before it (``bindings.reaching_plain_values``): in ``n = torch.linspace(0, 1, n + 1)``
        the parameter (``n=50``: a Python int); in ``kv = [a, b]; if not kv: ...; kv = torch.cat(kv)``
        the list. None when that is not decidable that simply (see there)."""
        n = name.value
        values = self._bindings.get(n)
        if values is None or len(values) + (n in self._param_names) < 2:
            return None  # bound once: no history to follow (and no walk for most reads)
        earlier = self.reaching_values(name)
        if earlier is None:
            return None
        if n in self._tensor_params and any(value is PARAMETER for value in earlier):
            return True
        return any(self.is_tensor(value) for value in earlier if value is not PARAMETER)

    def reaching_values(self, name: cst.Name) -> Optional[list[cst.BaseExpression]]:
        """The plain bindings that can reach this read of a re-bound name (``PARAMETER`` among them
        when the parameter's own value can), or None when that is not known simply
        (``bindings.reaching_plain_values``).

        A binding that always runs before the read hides the earlier ones only when its value says
        what it is (a tensor, a Python value, a container: ``flags = flags.tolist()``). A value of
        unknown type (``attention_mask = outputs.attention_mask``) most often keeps the name's role,
        so the earlier bindings still count, as they do without flow."""
        reach = self.reaching(name)
        if reach is None:
            return None
        if reach.hidden and not self._says_what_it_is(reach.values[0]):
            return reach.hidden + reach.values
        return reach.values

    def reaching(self, name: cst.Name) -> Optional[Reaching]:
        """The plain bindings that reach this read of a name the function binds more than once
        (parameters count), as ``bindings.reaching_plain_values`` finds them; None otherwise."""
        n = name.value
        if len(self._bindings.get(n) or ()) + (n in self._param_names) < 2:
            return None
        if self._rebinding_reads is None:
            self._rebinding_reads = reaching_plain_values(self.fn.node)
        return self._rebinding_reads.get(name)

    def _says_what_it_is(self, value: cst.BaseExpression) -> bool:
        return (
            _python_valued(value) or isinstance(value, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp))
            or self.is_tensor(value) or self.is_sequence(value)
        )

    # -- guards ------------------------------------------------------------------------------------
    def guarded(self, name: cst.Name) -> Optional[str]:
        """What a guard around this read says (``guards.TENSOR``/``NOT_TENSOR``/``PYTHON``), or None."""
        if self._guards is None:
            self._guards = narrowed(self.fn.node, self.aliases, self._shape_like_names(), self._tensor_classes)
        return self._guards.get(name)

    def _shape_like_names(self) -> frozenset[str]:
        """Names that are never tensors, so an ``isinstance(name, torch.Tensor)`` branch is dead: a
        parameter annotated as something else (``size: int``), or a local whose every binding is a
        shape, a size or a Python number (``shape = x.shape``; ``shape = shape.tolist()``, a conversion
        of itself, does not count)."""
        fn = self.fn.node
        params = (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)
        out = {
            p.name.value for p in params  # `n: list[int] | torch.Tensor` may be a tensor: not dead
            if _annotation_says_tensor(p.annotation) is False and "Tensor" not in expression_code(p.annotation.annotation)
        }
        bound = []
        candidates: set[str] = set()  # names some Python value is assigned to: the others cannot count
        for target, value in self._pairs:
            names = [target] if isinstance(target, cst.Name) else (
                [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [])
            names = [n.value for n in names if isinstance(n, cst.Name)]
            valued = _python_valued(value)
            bound.append((names, value, valued))
            if valued:
                candidates.update(names)
        if not candidates:
            return frozenset(out)
        python: set[str] = set()
        other: set[str] = {p.name.value for p in params}
        for names, value, valued in bound:
            if candidates.isdisjoint(names):
                continue  # adds only to `other` names that are in no `python`
            attrs = {id(a.attr) for a in (value, *iter_nodes(value, (cst.Attribute,))) if isinstance(a, cst.Attribute)}
            reads = {n.value for n in iter_nodes(value, (cst.Name,)) if id(n) not in attrs}
            for n in names:
                if n not in reads:
                    (python if valued else other).add(n)
        return frozenset(out | (python - other))

    # -- the predicate ---------------------------------------------------------------------------
    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            guard = self.guarded(expr)
            if guard is not None:  # under `isinstance(e, SparseTensor)`: that class, not claimed a tensor
                return guard == TENSOR
            before = self._before_rebinding(expr)
            if before is not None:
                return before
            return expr.value in self.names
        known = self._tensor_memo.get(expr)
        if known is None:
            known = self._tensor_memo[expr] = self._is_tensor(expr)
        return known

    def _is_tensor(self, expr: cst.BaseExpression) -> bool:
        # exact types (libcst has no subclasses of these; isinstance against its ABCs goes through ABCMeta)
        kind = type(expr)
        if kind is cst.Name:
            return expr.value in self.names
        if kind is cst.Attribute:
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
        if kind is cst.Call:
            if self._dict_method(expr, "get") is not None or self._dict_method(expr, "pop") is not None:
                return True
            return self._call_is_tensor(expr)
        if kind is cst.BinaryOperation:
            return self.is_tensor(expr.left) or self.is_tensor(expr.right)
        if kind is cst.UnaryOperation:
            return not isinstance(expr.operator, cst.Not) and self.is_tensor(expr.expression)
        if kind is cst.Comparison:
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons):
                return False
            return self.is_tensor(expr.left) or any(self.is_tensor(c.comparator) for c in expr.comparisons)
        if kind is cst.Subscript:
            if isinstance(expr.value, cst.Name) and expr.value.value in self.tensor_dicts:
                return True
            if self.is_sequence(expr.value):
                return not _is_slice(expr)  # parts[0] is a tensor, parts[1:] a tuple
            value = expr.value
            if isinstance(value, cst.Name) and value.value in self._module_outputs and _first_item(expr):
                return True  # outputs[0] of `outputs = self.model(...)` (outputs[1] may be a tuple of hidden states)
            return self.is_tensor(expr.value) or self._is_tensor_sequence(expr.value)
        if kind is cst.IfExp:
            return self.is_tensor(expr.body) or self.is_tensor(expr.orelse)
        if kind is cst.BooleanOperation:  # `a and b` is one of its operands (torch 2.13: `if y:`
            return self.is_tensor(expr.left) or self.is_tensor(expr.right)  # on `y = s > 0 and m > 0` breaks)
        return False

    def _call_is_tensor(self, call: cst.Call) -> bool:
        func = call.func
        if self.fn.passthrough_calls and isinstance(func, (cst.Name, cst.Attribute)):
            through = self.fn.passthrough_calls.get(dotted(func) or "")
            if through is not None:  # `default(causal, self.causal)`: a tensor when a returned argument is one
                return any(self.is_tensor(arg) for arg in _arguments_for(call, *through))
        if self.fn.tensor_calls and isinstance(func, (cst.Name, cst.Attribute)):
            written = dotted(func)
            if written is not None and written in self.fn.tensor_calls:
                return True  # a project helper that returns a tensor (fusionlint.project.model)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                return self.cls is not None and method in self.cls.submodules  # self.lin(x)
            if not self._module_path(receiver):
                if method in SEQUENCE_METHODS or not is_tensor_api(method):
                    return False  # x.split(2) is a tuple; cache.get_seq_length() is no tensor method
                if method == "nonzero" and _as_tuple(call):
                    return False
            if self.is_tensor(receiver):
                return method not in NON_TENSOR_METHODS
            if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name):
                # self.blocks[i](x) is a Subscript call; self.proj.forward(x)
                if receiver.value.value == "self" and self.cls is not None and method == "forward":
                    return receiver.attr.value in self.cls.submodules
        qual = resolve(func, self.aliases)
        if qual is None:
            return False
        if qual == "torch.where" and len(call.args) == 1:
            return False  # torch.where(cond): a tuple of index tensors
        if qual == "torch.nonzero" and _as_tuple(call):
            return False
        return torch_call_returns_tensor(qual)


_PYTHON_BUILTINS = frozenset({"int", "float", "bool", "str", "len", "list", "tuple", "dict", "range", "round"})


_EMPTY_MODULE = cst.Module(body=[])


# what can put a value into a dict other than `d[key] = value`: a dict changed through one of them is
# not known to hold only tensors
_DICT_CHANGING_METHODS = frozenset({"update", "setdefault", "__setitem__", "fromkeys", "__ior__"})


def _arguments_for(call: cst.Call, params: tuple[str, ...], wanted: tuple[str, ...]) -> list[cst.BaseExpression]:
    """The arguments ``call`` passes for the parameters ``wanted`` (of ``params``, in order); a call
    with ``*args``/``**kwargs`` gives all its arguments."""
    if any(a.star for a in call.args):
        return [a.value for a in call.args]
    out = []
    positional = [a for a in call.args if a.keyword is None]
    for i, name in enumerate(params):
        if name not in wanted:
            continue
        if i < len(positional):
            out.append(positional[i].value)
        out.extend(a.value for a in call.args if a.keyword is not None and a.keyword.value == name)
    return out


def _dict_display(value: cst.BaseExpression) -> bool:
    """``{"a": x}`` or ``{}`` (no ``**other``), or ``dict()``."""
    if isinstance(value, cst.Dict):
        return all(isinstance(e, cst.DictElement) for e in value.elements)
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict"
            and not value.args)


def _short_code(node: cst.CSTNode) -> str:
    """``node``'s source on one line, cut as the messages cut code (``judge.short``)."""
    # imported here: fusionlint.analysis.judge imports this module
    from fusionlint.analysis.judge import short

    return short(_EMPTY_MODULE.code_for_node(node))


def _python_valued(value: cst.BaseExpression) -> bool:
    """``x.shape``, ``x.shape[1]``, ``x.size(0)``, ``len(xs)``, ``int(n)``, ``8``, ``[...]``: not a tensor;
    nor is arithmetic or a comparison of such values (diffusers' ``1.0 + 1.0 * (x.size(2) > 1)``)."""
    if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString, cst.List, cst.Tuple, cst.Dict)):
        return True
    if isinstance(value, cst.BinaryOperation):
        return _python_valued(value.left) and _python_valued(value.right)
    if isinstance(value, cst.UnaryOperation):
        return _python_valued(value.expression)
    if isinstance(value, cst.Comparison):
        return _python_valued(value.left) and all(_python_valued(c.comparator) for c in value.comparisons)
    if isinstance(value, cst.Subscript):
        return _python_valued(value.value)
    if isinstance(value, cst.Attribute):
        return value.attr.value in NON_TENSOR_ATTRS
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Attribute):
            return func.attr.value in NON_TENSOR_METHODS
        return isinstance(func, cst.Name) and func.value in _PYTHON_BUILTINS
    return False


def _first_item(sub: cst.Subscript) -> bool:
    """``x[0]``."""
    if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
        return False
    return int_literal(sub.slice[0].slice.value) == 0


def _is_slice(sub: cst.Subscript) -> bool:
    return len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Slice)


def _as_tuple(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "as_tuple":
            return not (isinstance(arg.value, cst.Name) and arg.value.value == "False")
    return False


def _literal_default(default: Optional[cst.BaseExpression]) -> bool:
    """``False``, ``1.0``, ``"mean"``: a default no tensor parameter has (``None`` is not one)."""
    if isinstance(default, cst.Name):
        return default.value in ("True", "False")
    if isinstance(default, cst.UnaryOperation):
        default = default.expression
    return isinstance(default, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString))
