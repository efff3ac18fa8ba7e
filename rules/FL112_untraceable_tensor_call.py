"""FL112 untraceable-tensor-call: tensor methods and torch calls that Dynamo refuses to trace."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.analysis.init_facts import InitValue
from fusionlint.analysis.module_init import PARAM_MODULES, compiled_module_init, is_explicit_module_init, makes_parameters, trace_end
from fusionlint.analysis.names import dotted, through_aliases
from fusionlint.analysis.project import is_torch_module_base
from fusionlint.analysis.context import LINE_REFS
from fusionlint.analysis.walk import iter_nodes
from fusionlint.rule import Effect, Invalid, Rule
from fusionlint.project.breaks import SURE_CALLS, SURE_METHODS
from fusionlint.semantic.frame_split import after_break, header_nodes, name_events

# Tensor method -> (graph-break id measured on torch 2.13 CPU, what Dynamo says)
_METHODS = {
    "is_inference": ("GB0045", "`Tensor.is_inference()` is not supported"),
    "requires_grad_": ("GB0125", "changing `requires_grad` is not supported"),
    "resize_": ("GB0126", "`Tensor.resize_()` is not supported"),
    "resize_as_": ("GB0127", "`Tensor.resize_as_()` is not supported"),
    "random_": ("GB0107", "`Tensor.random_()` is not supported"),
    "share_memory_": ("GB0117", "`Tensor.share_memory_()` is not supported"),
    "retain_grad": ("GB0108", "`Tensor.retain_grad()` does not work with AOTDispatcher"),
    "backward": ("GB0123", "`Tensor.backward()` is not traced"),
    "to_sparse": ("GB0015", "a sparse tensor cannot be traced"),
    # the layout-specific conversions (PyG's GraphUNet: `(adj @ adj).to_sparse_coo()`, found by the recall bench)
    "to_sparse_coo": ("GB0015", "a sparse tensor cannot be traced"),
    "to_sparse_csr": ("GB0015", "a sparse tensor cannot be traced"),
    "to_sparse_csc": ("GB0015", "a sparse tensor cannot be traced"),
}
# Factory functions whose `requires_grad=True` Dynamo refuses (GB0225; measured: ones, tensor).
_FACTORIES = frozenset(
    f"torch.{n}"
    for n in (
        "tensor ones zeros empty full rand randn randint arange linspace logspace eye ones_like zeros_like "
        "empty_like full_like rand_like randn_like randint_like"
    ).split()
)


def _makes_parameters(node: cst.Call, ctx) -> Optional[str]:
    """The constructor as written (``nn.Linear``, ``nn.Parameter``) when ``node`` makes parameters, else None."""
    made = makes_parameters(node, ctx.file.aliases)
    return None if made is None else "nn.Parameter" if made == "nn.Parameter" else ctx.code(node.func)


def _is_super_init(node: cst.Call, ctx) -> bool:
    """``super().__init__()`` in a class whose base is torch's nn.Module (not a project base)."""
    func = node.func
    recv = func.value if isinstance(func, cst.Attribute) and func.attr.value == "__init__" else None
    return (
        isinstance(recv, cst.Call) and isinstance(recv.func, cst.Name) and recv.func.value == "super"
        and any(is_torch_module_base(b) for b in ctx.cls.bases)
    )


def _trace_end(ctx) -> Optional[cst.Call]:
    fn = ctx.function
    return ctx.memo(("module-init-trace-end", id(fn.node)), lambda: trace_end(fn, ctx.file.aliases))


def _built_in(ctx) -> str:
    """Where the module whose ``__init__`` is traced is built: the frame before ``__init__`` in the chain."""
    frames = ctx.frames
    return f"`{frames[-2]}`" if len(frames) > 1 else "compiled code"


# Tensor attributes with C setters Dynamo does not model (measured GB0058: `.real`, `.imag`).
_SETTER_ATTRS = frozenset({"real", "imag"})
# torch._check variants whose message Dynamo must turn into a callable it can trace (measured GB9840 for
# a string message, GB9158 for a lambda reading a tensor; no message, or a lambda over Python ints: no break).
_CHECKS = frozenset({"torch._check", "torch._check_value"})
# TorchScript wrappers: a module they return runs in the TorchScript runtime, which Dynamo cannot trace.
_JIT_WRAPPERS = frozenset({"torch.jit.script", "torch.jit.freeze"})
# torch.Generator methods that change or read its state (measured GB7650 for `manual_seed`).
# torch functions whose tensors Dynamo cannot make: measured, torch 2.13 CPU
_UNTRACEABLE_FACTORIES = {
    "torch.nested.nested_tensor": ("GB0090", "a strided nested tensor cannot run on fake tensors"),
    "torch.sparse_coo_tensor": ("GB0007", "Dynamo skips the sparse constructor"),
    "torch.sparse_csr_tensor": ("GB0007", "Dynamo skips the sparse constructor"),
}
# In-place view ops: on a tensor the compiled function was given, Dynamo refuses them (measured, torch 2.13
# CPU: `x.unsqueeze_(0)`, `squeeze_()`, `transpose_(0, 1)`, `t_()`, `swapdims_(0, 1)` on a forward
# argument -> GB0148); on a tensor made inside they trace
# Random-number-generator state: Dynamo skips these torch functions (measured, torch 2.13 CPU; the form of the
# reversible blocks that reformer-pytorch, axial-attention and other lucidrains packages copy, which record the
# CPU generator's state in forward: `self.cpu_state = torch.get_rng_state()`)
_RNG_STATE_CALLS = {
    **dict.fromkeys(("torch.get_rng_state", "torch.random.get_rng_state", "torch.set_rng_state",
                     "torch.random.set_rng_state", "torch.manual_seed", "torch.random.manual_seed",
                     "torch.utils.checkpoint.get_device_states", "torch.utils.checkpoint.set_device_states"), "GB0007"),
    "torch.random.fork_rng": "GB0208",
    "torch.initial_seed": "GB0208",
}
_INPLACE_VIEWS = frozenset({"unsqueeze_", "squeeze_", "transpose_", "t_", "swapdims_", "swapaxes_", "as_strided_"})
# torch.distributed collectives: with async_op=True Dynamo refuses them (measured GB0172 for all_reduce, and
# GB0156 at the returned work's `.wait()`)
_COLLECTIVES = frozenset(
    f"torch.distributed.{n}"
    for n in (
        "all_reduce all_gather all_gather_into_tensor reduce_scatter reduce_scatter_tensor broadcast all_to_all "
        "all_to_all_single reduce gather scatter barrier"
    ).split()
)
# the higher-order op behind nested_compile_region, which Dynamo refuses to be handed directly
_INVOKE_SUBGRAPH = frozenset({
    "torch._higher_order_ops.invoke_subgraph.invoke_subgraph", "torch._higher_order_ops.invoke_subgraph",
})
_SPARSE_CONSTRUCTORS = frozenset({"torch.sparse_coo_tensor", "torch.sparse_csr_tensor"})
_GENERATOR_METHODS = frozenset({"manual_seed", "seed", "set_state", "get_state", "initial_seed"})
_COMPARISONS = (cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def _next_break(item, breaking: frozenset[str], ctx) -> Optional[cst.Call]:
    """The first call of ``item`` (a statement, or a part of one as ``after_break`` gives it) that surely
    breaks the graph: a callee whose every call breaks (``breaking``: callees as written), a sparse
    constructor, or a sure break of ``fusionlint.project.breaks`` (``print(...)``, ``t.item()``). Of a compound
    statement only the header counts (its test, iterable or items): its blocks run on some paths."""
    node = item[0] if isinstance(item, tuple) else item
    if isinstance(node, cst.BaseCompoundStatement):
        parts = header_nodes(node)
    else:
        parts = [node]
    for part in parts:
        for call in ([part] if isinstance(part, cst.Call) else []) + list(iter_nodes(part, (cst.Call,))):
            func = call.func
            if (dotted(func) or "") in breaking or ctx.qualname(func) in SURE_CALLS:
                return call
            if isinstance(func, cst.Attribute) and func.attr.value in SURE_METHODS and ctx.is_tensor(func.value):
                return call
    return None


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _is_true_keyword(call: cst.Call, name: str) -> bool:
    flag = _keyword(call, name)
    return flag is not None and _is_true(flag)


class UntraceableTensorCall(Rule):
    code = "FL112"
    name = "untraceable-tensor-call"
    message = "tensor call that Dynamo does not trace in compiled code: graph break"
    effects = (Effect.GRAPH_BREAK,)
    triggers = (
        "is_inference", "requires_grad", "resize_", "random_", "share_memory_", "retain_grad", "backward",
        "Parameter", "repr(", "str(", "%s", "%d", "%f", "%r", "%.", "%i", "%g", "%e", "jit.isinstance", "torch.jit import", ".data", ".real", ".imag", "data_ptr", "to_sparse",
        "_check", "nested_tensor", "sparse_", "unsqueeze_", "squeeze_", "transpose_", "t_(", "swapdims_", "swapaxes_",
        "as_strided_", "jit.script", "jit.freeze", "Generator", ".__init__(self", "astype", "uniform_", "register_hook", "async_op", "invoke_subgraph", "Buffer",
        "rng_state", "manual_seed", "device_states", "fork_rng", "initial_seed",
        *PARAM_MODULES,
    )
    gb_ids = ("GB0007", "GB0045", "GB0046", "GB0125", "GB8985", "GB0126", "GB0127", "GB0107", "GB0117", "GB0108", "GB0123",
              "GB0206", "GB0225", "GB0264", "GB0119", "GB0569", "GB0056", "GB0058", "GB5976", "GB0015", "GB9840", "GB9158", "GB4695", "GB7650",
              "GB0059", "GB0208",
              "GB0090", "GB0148", "GB0250", "GB0110", "GB0100", "GB0172", "GB0017", "GB4841")
    measured_on = ("torch 2.13.0 CPU",)
    docs = """
## What it does
Flags, in code that `torch.compile` traces, tensor methods and torch calls that Dynamo does not
trace: `t.is_inference()`, `t.requires_grad_()` (not `requires_grad_(False)`), `t.requires_grad =
...`, `t.resize_(...)`, `t.resize_as_(...)`, `t.random_(...)`, `t.share_memory_()`,
`t.retain_grad()`, `t.backward()`, `t.to_sparse()` (and `.to_sparse_coo()`/`_csr()`/`_csc()`), `repr(t)`, `torch.is_inference_mode_enabled()`, `torch.jit.isinstance(...)`,
`nn.Parameter(...)`, torch.nn modules that make parameters (`nn.Linear(...)`, `nn.Conv2d(...)`,
`nn.LayerNorm(...)`...), in the `__init__` of a module built in compiled code the lines where its
trace breaks (`super().__init__()` and the first parameter-making call), torch factory functions called with `requires_grad=True`, `y.data = ...` on a
tensor created in the compiled code, `t.real = ...`/`t.imag = ...`, comparisons of
`t.data_ptr()`, `torch._check(cond, "message")` with a string message or a message lambda that
reads a tensor, `torch.Generator` state calls (`self.g.manual_seed(...)`), the global generator's state
(`torch.get_rng_state()`, `torch.set_rng_state(...)`, `torch.manual_seed(...)`, `torch.random.fork_rng(...)`,
`torch.initial_seed()`, `torch.utils.checkpoint.get_device_states(...)`), calls of a
submodule made with `torch.jit.script(...)`/`torch.jit.freeze(...)` in `__init__`, strided nested
tensors (`torch.nested.as_nested_tensor(...)` without `layout=torch.jagged`), `torch.distributed`
collectives with `async_op=True`, `invoke_subgraph(...)` called directly, `.astype(object)`,
`t.uniform_(**{"from": ...})`, a hook handle assigned to a `global`, and `self.pe = self.pe.to(...)`
for a buffer made with `nn.Buffer(...)`. `t.requires_grad_()` on a tensor made in the function is
flagged only when that tensor leaves it (returned, stored, handed to other code).

## Why is this bad?
Each one ends the graph. Measured with torch 2.13.0 on CPU (backend "eager", each call after
`x.relu()` in a compiled function; one break site each, at the call):

| call | graph-break id |
|---|---|
| `t.is_inference()` | GB0045 |
| `torch.is_inference_mode_enabled()` | GB0046 |
| `torch.jit.isinstance(t, torch.Tensor)`, `torch.jit.isinstance([1], List[int])` | GB0007 "Attempted to call function marked as skipped" |
| `t.requires_grad_()` on an input / on a tensor made in the function that leaves it (returned, stored on `self`, handed to other code) | GB0125 / GB8985 "intermediate leaked as output" |
| `t.requires_grad = True` | GB0206 |
| `t.resize_(32)`, `t.resize_as_(other)` | GB0126, GB0127 |
| `t.random_(0, 10)` | GB0107 |
| `t.share_memory_()` | GB0117 |
| `t.retain_grad()` | GB0108 |
| `loss.backward()` | GB0123 |
| `t.to_sparse()`, `t.to_sparse_coo()`, `t.to_sparse_csr()`, `t.to_sparse_csc()` | GB0015 "Attempted to wrap sparse Tensor" |
| `repr(t)` | GB0569 |
| `str(t)` | GB0059 "Failed to trace builtin operator" |
| `torch.nested.nested_tensor([h, h * 2])`, `torch.nested.as_nested_tensor([h, h * 2])` (not with `layout=torch.jagged`) | GB0090 |
| `self.pe = self.pe.to(h.device)` (or `.to(dtype=h.dtype)`) in forward, with `self.pe = nn.Buffer(...)` in `__init__` (transformers' CTRL) | GB4841 "Unsupported python_type() call" |
| `invoke_subgraph(body, "sub", h)` (`from torch._higher_order_ops.invoke_subgraph import invoke_subgraph`) | GB0017, GB0208 |
| `dist.all_reduce(h, async_op=True)` (any `torch.distributed` collective with `async_op=True`; gloo, one process) | GB0172, then GB0156 at `work.wait()` |
| `torch.sparse_coo_tensor(idx, vals, (2, 2))` | GB0007 |
| `s = torch.sparse_coo_tensor(...)`, then the first read of `s` (the frame resumed after the constructor's break gets the sparse tensor as an input; PyG's `to_torch_csr_tensor` `return adj`) | GB0015 |
| `a = f(...)` where `f` breaks and returns a sparse tensor it made (`return torch.sparse_coo_tensor(...)`), then the resumed frame's next graph break (`s = f(...)` again) before any read of `a`: Dynamo wraps every live local there (PyG's `ASAPooling`, `tests/test_sparse_carry.py`); it then runs the rest of the function eagerly, so a `.to_sparse_csr()` after it records nothing | GB0015 at that break |
| `x.unsqueeze_(0)`, `x.squeeze_()`, `x.transpose_(0, 1)`, `x.t_()`, `x.swapdims_(0, 1)` on a forward argument (not on a tensor made inside), also as the variable of `for x in (a, b):` over arguments | GB0148 (in the loop, then GB7000: the frame runs eagerly) |
| `"v=%s" % t`, `"%.3f" % t` (a tensor formatted with `%`) | GB0208; Dynamo then runs the whole frame eagerly |
| `nn.Parameter(torch.ones(8))` | GB0264 |
| `torch.ones(8, requires_grad=True)`, `torch.tensor([...], requires_grad=True)` | GB0225 |
| `nn.Linear(8, 8)(h)` (also with `bias=False`), `nn.Conv2d(1, 1, 3)(h)`, `nn.LayerNorm(8)(h)` built in forward | GB0264 |
| `Proj(4)(h)` built in forward (or in a method it calls, in any file), `Proj`'s `__init__` making parameters (parameter-free project modules trace: 0 breaks) | in `Proj.__init__`: GB0264 at the first `nn.Linear(...)`, GB0119 "Uninitialized nn.Module" at `super().__init__()`; the rest of `__init__` runs eagerly (no break at a second `nn.Linear`) |
| `nn.Module.__init__(self)` in the `__init__` of a module built in compiled code | GB0007, then GB0119, at that line (with or without parameters) |
| `y = h * 3; y.data = h * 2` | GB0056 "Failed to mutate tensor data attribute" |
| `c.real = h`, `c.imag = h` | GB0058 "Failed to set tensor attribute" |
| `y.data_ptr() == h.data_ptr()`, `!=` | GB5976 "Data pointer comparison" |

| `torch._check(cond, "need rows")`, `torch._check_value(cond, "...")`, an f-string message | GB9840 "Can't extract message from torch._check*()" |
| `torch._check(cond, lambda: f"got {h.shape}")` (the lambda reads the tensor `h`) | GB9158 "Can't convert torch._check*() message closure" |
| `self.g.manual_seed(1)` with `self.g = torch.Generator()` | GB7650 "torch.Generator method" |
| `torch.get_rng_state()`, `torch.set_rng_state(s)`, `torch.manual_seed(0)` (and their `torch.random.` names), `torch.utils.checkpoint.get_device_states(x)` / `set_device_states(...)` | GB0007; reformer-pytorch's and axial-attention's reversible blocks (`self.cpu_state = torch.get_rng_state()` in train mode) on the recall bench |
| `with torch.random.fork_rng(devices=[]):`, `x * torch.initial_seed()` | GB0208 "torch.* op returned non-Tensor" |
| `self.scripted(h)` with `self.scripted = torch.jit.script(nn.Linear(8, 8))` | GB4695; the frame falls back to eager (0 compiled graphs) |
| `a.astype(object)`, `a.astype("O")` on a numpy array | GB0250 "ndarray.astype(object)" |
| `t.uniform_(**{"from": 0.0, "to": 1.0})` | GB0110 "Tensor.uniform_ op called with `from` keyword" |
| `global HANDLE` then `HANDLE = self.w.register_hook(fn)` | GB0100 "Storing Tensor hook handle in globals"; the frame falls back to eager |

`tests/test_gb_forms.py` re-measures the rows from `nn.Linear(...)` down. Not flagged, because they
measured no break: `torch._check(cond)`, `torch._check(cond, lambda: "need rows")`, a lambda over a
Python int (`rows = h.shape[0]; torch._check(rows > 0, lambda: f"got {rows}")`), `.data =` on a forward input, a parameter or a buffer (`self.w.data = ...`), parameter-free
modules built in forward (`nn.Softmax(dim=-1)(h)`, `nn.Upsample(...)`, `nn.Dropout(...)`), and
`t.data_ptr()` read without a comparison.

`y = torch.ones(4, 8); y.requires_grad_()` with `y` only used to compute other tensors (`h * y`, `y.sum()`), `a.astype(np.float32)`,
`t.uniform_(0.0, to=1.0)`, `self.pe = self.pe.to(h.device)` for a buffer made with `register_buffer`, `t.requires_grad_(False)`, `torch.zeros(8, requires_grad=False)`, the builtin `isinstance(t, torch.Tensor)`,
`torch.jit.is_scripting()` and `torch.jit.annotate(...)` do not break (measured). The
fixture (`fixtures/FL112_untraceable_tensor_call`, Linear → relu → `* torch.ones(32,
requires_grad=True)` → Linear → sigmoid) shows 1 break site at the factory call and 2 compiled
regions per forward; with the gate as an `nn.Parameter` made in `__init__`, no break and 1 region.

## Example
```python
def forward(self, x):
    h = self.a(x).relu()
    gate = torch.ones(h.shape[-1], requires_grad=True)
    return self.b(h * gate)
```

## Use instead
```python
def __init__(self):
    ...
    self.gate = nn.Parameter(torch.ones(32))   # create learnable tensors once, in __init__

def forward(self, x):
    h = self.a(x).relu()
    return self.b(h * self.gate)
```
Call `backward()`, `retain_grad()` and `share_memory_()` outside the compiled function. Replace
`torch.jit.isinstance(x, torch.Tensor)` with the builtin `isinstance(x, torch.Tensor)`.

## Fix safety
No automatic fix: the replacement depends on what the call was for.

## PyTorch reference
GB0225 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0225.html ·
GB0264 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0264.html ·
GB0123 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0123.html ·
GB0056 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0056.html ·
GB5976 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb5976.html ·
GB9840 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb9840.html ·
GB4695 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4695.html
"""
    VALID = [
        # an in-place view op on a tensor made inside, or on an argument's re-bound name
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
        "    def forward(self, x, y):\n        h = x * 2\n        h.unsqueeze_(0)\n        y = y + 1\n"
        "        y.t_()\n        for z in (h, y):\n            z.squeeze_()\n        return h, y\n",
        # modules built in __init__ (not compiled) and a compiled method of ModuleList elements that builds
        # a parameter-free module (its __init__ traces: measured, 0 breaks)
        "import torch\nfrom torch import nn\n\n\nclass Gate(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.act = nn.Softmax(dim=-1)\n\n    def forward(self, x):\n        return self.act(x)\n\n\n"
        "class Layer(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.gate = Gate()\n"
        "        self.lin = nn.Linear(8, 8)\n\n    def reset(self):\n        self.gate = Gate()\n\n    def forward(self, x):\n"
        "        return self.gate(self.lin(x))\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.layers = nn.ModuleList([Layer() for _ in range(2)])\n\n    def forward(self, x):\n"
        "        for layer in self.layers:\n            layer.reset()\n            x = layer(x)\n        return x\n",
        # a project module without parameters built in forward traces (measured, torch 2.13 CPU: 0 breaks)
        "import torch\nfrom torch import nn\n\n\nclass Proj(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.k = d\n\n    def forward(self, x):\n        return x\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        return Proj(4)(x)\n",
        # torch._check with a callable message over Python values (measured: no break)
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n        rows = x.shape[0]\n"
        "        torch._check(rows > 0, lambda: f'got {rows}')\n        torch._check(rows < 99)\n        return x\n",
        # `.data =` on an input and a parameter, parameter-free modules, a data_ptr read (measured: no break)
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.ones(8))\n\n    def forward(self, x):\n        x.data = x * 2\n"
        "        self.w.data = self.w.data * 0.5\n        p = x.data_ptr()\n"
        "        return nn.Softmax(dim=-1)(x) + nn.LayerNorm(8, elementwise_affine=False)(x)\n",
        # requires_grad_(False) and requires_grad=False do not break; nor does requires_grad_() on a tensor made
        # here that only feeds other tensors, nor a numeric astype, nor uniform_ without `from`, nor a local hook handle
        "import numpy as np\nimport torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        y = torch.ones(4, 8)\n        y.requires_grad_()\n        a = np.ones(3).astype(np.float32)\n"
        "        z = torch.empty(4, 8)\n        z.uniform_(0.0, to=1.0)\n        handle = x.register_hook(lambda g: g)\n"
        "        return x * y + y.sum() + z\n",
        # a buffer registered with register_buffer may be moved onto itself
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('pe', torch.ones(8), persistent=False)\n\n    def forward(self, x):\n"
        "        self.pe = self.pe.to(device=x.device, dtype=x.dtype)\n        return x * self.pe\n",
        # jagged nested tensors trace; a blocking collective traces
        "import torch\nimport torch.distributed as dist\nfrom torch import nn\n\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        nt = torch.nested.as_nested_tensor([x, x * 2], layout=torch.jagged)\n"
        "        dist.all_reduce(x, async_op=False)\n        return x\n",
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        y = x.relu() * 2\n        y.requires_grad_(False)\n        return y * torch.zeros(8, requires_grad=False)\n",
        # parameters created in __init__ (not compiled)
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.w = nn.Parameter(torch.ones(8))\n\n    def forward(self, x):\n        return x * self.w\n",
        # backward in the training loop
        "import torch\n\ndef train_step(model, x):\n    loss = model(x).sum()\n    loss.backward()\n    return loss\n",
        # the builtin isinstance and torch.jit.is_scripting() trace (measured)
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x, e=None):\n"
        "        if e is not None and isinstance(e, torch.Tensor) and not torch.jit.is_scripting():\n"
        "            x = x + e\n        return x\n",
        # a method of a non-tensor object with the same name
        "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        self.sched.random_(3)\n        return x\n",
    ]
    INVALID = [
        # the reversible blocks' RNG bookkeeping (reformer-pytorch, axial-attention), in a method forward calls
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Deterministic(nn.Module):\n"
            "    def record_rng(self):\n        self.cpu_state = torch.get_rng_state()\n\n"
            "    def forward(self, x, record_rng=False):\n        if record_rng:\n            self.record_rng()\n"
            "        return x * 2\n",
            line=7,
        ),
        # a sparse tensor returned by a function that breaks, still live at the next break of the resumed frame
        # (PyG's ASAPooling, measured: GB0015 at line 11, the second call), then read in code Dynamo runs eagerly
        Invalid(
            "import torch\nfrom torch import nn\n\ndef to_coo(i, v):\n    return torch.sparse_coo_tensor(i, v, (4, 4))\n\n"
            "class M(nn.Module):\n    def forward(self, x, i):\n        a = to_coo(i, x)\n        y = x * 2\n"
            "        b = to_coo(i, y)\n        return y, a, b\n",
            line=5,
            count=3,
        ),
        # an in-place view op on an argument, directly or through a loop over arguments
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, a, b):\n        a.unsqueeze_(0)\n        for x in (a, b):\n"
            "            if x.dim() > 1:\n                x.squeeze_(-1)\n        return a * b\n",
            line=5,
            count=2,
        ),
        # a project module whose __init__ makes parameters, built in forward (measured, torch 2.13 CPU:
        # GB0264 at the first nn.Linear of its __init__, then GB0119 "Uninitialized nn.Module" at
        # super().__init__(); the second nn.Linear runs eagerly: no break there)
        Invalid("import torch\nfrom torch import nn\n\n\nclass Proj(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.lin = nn.Linear(d, d)\n        self.out = nn.Linear(d, d)\n\n    def forward(self, x):\n        return x\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        return Proj(4)(x)\n", count=2),
        Invalid("import torch\nfrom torch import nn\n\n\nclass Proj(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.lin = nn.Linear(d, d)\n\n    def forward(self, x):\n        return x\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        return Proj(4)(x)\n", line=7),
        # the same reached through a method of each element of an nn.ModuleList (transformers' big_bird:
        # `for layer in self.layer: layer.set_attention_type(...)` builds a new attention module)
        Invalid(
            "import torch\nfrom torch import nn\n\n\nclass Attn(nn.Module):\n    def __init__(self):\n        nn.Module.__init__(self)\n"
            "        self.q = nn.Linear(8, 8)\n\n    def forward(self, x):\n        return self.q(x)\n\n\n"
            "class Layer(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.attn = Attn()\n\n"
            "    def switch(self):\n        self.attn = Attn()\n\n    def forward(self, x):\n        return self.attn(x)\n\n\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.layers = nn.ModuleList([Layer() for _ in range(2)])\n\n    def forward(self, x):\n"
            "        for i, layer in enumerate(self.layers):\n            layer.switch()\n        return x\n",
            line=7,
            count=1,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        y = x.relu()\n        y.data = x * 2\n        c = torch.complex(x, x)\n        c.real = x\n"
            "        if y.data_ptr() == x.data_ptr():\n            y = y + 1\n        return nn.Linear(8, 8)(y)\n",
            count=4,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.scripted = torch.jit.script(nn.Linear(8, 8))\n        self.g = torch.Generator().manual_seed(0)\n\n"
            "    def forward(self, x):\n        torch._check(x.shape[0] > 0, 'need rows')\n"
            "        torch._check(x.shape[0] > 0, lambda: f'got {x.shape}')\n        self.g.manual_seed(1)\n"
            "        return self.scripted(x)\n",
            count=4,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        gate = torch.ones(x.shape[-1], requires_grad=True)\n        return x * gate\n",
            line=6,
        ),
        # MONAI's basic_unet: `torch.jit.isinstance` behind an `is not None` test
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x, x_e=None):\n"
            "        if x_e is not None and torch.jit.isinstance(x_e, torch.Tensor):\n            x = x + x_e\n"
            "        return x\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        w = nn.Parameter(torch.ones(8))\n        return x * w\n",
            line=6,
        ),
        # `bias=False` keeps the weight (measured, torch 2.13 CPU: GB0264 for nn.Linear(8, 8, bias=False))
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        return nn.Linear(8, 8, bias=False)(x)\n",
            line=6,
        ),
        Invalid(
            "import torch\n\n@torch.compile\ndef step(model, x):\n    loss = torch.relu(x).sum()\n    loss.backward()\n"
            "    return loss\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        if x.is_inference():\n            return x\n        return x + 1\n",
            line=6,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        y = x * 2\n        y.requires_grad = True\n        return y\n",
            line=7,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        y = x.relu()\n        y.requires_grad_()\n        return repr(y)\n",
            count=2,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        y = torch.ones(4, 8)\n        y.requires_grad_()\n        return x * 2, y\n",
            line=7,
        ),
        Invalid(
            "import numpy as np\nimport torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        labels = np.arange(3).astype(object)\n        z = torch.empty(4, 8)\n"
            "        z.uniform_(**{'from': 0.0, 'to': 1.0})\n        return x * z\n",
            count=2,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nHANDLE = None\n\nclass M(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.w = nn.Parameter(torch.ones(8))\n\n    def forward(self, x):\n"
            "        global HANDLE\n        HANDLE = self.w.register_hook(lambda g: g * 2)\n        return x * self.w\n",
            line=13,
        ),
        Invalid(
            "import torch\nimport torch.distributed as dist\nfrom torch import nn\n\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        nt = torch.nested.as_nested_tensor([x, x * 2])\n"
            "        work = dist.all_reduce(x, async_op=True)\n        work.wait()\n        return x\n",
            count=2,
        ),
        Invalid(
            "import torch\nfrom torch import nn\n\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.pe = nn.Buffer(torch.ones(8), persistent=False)\n\n    def forward(self, x):\n"
            "        self.pe = self.pe.to(device=x.device, dtype=x.dtype)\n        return x * self.pe\n",
            line=10,
        ),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        qual = ctx.qualname(func) or ""
        if qual == "torch.jit.isinstance":
            ctx.report(
                node,
                "`torch.jit.isinstance(...)` in compiled code: Dynamo skips this TorchScript helper: graph break "
                "(GB0007); use the builtin `isinstance` under torch.compile",
            )
            return
        if qual in _CHECKS:
            self._check_message(node, qual, ctx)
            return
        if qual == "torch.nested.as_nested_tensor" and not _jagged(node, ctx):
            # measured, torch 2.13 CPU: the strided default -> GB0090; layout=torch.jagged traces
            ctx.report(node, "`torch.nested.as_nested_tensor(...)` with the default strided layout in compiled code: a "
                             "strided nested tensor cannot run on fake tensors: graph break (GB0090); pass "
                             "`layout=torch.jagged`, or keep padded tensors")
            return
        if qual in _INVOKE_SUBGRAPH:
            # measured, torch 2.13 CPU: GB0017 (and GB0208) at the call
            ctx.report(node, "`invoke_subgraph(...)` called directly in compiled code: Dynamo does not support it: graph "
                             "break (GB0017); mark the function with `@torch.compiler.nested_compile_region` instead")
            return
        if qual in _COLLECTIVES and _is_true_keyword(node, "async_op"):
            ctx.report(node, f"`{ctx.code(node.func)}(..., async_op=True)` in compiled code: torch.compile does not "
                             "support asynchronous collectives: graph break (GB0172), and another at the work's "
                             "`.wait()`; call it with `async_op=False` (the default) inside the compiled region")
            return
        if qual in _UNTRACEABLE_FACTORIES:
            gb, why = _UNTRACEABLE_FACTORIES[qual]
            ctx.report(node, f"`{qual}(...)` in compiled code: {why}: graph break ({gb}); build it outside the "
                             "compiled region, or keep dense/padded tensors inside it")
            return
        if qual in _RNG_STATE_CALLS:
            ctx.report(node, f"`{qual}(...)` in compiled code reads or sets the random generator's state, which Dynamo "
                             f"does not trace: graph break ({_RNG_STATE_CALLS[qual]}); record or restore it outside the "
                             "compiled region (torch.utils.checkpoint handles the RNG state of recomputed code itself)")
            return
        if isinstance(func, cst.Attribute) and func.attr.value in _INPLACE_VIEWS and _entry_argument(func.value, ctx):
            ctx.report(
                node,
                f"`{ctx.code(func.value)}.{func.attr.value}()` changes the view of a tensor the compiled function was "
                f"given: Dynamo refuses in-place view ops on its inputs: graph break (GB0148); use the out-of-place "
                f"`{ctx.code(func.value)} = {ctx.code(func.value)}.{func.attr.value[:-1]}(...)`",
                tensor=func.value,
            )
            return
        if compiled_module_init(ctx.function) and self._module_init(node, ctx):
            return
        if isinstance(func, cst.Attribute) and func.attr.value in _GENERATOR_METHODS and _generator(func.value, ctx):
            # measured, torch 2.13 CPU: `self.g.manual_seed(1)` in forward -> GB7650
            ctx.report(
                node,
                f"`torch.Generator.{func.attr.value}()` in compiled code is a stateful RNG call Dynamo cannot trace: "
                "graph break (GB7650); seed the generator outside the compiled region",
            )
            return
        jit = _jit_submodule(func, ctx)
        if jit is not None:
            # measured, torch 2.13 CPU: calling a `torch.jit.script(nn.Linear(...))` submodule from forward ->
            # GB4695, and the whole frame falls back to eager (0 compiled graphs)
            ctx.report(
                node,
                f"`{ctx.code(func)}` is a `{jit}(...)` module: it runs in the TorchScript runtime, which Dynamo "
                "cannot trace: graph break (GB4695), and the calling frame runs eagerly; keep the eager module "
                "for torch.compile",
            )
            return
        if qual == "torch.is_inference_mode_enabled":
            ctx.report(node, "`torch.is_inference_mode_enabled()` in compiled code: Dynamo does not trace it: graph break (GB0046)")
            return
        made = _makes_parameters(node, ctx)
        if made == "nn.Parameter":
            ctx.report(
                node,
                "`nn.Parameter(...)` created in compiled code: Dynamo does not trace the constructor: graph break "
                "(GB0264); create parameters in `__init__`",
            )
            return
        if made is not None:
            ctx.report(
                node,
                f"`{made}(...)` built in compiled code creates its parameters with `nn.Parameter`, which "
                "Dynamo does not trace: graph break (GB0264), and its weights are new random ones each time it runs; "
                "build the module in `__init__`",
            )
            return
        if qual in _FACTORIES:
            if _is_true_keyword(node, "requires_grad"):
                ctx.report(
                    node,
                    f"`{qual}(..., requires_grad=True)` in compiled code: Dynamo does not trace a factory with "
                    "requires_grad=True: graph break (GB0225); create the tensor in `__init__` (as an nn.Parameter)",
                )
            return
        if qual == "repr" and len(node.args) == 1 and ctx.is_tensor(node.args[0].value):
            ctx.report(node, "`repr(<tensor>)` in compiled code needs the tensor's values: graph break (GB0569)",
                       tensor=node.args[0].value)
            return
        if qual == "str" and len(node.args) == 1 and node.args[0].keyword is None and ctx.is_tensor(node.args[0].value):
            ctx.report(node, "`str(<tensor>)` in compiled code needs the tensor's values: graph break (GB0059); format "
                             "shapes or Python numbers, or build the text outside the compiled code",
                       tensor=node.args[0].value)
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "astype" and node.args and _object_dtype(node.args[0].value):
            # measured, torch 2.13 CPU: `np.ones(3).astype(object)` and `.astype("O")` -> GB0250
            ctx.report(node, "`.astype(object)` in compiled code: torch has no object dtype for a traced numpy array: "
                             "graph break (GB0250); keep object arrays outside the compiled region")
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "uniform_" and _from_keyword(node):
            ctx.report(node, "`.uniform_()` called with the `from` keyword (through `**{...}`): Dynamo does not support it: "
                             "graph break (GB0110); pass the bounds positionally (`t.uniform_(low, high)`)")
            return
        if not isinstance(func, cst.Attribute) or func.attr.value not in _METHODS:
            return
        method = func.attr.value
        if method == "requires_grad_" and node.args and not _is_true(node.args[0].value):
            return  # requires_grad_(False) traces (measured); a variable: cannot tell
        if not ctx.is_tensor(func.value):
            return
        if (method == "requires_grad_" and isinstance(ctx.parent, cst.Expr) and _intermediate(func.value, ctx)
                and _stays_local(func.value.value, ctx)):
            # measured, torch 2.13 CPU: on a tensor made in the function it breaks (GB8985 "intermediate leaked
            # as output") when that tensor itself leaves the function (returned, stored on `self`); used only
            # to compute other tensors (`h * y`, `y.sum()`), it traces
            return
        gb, why = _METHODS[method]
        ctx.report(node, f"`.{method}()` on a tensor in compiled code: {why} under torch.compile: graph break ({gb})",
                   tensor=func.value)

    def _module_init(self, node: cst.Call, ctx) -> bool:
        """In the ``__init__`` of a module built in compiled code (fusionlint.analysis.module_init): the
        trace breaks at ``nn.Module.__init__(self)`` or at the first parameter-making call, then at
        ``super().__init__()``; what follows runs eagerly (the engine skips it). True when reported."""
        end = _trace_end(ctx)
        if end is None:
            return False  # a parameter-free module: its __init__ traces (measured: 0 breaks)
        owner = ctx.function.qualname
        if node is end and is_explicit_module_init(node, ctx.file.aliases):
            # measured, torch 2.13 CPU: GB0007 then GB0119 on this line, with or without parameters after it
            ctx.report(
                node,
                f"`{ctx.code(node.func)}(self)` in `{owner}`, which runs in compiled code (the module is built in "
                f"{_built_in(ctx)}): Dynamo does not trace torch's `nn.Module.__init__` called directly: graph "
                "break (GB0007, then GB0119 \"Uninitialized nn.Module\"), and the rest of `__init__` runs eagerly; "
                "build the module once, outside compiled code (in the owner's `__init__`)",
            )
            return True
        if node is end:
            ctx.report(
                node,
                f"`{_makes_parameters(node, ctx)}(...)` in `{owner}`, which runs in compiled code (the module is built in "
                f"{_built_in(ctx)}): its parameters are made with `nn.Parameter`, which Dynamo does not trace: graph "
                "break (GB0264), and the rest of `__init__` runs eagerly with new random weights each time; build the "
                "module once, outside compiled code (in the owner's `__init__`)",
            )
            return True
        if _is_super_init(node, ctx) and not is_explicit_module_init(end, ctx.file.aliases):
            ctx.report(
                node,
                f"`{ctx.code(node.func)}()` of `{ctx.cls.name}`, built in compiled code ({_built_in(ctx)}): after the "
                "break at its first parameter, Dynamo traces `__init__` as a frame of its own and cannot trace an "
                "nn.Module before `__init__` has run: graph break (GB0119 \"Uninitialized nn.Module\"); build the "
                "module once, outside compiled code (in the owner's `__init__`)",
            )
            return True
        return False

    def _check_message(self, node: cst.Call, qual: str, ctx) -> None:
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        message = positional[1] if len(positional) > 1 else _keyword(node, "message")
        if message is None:
            return
        if isinstance(message, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            ctx.report(
                node,
                f"`{qual}(...)` with a string message in compiled code: Dynamo can only trace a message given as a "
                "callable: graph break (GB9840); pass `lambda: \"...\"`",
            )
        elif isinstance(message, cst.Lambda) and not message.params.params:
            tensor = next((n for n in iter_nodes(message.body, (cst.Name,)) if isinstance(n, cst.Name) and ctx.is_tensor(n)), None)
            if tensor is not None:
                ctx.report(
                    node,
                    f"the message lambda of `{qual}(...)` reads the tensor `{tensor.value}`: Dynamo cannot convert a "
                    "closure over a tensor: graph break (GB9158); read what the message needs into a Python value "
                    "first (`n = x.shape[0]`, then `lambda: f\"...{n}\"`)",
                )

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        self._sparse_carried(node, ctx)
        buffer = _buffer_moved_onto_itself(node, ctx)
        if buffer is not None:
            # measured, torch 2.13 CPU: `self.pe = self.pe.to(h.device)` / `.to(dtype=h.dtype)` with
            # `self.pe = nn.Buffer(...)` in __init__ -> GB4841; with register_buffer, or `self.pe * 1`: no break
            ctx.report(node, f"`self.{buffer} = self.{buffer}.to(...)` re-assigns a buffer made with `nn.Buffer(...)`: "
                             "when `.to()` changes nothing it returns the buffer itself, and `nn.Module.__setattr__`'s "
                             "`isinstance(value, nn.Buffer)` test cannot be traced: graph break (GB4841 \"Unsupported "
                             "python_type() call\"); use a local (`pe = self.pe.to(...)`), or let `model.to()` move it")
        if _stores_hook_handle_globally(node, ctx):
            # measured, torch 2.13 CPU: GB0100, and the frame falls back to eager
            ctx.report(node, "a tensor hook's handle stored in a global in compiled code: Dynamo does not support "
                             "it: graph break (GB0100), and the whole function runs eagerly; register the hook "
                             "outside the compiled region, or keep the handle local")
        for target in node.targets:
            t = target.target
            if not isinstance(t, cst.Attribute):
                continue
            attr = t.attr.value
            if attr == "requires_grad" and ctx.is_tensor(t.value):
                ctx.report(
                    target.target,
                    "assigning `.requires_grad` of a tensor in compiled code is not supported: graph break (GB0206)",
                    tensor=t.value,
                )
            elif attr == "data" and _intermediate(t.value, ctx):
                # measured, torch 2.13 CPU: `y = x.relu(); y.data = x * 2` -> GB0056; `.data =` on an input,
                # a parameter or a buffer traces (no break)
                ctx.report(
                    target.target,
                    f"assigning `.data` of `{ctx.code(t.value)}`, a tensor created in compiled code: Dynamo only "
                    "supports `.data =` on tensors made outside the compiled region: graph break (GB0056); bind the "
                    "new value to the name instead (`y = new.detach()`)",
                    tensor=t.value,
                )
            elif attr in _SETTER_ATTRS and ctx.is_tensor(t.value):
                ctx.report(
                    target.target,
                    f"assigning `.{attr}` of a tensor in compiled code is not supported: graph break (GB0058); "
                    "build the new tensor (`torch.complex(real, imag)`) instead",
                    tensor=t.value,
                )

    def _sparse_carried(self, node: cst.Assign, ctx) -> None:
        """``adj = torch.sparse_csr_tensor(...)`` breaks, and Dynamo resumes after it in a new frame with
        ``adj`` among its inputs, which it cannot wrap (GB0015 "Attempted to wrap sparse Tensor"): at the
        first read of ``adj`` there (measured, torch 2.13 CPU: PyG's ``to_torch_csr_tensor`` ``return adj``),
        or at the next graph break, where Dynamo wraps every live local (PyG's ASAPooling: ``A =
        to_torch_csr_tensor(...)``, whose constructor breaks inside it, then ``S = to_torch_coo_tensor(...)``,
        which breaks too, on the next line). The same holds for a call of a function that breaks and returns
        a sparse tensor it made (``FunctionInfo.sparse_calls``). Dynamo then runs the rest of the frame
        eagerly (the report ends the frame: ``every_iteration.mark_reports_after_frame_ends``)."""
        fn = ctx.function
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name) or fn is None:
            return
        value = node.value
        if not isinstance(value, cst.Call):
            return
        # only the constructors and functions returning what one made: after `.to_sparse_coo()` (GB0015 at the
        # conversion) the recall bench recorded no break at the next read (PyG's GraphUNet `adj.indices()`)
        made_here = ctx.qualname(value.func) in _SPARSE_CONSTRUCTORS
        if not made_here and (dotted(value.func) or "") not in fn.sparse_calls:
            return
        name = node.targets[0].target.value
        split = after_break(fn.node, frozenset({id(value)}))
        if split is None:
            return
        made = "made at line" if made_here else f"that `{ctx.code(value.func)}(...)` returns at line"
        breaking = fn.breaking_calls | fn.sparse_calls
        # only up to the end of the assignment's block: after it, the read is also reached on the paths that
        # never made the sparse tensor (PyG's APPNP re-binds `edge_index` only when it came in sparse)
        block = next((p for p in ctx.iter_parents() if isinstance(p, cst.IndentedBlock)), None)
        line = next((p for p in ctx.iter_parents() if isinstance(p, cst.SimpleStatementLine)), None)
        if block is None or line is None or not any(st is line for st in block.body):
            return
        same_block = {id(st) for st in block.body}
        for item in split[1]:
            if isinstance(item, cst.BaseStatement) and id(item) not in same_block:
                return
            events = [e for e in name_events([item]) if e[0] == name]
            if events and events[0][2]:
                ctx.report(
                    events[0][3],
                    f"`{name}` holds the sparse tensor {made} {LINE_REFS}, whose creation breaks the graph: "
                    "the frame Dynamo resumes in after that break cannot take a sparse tensor as an input, so its "
                    "first read breaks again (GB0015 \"Attempted to wrap sparse Tensor\"), and Dynamo runs the "
                    "rest of the function eagerly; keep sparse tensors out of the compiled region, or use dense ones",
                    line_refs=(value,),
                    ends_frame=True,
                )
                return
            call = _next_break(item, breaking, ctx)
            if call is not None:
                ctx.report(
                    call,
                    f"`{name}` holds the sparse tensor {made} {LINE_REFS}, whose creation breaks the graph, and "
                    "it is still live in the frame Dynamo resumes in after that break: at this call's graph break "
                    "Dynamo must wrap every live local and cannot wrap a sparse tensor (GB0015 \"Attempted to wrap "
                    "sparse Tensor\"), so it runs the rest of the function eagerly; keep sparse tensors out of "
                    "the compiled region, or use dense ones",
                    line_refs=(value,),
                    ends_frame=True,
                )
                return
            if events:  # bound again: the sparse tensor is no longer held
                return

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx) -> None:
        """``"v=%s" % t``: printf-style formatting of a tensor."""
        if not (isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString))):
            return
        right = node.right
        values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
        tensor = next((v for v in values if ctx.is_tensor(v)), None)
        if tensor is None:
            return
        # measured, torch 2.13 CPU: `s = "v=%s" % x.mean()` -> GB0208, and the frame then runs eagerly
        ctx.report(
            node,
            f"`%`-formatting the tensor `{ctx.code(tensor)}` in compiled code: Dynamo cannot format a tensor: graph "
            "break (GB0208), and the whole function then runs eagerly; format shapes or Python numbers, or build "
            "the text outside the compiled code",
            tensor=tensor,
        )

    def visit_Comparison(self, node: cst.Comparison, ctx) -> None:
        if not any(isinstance(c.operator, _COMPARISONS) for c in node.comparisons):
            return
        operands = [node.left, *(c.comparator for c in node.comparisons)]
        ptr = next((o for o in operands if _data_ptr(o, ctx)), None)
        if ptr is None:
            return
        # measured, torch 2.13 CPU: `y.data_ptr() == x.data_ptr()` and `!=` -> GB5976, 2 graphs
        ctx.report(
            node,
            f"comparing `{ctx.code(ptr)}` in compiled code: Dynamo can only compare data pointers it can prove "
            "equal or different without running the code: graph break (GB5976); decide it outside the compiled "
            "region, or compare shapes/strides",
        )


def _entry_argument(expr: cst.BaseExpression, ctx) -> bool:
    """A tensor parameter of the compiled entry point (forward, a torch.compile'd function) that the
    function never re-binds: the caller's tensor itself."""
    fn = ctx.function
    if not isinstance(expr, cst.Name) or fn is None or fn.kind not in ("forward", "compiled"):
        return False
    table = ctx.bindings()
    params = fn.node.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}

    def argument(name: str) -> bool:
        return name in names and table.get(name) == [None]

    if argument(expr.value):
        return ctx.is_tensor(expr)
    # `for x in (start_positions, end_positions): x.squeeze_(-1)` (transformers' SQuAD heads): each x is an
    # argument (measured, torch 2.13 CPU: GB0148 in such a loop, then the frame runs eagerly)
    if expr.value in names or table.get(expr.value) != [None]:
        return False
    for loop in iter_nodes(fn.node.body, (cst.For,)):
        if isinstance(loop.target, cst.Name) and loop.target.value == expr.value:
            items = loop.iter
            return (isinstance(items, (cst.Tuple, cst.List)) and bool(items.elements) and all(
                isinstance(e.value, cst.Name) and argument(e.value.value) for e in items.elements))
    return False


def _init_value(attr: str, ctx) -> Optional[InitValue]:
    """What ``self.<attr>`` is given in ``__init__`` when that is its only assignment there."""
    cls = ctx.cls
    if cls is None:
        return None
    writes = cls.init_writes.get(attr, ())
    if len(writes) != 1 or writes[0].stmt != "assign":
        return None
    return writes[0].value


def _jit_submodule(func: cst.BaseExpression, ctx) -> Optional[str]:
    """``self.m`` (called) bound in ``__init__`` to ``torch.jit.script(...)``/``torch.jit.freeze(...)``."""
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
        return None
    value = _init_value(func.attr.value, ctx)
    if value is not None and value.kind == "call" and value.name:
        qual = through_aliases(value.name, ctx.file.aliases)
        if qual in _JIT_WRAPPERS:
            return qual
    return None


def _generator(expr: cst.BaseExpression, ctx) -> bool:
    """``self.g`` / a local name bound only to ``torch.Generator(...)`` (or ``torch.Generator(...).manual_seed(..)``)."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        value = _init_value(expr.attr.value, ctx)
        return value is not None and value.kind == "call" and bool(value.seeded) and (
            through_aliases(value.seeded, ctx.file.aliases) == "torch.Generator"
        )
    if not isinstance(expr, cst.Name):
        return False
    for value in list(ctx.bindings().get(expr.value) or [None]):
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "manual_seed":
            value = value.func.value
        if not (isinstance(value, cst.Call) and (ctx.qualname(value.func) or "") == "torch.Generator"):
            return False
    return True


def _data_ptr(expr: cst.BaseExpression, ctx) -> bool:
    """``t.data_ptr()`` on a tensor."""
    return (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "data_ptr"
        and not expr.args and ctx.is_tensor(expr.func.value)
    )


def _jagged(call: cst.Call, ctx) -> bool:
    layout = _keyword(call, "layout")
    return layout is not None and ctx.qualname(layout) == "torch.jagged"


def _object_dtype(expr: cst.BaseExpression) -> bool:
    """``object``, ``"O"``, ``"object"``: numpy's object dtype, which torch cannot represent."""
    if isinstance(expr, cst.Name) and expr.value == "object":
        return True
    return isinstance(expr, cst.SimpleString) and expr.evaluated_value in ("O", "object")


def _from_keyword(call: cst.Call) -> bool:
    """``**{"from": ...}``: the only way to pass ``uniform_``'s ``from`` bound by name."""
    for arg in call.args:
        if arg.star == "**" and isinstance(arg.value, cst.Dict):
            for element in arg.value.elements:
                key = getattr(element, "key", None)
                if isinstance(key, cst.SimpleString) and key.evaluated_value == "from":
                    return True
    return False


def _buffer_moved_onto_itself(node: cst.Assign, ctx) -> Optional[str]:
    """``self.pe = self.pe.to(...)`` where ``__init__`` made ``self.pe = nn.Buffer(...)``: the attribute's name."""
    value = node.value
    if not (len(node.targets) == 1 and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "to"):
        return None
    target, moved = node.targets[0].target, value.func.value
    if not all(isinstance(e, cst.Attribute) and isinstance(e.value, cst.Name) and e.value.value == "self" for e in (target, moved)):
        return None
    name = target.attr.value
    if moved.attr.value != name or ctx.function is None or ctx.function.name == "__init__":
        return None
    made = _init_value(name, ctx)
    if made is None or made.kind != "call" or not made.name:
        return None
    return name if through_aliases(made.name, ctx.file.aliases) == "torch.nn.Buffer" else None


def _stores_hook_handle_globally(node: cst.Assign, ctx) -> bool:
    """``HANDLE = t.register_hook(fn)`` where the function declares ``global HANDLE``."""
    value = node.value
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "register_hook"):
        return False
    if ctx.function is None:
        return False
    declared = {n.name.value for g in iter_nodes(ctx.function.node.body, (cst.Global,)) for n in g.names}
    return any(isinstance(t.target, cst.Name) and t.target.value in declared for t in node.targets)


def _stays_local(name: str, ctx) -> bool:
    """Every use of the local tensor ``name`` in the function computes a new value from it (an operand, a
    method's receiver, an argument of a torch function) or re-binds it: it is never returned, stored or
    handed to other code, so no graph output can be the tensor itself."""
    safe: set[int] = set()
    kinds = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.Attribute, cst.Call, cst.AssignTarget)
    for node in iter_nodes(ctx.function.node.body, kinds):
        if isinstance(node, cst.BinaryOperation):
            safe.update((id(node.left), id(node.right)))
        elif isinstance(node, cst.UnaryOperation):
            safe.add(id(node.expression))
        elif isinstance(node, cst.Comparison):
            safe.update((id(node.left), *(id(c.comparator) for c in node.comparisons)))
        elif isinstance(node, cst.Attribute):
            safe.add(id(node.value))
        elif isinstance(node, cst.AssignTarget):
            safe.add(id(node.target))
        elif (ctx.qualname(node.func) or "").startswith("torch."):
            safe.update(id(a.value) for a in node.args)
    uses = [n for n in iter_nodes(ctx.function.node.body, (cst.Name,)) if n.value == name]
    return all(id(n) in safe for n in uses)


def _intermediate(expr: cst.BaseExpression, ctx) -> bool:
    """A local name bound only to tensors computed in the function (not a parameter, not ``self.x``)."""
    if not isinstance(expr, cst.Name) or not ctx.is_tensor(expr) or ctx.function is None:
        return False
    values = ctx.bindings().get(expr.value)
    return bool(values) and all(v is not None for v in values)
