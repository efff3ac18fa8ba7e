"""Graph-break forms added from torch's registry (issue 9): each breaks on the installed torch, and its fix does not.

Each case is a small module written to a temporary file: the rule must flag the bad form and not the good
one statically, and ``fusionlint.confirm.measure`` (backend "eager": Dynamo alone decides the breaks) must
see the expected graph-break id on a flagged line of the bad file and no break at all in the good one.
The forms share one module so that only the lines that differ vary.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import need
from tests.test_fixture_effects import load_module, rule_for, static_findings

_HEAD = (
    "import math\nimport operator\nimport random\n\nimport numpy as np\nimport torch\nimport torch.distributed as dist\n"
    "import torch.nn.functional as F\nfrom torch import nn\nfrom torch._dynamo.comptime import comptime\n"
    "from torch._higher_order_ops.invoke_subgraph import invoke_subgraph\n\nHANDLE = None\n\n\n"
    "class Plain:\n    pass\n\n\nclass Other:\n    pass\n\n\nclass Tagged(torch.Tensor):\n    pass\n\n\n"
    "def _doubled(t):\n    return t * 2\n\n\nclass Model(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n"
    "        self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])\n        self.lin = nn.Linear(8, 8)\n"
)
_FORWARD = "\n    def forward(self, x, lens):\n        h = x.relu()\n"
_TAIL = "\n\ndef example_inputs():\n    return torch.randn(4, 8), torch.tensor([3, 1, 2, 2])\n"

# (case, rule, expected graph-break id, bad body, good body[, extra __init__ lines]); bodies are indented for forward
CASES = [
    ("slice-tensor-bound", "FL103", "GB0124",
     "        return h[:, : lens.max()] * 2",
     "        return h[:, : h.shape[1] // 2] * 2"),
    ("index-0d-tensor", "FL103", "GB0033",
     "        return h[lens.argmax()] * 2",
     "        return h[lens.argmax().view(1)] * 2"),
    ("narrow-tensor-length", "FL103", "GB0033",
     "        return h.narrow(1, 0, lens.max()) * 2",
     "        return h.narrow(1, 0, 3) * 2"),
    ("one-hot-no-num-classes", "FL103", "GB0246",
     "        return h * F.one_hot(lens).sum()",
     "        return h * F.one_hot(lens, num_classes=4).sum()"),
    ("modulelist-index-tensor", "FL101", "GB0124",
     "        return self.experts[lens.argmax()](h)",
     "        return torch.stack([e(h) for e in self.experts]).index_select(0, lens.argmax().view(1))[0]"),
    ("range-of-tensor", "FL101", "GB0059",
     "        for _ in range(lens.max()):\n            h = h * 0.5\n        return h",
     "        for _ in range(3):\n            h = h * 0.5\n        return h"),
    ("data-assign-intermediate", "FL112", "GB0056",
     "        y = h * 3\n        y.data = h * 2\n        return y + 1",
     "        y = (h * 2).detach()\n        return y + 1"),
    ("real-assign", "FL112", "GB0058",
     "        c = torch.complex(h, h)\n        c.real = h * 2\n        return c.abs()",
     "        c = torch.complex(h * 2, h)\n        return c.abs()"),
    ("data-ptr-comparison", "FL112", "GB5976",
     "        y = h[:2]\n        if y.data_ptr() == h.data_ptr():\n            return y * 2\n        return y",
     "        y = h[:2]\n        return y * 2"),
    ("to-sparse", "FL112", "GB0015",
     "        return (h.to_sparse() * 2).to_dense()",
     "        return h * 2"),
    ("to-sparse-coo", "FL112", "GB0015",
     "        return (h.to_sparse_coo() * 2).to_dense()",
     "        return h * 2"),
    ("to-sparse-csr", "FL112", "GB0015",
     "        return (h.to_sparse_csr() * 2).to_dense()",
     "        return h * 2"),
    ("to-sparse-csc", "FL112", "GB0015",
     "        return (h.to_sparse_csc() * 2).to_dense()",
     "        return h * 2"),
    ("check-string-message", "FL112", "GB9840",
     "        torch._check(h.shape[0] > 0, 'need rows')\n        return h * 2",
     "        torch._check(h.shape[0] > 0, lambda: 'need rows')\n        return h * 2"),
    ("check-lambda-over-tensor", "FL112", "GB9158",
     "        torch._check(h.shape[0] > 0, lambda: f'got {h.shape}')\n        return h * 2",
     "        rows = h.shape[0]\n        torch._check(rows > 0, lambda: f'got {rows}')\n        return h * 2"),
    ("generator-manual-seed", "FL112", "GB7650",
     "        self.g.manual_seed(1)\n        return h * 2",
     "        return h * 2",
     "        self.g = torch.Generator().manual_seed(0)\n"),
    ("jit-script-submodule", "FL112", "GB4695",
     "        return self.scripted(h) * 2",
     "        return self.lin(h) * 2",
     "        self.scripted = torch.jit.script(nn.Linear(8, 8))\n"),
    ("math-of-tensor", "FL101", "GB0033",
     "        return h * math.sqrt(lens.sum())",
     "        return h * torch.sqrt(lens.sum())"),
    ("dict-of-tensors-branch", "FL102", "GB0170",
     "        feats = {'a': h, 'b': h * 2}\n        if feats['a'].sum() > 0:\n            return feats['b']\n        return h",
     "        feats = {'a': h, 'b': h * 2}\n        return torch.where(feats['a'].sum() > 0, feats['b'], h)"),
    ("dict-filled-by-key-converted", "FL101", "GB0124",
     "        out = {}\n        out['n'] = lens.max()\n        return h[:, :4] * int(out['n'])",
     "        out = {}\n        out['n'] = lens.max()\n        return h[:, :4] * out['n']"),
    ("name-bound-to-and-of-tensors", "FL102", "GB0170",
     "        both = bool(h.shape[0]) and lens.max() > 2\n        return h * 2 if both else h",
     "        both = torch.logical_and(lens.max() > 2, lens.min() > 0)\n        return torch.where(both, h * 2, h)"),
    ("str-of-tensor", "FL112", "GB0059",
     "        note = str(lens.max())\n        return h * len(note)",
     "        note = str(h.shape[0])\n        return h * len(note)"),
    ("percent-format-of-tensor", "FL112", "GB0208",
     "        note = 'max=%s' % lens.max()\n        return h * len(note)",
     "        note = 'rows=%d' % h.shape[0]\n        return h * len(note)"),
    ("topk-tensor-k", "FL103", "GB0033",
     "        return h.topk(lens.min(), dim=-1).values",
     "        return h.topk(1, dim=-1).values"),
    ("view-tensor-size", "FL103", "GB0033",
     "        return h.view(lens.min() + 1, -1)",
     "        return h.view(2, -1)"),
    ("expand-tensor-size", "FL103", "GB0033",
     "        return h[:1].expand(lens.max(), -1)",
     "        return h[:1].expand(3, -1)"),
    ("repeat-tensor-count", "FL103", "GB0033",
     "        return h.repeat(lens.min(), 1)",
     "        return h.repeat(1, 1)"),
    ("chunk-tensor-count", "FL103", "GB0033",
     "        return h.chunk(lens.max())[0]",
     "        return h.chunk(3)[0]"),
    ("roll-tensor-shift", "FL103", "GB0033",
     "        return h.roll(lens.min(), 0)",
     "        return h.roll(1, 0)"),
    ("tril-tensor-diagonal", "FL103", "GB0033",
     "        return torch.tril(h, lens.min())",
     "        return torch.tril(h, 1)"),
    ("eye-tensor-size", "FL103", "GB0033",
     "        return h @ torch.eye(lens.max() * 2 + 2)",
     "        return h @ torch.eye(8)"),
    ("pad-tensor-width", "FL103", "GB0033",
     "        return F.pad(h, (0, lens.min()))",
     "        return F.pad(h, (0, 1))"),
    ("slice-assign-tensor-bound", "FL103", "GB0124",
     "        out = h.clone()\n        out[:, : lens.min()] = 0\n        return out",
     "        out = h.clone()\n        out[:, :1] = 0\n        return out"),
    ("index-assign-0d-tensor", "FL103", "GB0033",
     "        out = h.clone()\n        out[lens.argmax()] = 0\n        return out",
     "        out = h.clone()\n        out[lens.argmax().view(1)] = 0\n        return out"),
    ("python-any-over-tensors", "FL102", "GB0170",
     "        parts = [h * 2, h - 1]\n        if any(t.sum() > 0 for t in parts):\n            return h\n        return -h",
     "        parts = [h * 2, h - 1]\n        hit = torch.stack([t.sum() for t in parts]).gt(0).any()\n"
     "        return torch.where(hit, h, -h)"),
    ("python-all-over-tensor-rows", "FL102", "GB0170",
     "        if all(h.flatten() > -10):\n            return h\n        return -h",
     "        return torch.where((h.flatten() > -10).all(), h, -h)"),
    ("interpolate-tensor-size", "FL103", "GB0033",
     "        return F.interpolate(h[None], size=lens.max() * 2)",
     "        return F.interpolate(h[None], size=6)"),
    ("unfold-tensor-size", "FL103", "GB0033",
     "        return h.unfold(1, lens.max(), 1)",
     "        return h.unfold(1, 3, 1)"),
    ("randint-tensor-bound", "FL103", "GB0033",
     "        return h * torch.randint(0, lens.max(), (8,))",
     "        return h * torch.randint(0, 3, (8,))"),
    ("select-tensor-index", "FL103", "GB0033",
     "        return h.select(1, lens.min())",
     "        return h.select(1, 1)"),
    ("max-pool-tensor-kernel", "FL103", "GB0033",
     "        return F.max_pool2d(h[None], lens.min() + 1)",
     "        return F.max_pool2d(h[None], 2)"),
    ("unflatten-tensor-sizes", "FL103", "GB0033",
     "        return h.unflatten(1, (lens.min() + 1, -1))",
     "        return h.unflatten(1, (2, -1))"),
    ("torch-assert-tensor", "FL102", "GB0033",
     "        torch._assert((h > -100).all(), 'out of range')\n        return h * 2",
     "        assert (h > -100).all(), 'out of range'\n        return h * 2"),
    ("nested-tensor", "FL112", "GB0090",
     "        nt = torch.nested.nested_tensor([h, h * 2])\n        return h * nt.size(0)",
     "        return torch.stack([h, h * 2])"),
    ("sparse-coo-tensor", "FL112", "GB0007",
     "        s = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), h[0, :2], (2, 2))\n        return s.to_dense() * 2",
     "        return torch.zeros(2, 2).index_put((torch.tensor([0, 1]), torch.tensor([1, 0])), h[0, :2]) * 2"),
    # the global generator's state, as the reversible blocks of reformer-pytorch and axial-attention record it
    ("rng-state", "FL112", "GB0007",
     "        self.cpu_state = torch.get_rng_state()\n        return h * 2",
     "        return h * 2"),
    ("manual-seed", "FL112", "GB0007",
     "        torch.manual_seed(0)\n        return h * torch.rand(1)",
     "        return h * torch.rand(1)"),
    ("fork-rng", "FL112", "GB0208",
     "        with torch.random.fork_rng(devices=[]):\n            y = h * 2\n        return y",
     "        y = h * 2\n        return y"),
    # the sparse tensor crosses into the frame resumed after its constructor's break: GB0015 at its first read
    ("sparse-carried-across-its-break", "FL112", "GB0015",
     "        s = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), h[0, :2], (2, 2))\n        y = h * 2\n"
     "        return s.to_dense().sum() * y",
     "        s = torch.zeros(2, 2).index_put((torch.tensor([0, 1]), torch.tensor([1, 0])), h[0, :2])\n        y = h * 2\n"
     "        return s.sum() * y"),
    ("inplace-view-on-input", "FL112", "GB0148",
     "        x.unsqueeze_(0)\n        return x * 2",
     "        x = x.unsqueeze(0)\n        return x * 2"),
    ("operator-index-tensor", "FL101", "GB0124",
     "        return h * operator.index(lens.max())",
     "        return h * operator.index(h.shape[0])"),
    ("shape-indexed-by-tensor", "FL101", "GB0124",
     "        return h * h.shape[lens.min()]",
     "        return h * h.shape[1]"),
    ("index-0d-count-of-comparison", "FL103", "GB0033",
     "        return h[(h > 0).sum() % 4] * 2",
     "        return h[((h > 0).sum() % 4).view(1)] * 2"),
    ("split-of-argument-tensor-size", "FL103", "GB0033",
     "        return x.split(lens.min() + 1)[0] * 2",
     "        return x.split(2)[0] * 2"),
    ("module-built-in-forward", "FL112", "GB0264",
     "        return nn.Linear(8, 8)(h)",
     "        return self.lin(h)"),
    ("class-assign-object", "FL106", "GB4271",
     "        self.state.__class__ = Other\n        return h * 2",
     "        return h * 2",
     "        self.state = Plain()\n"),
    ("class-assign-tensor", "FL106", "GB0058",
     "        y = h * 2\n        y.__class__ = Tagged\n        return y",
     "        return h * 2"),
    ("random-generator-keyword-seed", "FL106", "GB0297",
     "        r = random.Random(x=1)\n        return h * r.random()",
     "        r = random.Random(1)\n        return h * r.random()"),
    ("comptime-graph-break", "FL109", "GB0030",
     "        comptime.graph_break()\n        return h * 2",
     "        comptime.print('here')\n        return h * 2"),
    ("numpy-astype-object", "FL112", "GB0250",
     "        labels = np.arange(3).astype(object)\n        return h * 2",
     "        labels = np.arange(3).astype(np.float32)\n        return h * 2"),
    ("uniform-from-keyword", "FL112", "GB0110",
     "        z = torch.empty(4, 8)\n        z.uniform_(**{'from': 0.0, 'to': 1.0})\n        return h * z",
     "        z = torch.empty(4, 8)\n        z.uniform_(0.0, 1.0)\n        return h * z"),
    ("hook-handle-in-global", "FL112", "GB0100",
     "        global HANDLE\n        HANDLE = self.w.register_hook(lambda g: g * 2)\n        return h * self.w",
     "        return h * self.w",
     "        self.w = nn.Parameter(torch.ones(8))\n"),
    ("invoke-subgraph-directly", "FL112", "GB0017",
     "        return invoke_subgraph(_doubled, 'sub', h)",
     "        return _doubled(h)"),
    ("nested-strided-from-list", "FL112", "GB0090",
     "        nt = torch.nested.as_nested_tensor([h, h * 2])\n        return h * 2",
     "        nt = torch.nested.as_nested_tensor([h, h * 2], layout=torch.jagged)\n        return h * 2"),
    ("nn-buffer-moved-onto-itself", "FL112", "GB4841",
     "        self.pe = self.pe.to(h.device)\n        return h * self.pe",
     "        pe = self.pe.to(h.device)\n        return h * pe",
     "        self.pe = nn.Buffer(torch.ones(8), persistent=False)\n"),
    ("requires-grad-intermediate-leaves", "FL112", "GB8985",
     "        y = torch.ones(4, 8)\n        y.requires_grad_()\n        self.saved = y\n        return h * 2",
     "        y = torch.ones(4, 8)\n        y.requires_grad_()\n        return h * y + y.sum()"),
]


@pytest.fixture(scope="module", autouse=True)
def _small_torch():
    need("torch", "the forms are measured under torch.compile")
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _measure(path: Path):
    from fusionlint.confirm.measure import isolated_torch_config, measure

    with isolated_torch_config():
        module = load_module(path)
        return measure(module.Model, module.example_inputs, device="cpu", user_files=[str(path)],
                       compile_kwargs={"backend": "eager"})


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_form_breaks_and_its_fix_does_not(case, tmp_path: Path):
    _check_form(case, tmp_path)


@pytest.fixture
def _one_process_group():
    """torch.distributed with one gloo process over an in-memory store: no port, no network."""
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("this torch build has no torch.distributed")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_async_collective_breaks_and_a_blocking_one_does_not(tmp_path: Path, _one_process_group):
    _check_form(
        ("async-collective", "FL112", "GB0172",
         "        work = dist.all_reduce(h, async_op=True)\n        work.wait()\n        return h * 2",
         "        dist.all_reduce(h)\n        return h * 2"),
        tmp_path,
    )


def _check_form(case, tmp_path: Path) -> None:
    name, code, gb, bad_body, good_body, *init = case
    head = _HEAD + "".join(init) + _FORWARD
    rule = rule_for(code)
    assert gb in rule.gb_ids, f"{code} should list {gb} in gb_ids"
    bad_path, good_path = tmp_path / f"bad_{name.replace('-', '_')}.py", tmp_path / f"good_{name.replace('-', '_')}.py"
    bad_path.write_text(head + bad_body + "\n" + _TAIL, encoding="utf-8")
    good_path.write_text(head + good_body + "\n" + _TAIL, encoding="utf-8")

    flagged = static_findings(rule, bad_path)
    assert flagged, f"{code} does not flag the {name} form"
    assert not static_findings(rule, good_path), f"{code} flags the fixed {name} form"
    flagged_lines = {ln for f in flagged for ln in range(f.line, f.end_line + 1)}

    bad, good = _measure(bad_path), _measure(good_path)
    assert bad.eager_ok and bad.compiled_ok, (bad.eager_error, bad.compiled_error)
    sites = [s for s in bad.break_sites if s.file and Path(s.file).resolve() == bad_path.resolve()]
    assert any(s.gb == gb and s.line in flagged_lines for s in sites), (
        f"{name}: expected {gb} on a flagged line {sorted(flagged_lines)}, measured {[(s.gb, s.line) for s in sites]}"
        f" others={bad.other_break_sites} skips={bad.frame_skips}"
    )
    assert good.eager_ok and good.compiled_ok, (good.eager_error, good.compiled_error)
    assert not (good.break_sites or good.other_break_sites or good.frame_skips), (
        f"{name}: the fixed form breaks: {good.break_sites} {good.other_break_sites} {good.frame_skips}"
    )


_EAGER_FILL = '''import torch
from torch import nn


def _split_into_blocks(x, block_len: int, dim: int):
    if x.shape[dim] % block_len != 0:
        x = torch.nn.functional.pad(x, (0, block_len - x.shape[dim] % block_len))
    return x.unflatten(dim, (-1, block_len))


def _local_mask(attention_mask, block_len: int):
    blocked = _split_into_blocks(attention_mask, block_len, dim=1)
    return blocked.sum(-1)


def _tolerant(mask):
    if mask is None:
        return 0
    return mask.sum()


class Model(nn.Module):
    def forward(self, x, lens, attention_mask=None):
        if attention_mask is None FILL:
            attention_mask = torch.ones(x.shape[0], x.shape[1])
        t = _tolerant(attention_mask)
        m = _local_mask(attention_mask, 4)
        return x * m.sum() + t


def example_inputs():
    return torch.randn(4, 8), torch.tensor([3, 1, 2, 2])
'''


def test_a_default_filled_only_in_eager_and_handed_to_a_helper_that_needs_it(tmp_path: Path):
    """transformers' LongT5Stack (5.24): `attention_mask` filled only when not compiling, then passed to
    `_get_local_attention_mask`, whose `_split_into_blocks` reads `x.shape`: GB0088 at that read (torch 2.13
    CPU, recall bench), reported there; the helper that tests for None is not flagged."""
    bad_path, good_path = tmp_path / "bad_eager_fill.py", tmp_path / "good_eager_fill.py"
    bad_path.write_text(_EAGER_FILL.replace(" FILL", " and not torch.compiler.is_compiling()"), encoding="utf-8")
    good_path.write_text(_EAGER_FILL.replace(" FILL", ""), encoding="utf-8")
    rule = rule_for("FL106")
    assert "GB0088" in rule.gb_ids
    flagged = static_findings(rule, bad_path)
    # one finding, at the helper's read, where Dynamo raises (not also at the call in forward)
    assert [f.line for f in flagged] == [6], [(f.line, f.message) for f in flagged]
    assert flagged[0].message.startswith(
        "`x` is None here under torch.compile: `Model.forward` fills `attention_mask` only when not compiling")
    assert "hands it on through `_local_mask(...)`, so `x.shape` raises while tracing" in flagged[0].message
    assert "is a tensor" not in flagged[0].message
    assert not static_findings(rule, good_path)

    bad, good = _measure(bad_path), _measure(good_path)
    assert bad.eager_ok, bad.eager_error
    sites = [(s.gb, s.line) for s in bad.break_sites if s.file and Path(s.file).resolve() == bad_path.resolve()]
    assert ("GB0088", 6) in sites, sites  # the read of `x.shape` in the helper
    assert good.eager_ok and good.compiled_ok, (good.eager_error, good.compiled_error)
    assert not (good.break_sites or good.other_break_sites or good.frame_skips)
