"""The ten "missed today" patterns of issue 9, each a small project run through the runner.

Each test writes a few files under ``tmp_path`` (with a ``pyproject.toml`` so the project root is
known), lints them as the CLI does and asserts the finding: code, line, and where it matters the
chain across files or the reason the value is a tensor. The precision tests next to them assert
that the near-miss variants stay silent.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from fusionlint.config import Settings
from fusionlint.runner import run


HEAD = "import torch\nfrom torch import nn\n"


BASE = HEAD + """\
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
"""


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_dedent(text))
    return tmp_path


def _dedent(text: str) -> str:
    """Dedent a file's text; the shared unindented heads (HEAD, BASE) may come first."""
    for head in (BASE, HEAD):
        if text.startswith(head):
            return head + textwrap.dedent(text[len(head):]).lstrip("\n")
    return textwrap.dedent(text).lstrip("\n")


def lint(root: Path, *paths: str, select: str = "ALL"):
    # the project has a pyproject.toml, so the whole root is indexed (as the CLI's settings say)
    settings = Settings(root=root, config_path=root / "pyproject.toml", select=select.split(","))
    outcome = run([str(root / p) for p in paths] or [str(root)], settings)
    assert not outcome.internal_errors, outcome.internal_errors
    assert not outcome.result.errors, outcome.result.errors
    return outcome.result.findings


def reason(message: str) -> str:
    """Why the value is a tensor: the message's last parenthesis, before a note that the line runs
    eagerly today (after a loop whose every iteration breaks)."""
    message = message.split(" (not today: ", 1)[0]
    return message.rsplit(" (", 1)[-1]


def at(findings, code: str, path: str | None = None) -> list[tuple[str, int]]:
    return [(f.path, f.line) for f in findings if f.code == code and (path is None or f.path == path)]


# 1. tuple unpacking of a tensor
def test_tuple_unpacking_of_a_tensor_binds_tensors(tmp_path):
    root = project(tmp_path, {"attn.py": HEAD + """
        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(8, 24)

            def forward(self, x):
                b, n, d = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, 2, d // 2).permute(2, 0, 3, 1, 4)
                t = q.std().item()
                return (q * k * v).sum() * t
        """})
    assert at(lint(root), "FL101") == [("attn.py", 11)]


# 2. attributes assigned in a base class's __init__, in the same file and in another file


def test_attribute_from_base_init_in_same_file(tmp_path):
    root = project(tmp_path, {"m.py": BASE + """
        class Synced(Base):
            def forward(self, x):
                return x.clamp(max=self.qkv(x).std().item())
        """})
    assert at(lint(root), "FL101") == [("m.py", 9)]


def test_attribute_from_base_init_in_another_file(tmp_path):
    root = project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": BASE,
        "pkg/synced.py": """
            from .base import Base

            class Synced(Base):
                def forward(self, x):
                    return x.clamp(max=self.qkv(x).std().item())
            """,
    })
    # only the subclass's file is named (as pre-commit would): the base is still read
    assert at(lint(root, "pkg/synced.py"), "FL101") == [("pkg/synced.py", 5)]


# 3. an attribute re-assigned (not only `+=`) in forward and used as a scalar argument
def test_attribute_reassigned_in_forward_used_as_scalar_argument(tmp_path):
    root = project(tmp_path, {"m.py": HEAD + """
        class Gate(nn.Module):
            def __init__(self):
                super().__init__()
                self.threshold = 5.0

            def forward(self, x):
                self.threshold = max(1.0, self.threshold * 0.99)
                return x.clamp(-self.threshold, self.threshold)
        """})
    found = lint(root)
    assert ("m.py", 9) in at(found, "FL203"), [(f.code, f.line, f.message) for f in found]


# 4. a base forward calling a submodule that a subclass's __init__ makes an nn.LSTM
def test_rnn_submodule_made_by_a_subclass(tmp_path):
    root = project(tmp_path, {
        "rnn.py": HEAD + """
            class RNN2dBase(nn.Module):
                def forward(self, x):
                    v, _ = self.rnn_v(x)
                    return v
            """,
        "lstm.py": """
            from torch import nn
            from rnn import RNN2dBase

            class LSTM2d(RNN2dBase):
                def __init__(self):
                    super().__init__()
                    self.rnn_v = nn.LSTM(8, 8, batch_first=True)
            """,
    })
    assert at(lint(root), "FL107") == [("rnn.py", 5)]


# 5. helpers in another file, called from forward
def test_helper_in_another_file_gets_tensor_arguments_and_the_chain(tmp_path):
    root = project(tmp_path, {
        "models/__init__.py": "",
        "models/helpers.py": """
            def normalize_rows(x):
                if x.abs().max() > 10:
                    x = x / 10
                return x
            """,
        "models/net.py": HEAD + """
            from .helpers import normalize_rows as norm

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(4, 4)

                def forward(self, x):
                    return norm(self.lin(x))
            """,
    })
    found = [f for f in lint(root) if f.code == "FL102"]
    assert [(f.path, f.line) for f in found] == [("models/helpers.py", 2)]
    assert found[0].context == "Net.forward → models.helpers.normalize_rows"
    assert "`x` is a tensor: passed from Net.forward at models/net.py:11" in found[0].message


def test_items_of_lists_and_dicts_of_tensors_are_tensors_across_files_but_the_lists_are_not(tmp_path):
    # torch 2.13 CPU: `if t.sum() > 0` in the helper breaks (GB0170) whether `t` comes from a dict display,
    # a list display or a loop over one; `if items:` on the list itself is a Python length test
    root = project(tmp_path, {
        "helpers.py": """
            def gate(t):
                if t.sum() > 0:
                    return t
                return -t

            def count(items):
                if items:
                    return len(items)
                return 0
            """,
        "net.py": HEAD + """
            from helpers import count, gate

            class Net(nn.Module):
                def forward(self, x):
                    feats = {"a": x * 2, "b": x}
                    parts = [x, x + 1]
                    for p in parts:
                        x = x + p
                    return gate(feats["a"]) * count(parts)
            """,
    })
    found = lint(root)
    assert at(found, "FL102") == [("helpers.py", 2)]
    assert "`t` is a tensor: passed from Net.forward at net.py:11" in found[0].message


def test_helper_reexported_from_package_init(tmp_path):
    root = project(tmp_path, {
        "lib/__init__.py": "from .ops import scale_by_max\n",
        "lib/ops.py": "def scale_by_max(t):\n    return t / float(t.max())\n",
        "net.py": HEAD + """
            from lib import scale_by_max

            class Net(nn.Module):
                def forward(self, x):
                    return scale_by_max(torch.relu(x))
            """,
    })
    found = [f for f in lint(root, "lib/ops.py") if f.code == "FL101"]
    assert [(f.path, f.line, f.context) for f in found] == [("lib/ops.py", 2, "Net.forward → lib.ops.scale_by_max")]


# a base class whose forward calls a method a subclass in another file overrides (PyG's MessagePassing)
PASSING_BASE = HEAD + """
    class Passing(nn.Module):
        def forward(self, x):
            return self.update(x)

        def update(self, x):
            return x
    """
# the subclass, importing the base through the package's star re-exports: its `.item()` is on line 7
GATE_FROM_LIB = HEAD + """
    from lib import Passing{extra}

    class Gate(Passing):
        def update(self, x):
            return x * x.max().item()
    """


def test_a_base_class_star_reexported_by_a_package_init_is_the_base(tmp_path):
    """PyG 2.8: `torch_geometric/nn/__init__.py` does `from .conv import *`, and `GATEConv(MessagePassing)`
    imports its base as `from torch_geometric.nn import MessagePassing`; the base's `edge_updater` calls
    `self.edge_update(...)`, which runs GATEConv's (its dropout's mode guard was a recorded recompile)."""
    root = project(tmp_path, {
        "lib/__init__.py": "from .conv import *\n",
        "lib/conv/__init__.py": "from .base import Passing\n",
        "lib/conv/base.py": PASSING_BASE,
        "models.py": GATE_FROM_LIB.format(extra=""),
    })
    found = [f for f in lint(root) if f.code == "FL101"]
    assert [(f.path, f.line) for f in found] == [("models.py", 7)]


def test_helper_called_with_python_numbers_stays_silent(tmp_path):
    root = project(tmp_path, {
        "helpers.py": "def pick(n):\n    if n > 2:\n        return int(n)\n    return 0\n",
        "net.py": HEAD + """
            from helpers import pick

            class Net(nn.Module):
                def forward(self, x):
                    return x * pick(x.shape[0])
            """,
    })
    assert [f for f in lint(root) if f.code in ("FL101", "FL102")] == []


# 6. helper methods: arguments of self.m(...) flow into its parameters
def test_helper_method_parameters_from_the_call_site(tmp_path):
    root = project(tmp_path, {"m.py": HEAD + """
        class Patches(nn.Module):
            def forward(self, x):
                sizes = (x > 0).sum(dim=1)
                return self.unpatchify(x, sizes)

            def unpatchify(self, x, grid_sizes):
                out = []
                for n in grid_sizes.tolist():
                    out.append(x[:n])
                return torch.cat(out)
        """})
    found = [f for f in lint(root) if f.code == "FL101"]
    assert [f.line for f in found] == [10]


# 7. forward parameters after the first, unannotated, used as tensors
def test_forward_parameter_used_as_a_tensor(tmp_path):
    root = project(tmp_path, {"m.py": HEAD + """
        class Packed(nn.Module):
            def forward(self, x, lens):
                if lens.any():
                    x = x * 2
                n = int(lens.max())
                return x[lens > 0][:n]
        """})
    found = lint(root)
    assert at(found, "FL102") == [("m.py", 5)]
    assert at(found, "FL101") == [("m.py", 7)]
    assert ("m.py", 8) in at(found, "FL103")


def test_configuration_parameters_of_forward_stay_python(tmp_path):
    root = project(tmp_path, {"m.py": HEAD + """
        class Attn(nn.Module):
            def forward(self, x, num_heads: int, scale=1.0, return_dict=False, cache=None, flag=None, topk=None):
                if return_dict:
                    x = x * 2
                if flag:
                    x = x + 1
                if topk is not None:
                    x = x[:, : min(int(topk), 4)]
                h = int(num_heads * scale)
                start = 0 if cache is None else int(cache.get_seq_length())
                return x[:, start:h]
        """})
    assert [f for f in lint(root) if f.code in ("FL101", "FL102", "FL103")] == []


def test_switch_parameters_and_annotated_callee_parameters_stay_python(tmp_path):
    """Found on transformers 5.24 (qwen3_omni_moe): `use_audio_in_video=None` in forward, passed on
    to a method that declares it `bool | None`, was reported as `or` over a tensor there."""
    root = project(tmp_path, {"m.py": HEAD + """
        class Talker(nn.Module):
            def forward(self, x, audio_in_video=None):
                return self.positions(x, audio_in_video)

            def positions(self, x, audio_in_video: bool | None = None):
                return self.rope(x, audio_in_video or False)

            def rope(self, x, flag):
                return x
        """})
    assert [f for f in lint(root) if f.code in ("FL101", "FL102", "FL103")] == []


def test_parameters_filled_in_with_a_python_flag_are_switches(tmp_path):
    """Found on the recall bench's first run of vector-quantize-pytorch 1.32 (2026-12-05): `if calc_aux_loss:`
    after `calc_aux_loss = default(calc_aux_loss, self.training)` was reported as a branch on a tensor, and so
    were `ema_update` (`default(ema_update, self.ema_update)`, set from an `__init__` flag) and the other forms
    of a fallback. A fallback that is a tensor keeps the parameter a tensor."""
    root = project(tmp_path, {"m.py": HEAD + """
        def exists(v):
            return v is not None


        def default(v, d):
            return v if exists(v) else d


        class Quantizer(nn.Module):
            def __init__(self, ema_update=True):
                super().__init__()
                self.ema_update = ema_update
                self.register_buffer("initted", torch.tensor(False))

            def forward(self, x, calc_aux_loss=None, ema_update=None, hard=None, soft=None, mask=None, gate=None):
                calc_aux_loss = default(calc_aux_loss, self.training)
                ema_update = default(ema_update, self.ema_update)
                hard = hard if exists(hard) else not self.training
                if soft is None:
                    soft = False
                mask = default(mask, torch.ones_like(x))
                gate = default(gate, self.initted)
                if calc_aux_loss:
                    x = x * 2
                if ema_update and not soft:
                    x = x + 1
                if hard:
                    x = x - 1
                if mask.any():
                    x = x / 2
                if gate:
                    x = x * 3
                return x
        """})
    text = (root / "m.py").read_text()
    found = {line for _, line in at(lint(root), "FL102")}
    lines = {needle: next(i for i, l in enumerate(text.splitlines(), 1) if needle in l)
             for needle in ("if mask.any()", "if gate:", "if calc_aux_loss:", "if ema_update and", "if hard:")}
    assert found == {lines["if mask.any()"], lines["if gate:"]}


def test_an_attribute_holding_a_module_function_is_called_with_the_flags_passed_on(tmp_path):
    """vector-quantize-pytorch 1.32: `self.gumbel_sample = gumbel_sample` (an `__init__` parameter whose default
    is the module's function) called as `self.gumbel_sample(dist, temperature=t, training=self.training)`: the
    function is compiled, and a parameter the caller fills in with a flag (`t = default(t, self.temp)`) is no
    tensor in it either."""
    root = project(tmp_path, {"helpers.py": HEAD + """
        def gumbel_sample(logits, temperature=1.0, training=True):
            if training and temperature > 0:
                logits = logits + torch.rand_like(logits)
            return logits.argmax(dim=-1).tolist()
        """, "m.py": HEAD + """
        from helpers import gumbel_sample


        def default(v, d):
            return v if v is not None else d


        class Codebook(nn.Module):
            def __init__(self, temp=0.5, gumbel_sample=gumbel_sample):
                super().__init__()
                self.temp = temp
                self.gumbel_sample = gumbel_sample

            def forward(self, x, temperature=None):
                temperature = default(temperature, self.temp)
                return self.gumbel_sample(x, temperature=temperature, training=self.training)
        """})
    findings = lint(root)
    assert at(findings, "FL101") == [("helpers.py", 6)]  # compiled through the attribute
    assert next(f for f in findings if f.code == "FL101").chain == ("Codebook.forward", "helpers.gumbel_sample")
    assert at(findings, "FL102") == []  # `temperature` is the caller's flag, not a tensor
    assert at(findings, "FL205") == [("helpers.py", 4)]  # the mode flag passed on is guarded where it is tested


# 8. calls through an attribute holding a callable object
def test_attribute_object_call_traces_its_dunder_call(tmp_path):
    root = project(tmp_path, {
        "processors.py": """
            import torch

            class AttnProcessor:
                def __call__(self, attn, hidden_states, attention_mask=None):
                    scale = hidden_states.abs().max().item()
                    keep = attention_mask.nonzero()
                    return hidden_states * scale, keep
            """,
        "attention.py": HEAD + """
            from processors import AttnProcessor

            class Attention(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.processor = AttnProcessor()

                def forward(self, h, mask):
                    return self.processor(self, h, mask)
            """,
    })
    found = lint(root)
    assert at(found, "FL101") == [("processors.py", 5)]
    assert at(found, "FL103") == [("processors.py", 6)]
    chains = {f.context for f in found if f.path == "processors.py"}
    assert chains == {"Attention.forward → processors.AttnProcessor.__call__"}


# functions passed as arguments: a decorator's wrapper runs instead of the function it wraps
def test_a_decorators_wrapper_around_forward_is_compiled(tmp_path):
    # torch 2.13 CPU: `out.sum().item()` in the wrapper breaks the graph (GB0124), as does
    # `.tolist()` in the wrapper that a decorator factory's inner function returns
    root = project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/deco.py": """
            from functools import wraps

            def checked(func):
                @wraps(func)
                def wrapper(self, *args, **kwargs):
                    out = func(self, *args, **kwargs)
                    if out.sum().item() > 0:
                        return out
                    return -out
                def describe():
                    return func.__name__.upper().item()
                wrapper.describe = describe
                return wrapper

            def configurable(func=None, *, flag=True):
                def wrapped_fn(func):
                    def wrapper(self, x):
                        return func(self, x).tolist() if flag else x
                    return wrapper
                return wrapped_fn if func is None else wrapped_fn(func)

            def tagged(func):
                func.tag = "x".item()
                return func
            """,
        "pkg/net.py": HEAD + """
            from .deco import checked, configurable, tagged

            class Net(nn.Module):
                @checked
                def forward(self, x):
                    return x * 2

            class Net2(nn.Module):
                @configurable(flag=True)
                def forward(self, x):
                    return x * 2

            class Net3(nn.Module):
                @tagged
                def forward(self, x):
                    return x * 2
            """,
    })
    found = lint(root)
    # not `describe` (it never calls the wrapped function) nor `tagged` itself (it runs at import)
    assert at(found, "FL101") == [("pkg/deco.py", 7), ("pkg/deco.py", 18)]
    chains = {f.line: f.context for f in found if f.path == "pkg/deco.py"}
    assert chains == {
        7: "Net.forward → @checked (pkg.deco.checked.<locals>.wrapper)",
        18: "Net2.forward → @configurable (pkg.deco.configurable.<locals>.wrapped_fn.<locals>.wrapper)",
    }


def test_a_same_file_decorator_passes_forwards_tensor_parameters_to_its_wrapper(tmp_path):
    root = project(tmp_path, {
        "net.py": HEAD + """
            def logged(func):
                def wrapper(self, x, scores):
                    if scores.max() > 4:
                        x = x[:, :4]
                    return func(self, x, scores)
                return wrapper

            class Net(nn.Module):
                @logged
                def forward(self, x, scores):
                    return x
            """,
    })
    found = [f for f in lint(root) if f.code == "FL102"]
    assert [(f.path, f.line) for f in found] == [("net.py", 5)]
    assert found[0].context == "Net.forward → @logged (logged.<locals>.wrapper)"


# 9. slicing or ranges bounded by a tensor value
def test_slice_and_arange_bounded_by_tensor_values(tmp_path):
    root = project(tmp_path, {"m.py": HEAD + """
        class Crop(nn.Module):
            def forward(self, x, lens):
                y = x[:, : lens.max()]
                start_t = x.argmin()
                end_t = x.argmax() + 1
                return y, torch.arange(start_t, end_t)
        """})
    found = lint(root)
    assert ("m.py", 5) in at(found, "FL103"), [(f.code, f.line, f.message) for f in found]
    assert ("m.py", 8) in at(found, "FL103")


def test_slice_bounded_by_a_shape_stays_silent(tmp_path):
    root = project(tmp_path, {"m.py": HEAD + """
        class Crop(nn.Module):
            def forward(self, x, n: int = 4):
                half = x.shape[1] // 2
                return x[:, :half] + x[:, n:n + half]
        """})
    assert at(lint(root), "FL103") == []


# 10. iterating over a tensor
def test_for_loop_over_a_tensor(tmp_path):
    root = project(tmp_path, {"m.py": HEAD + """
        class Rows(nn.Module):
            def forward(self, x):
                h = torch.relu(x)
                out = []
                for row in h:
                    out.append(row.sum())
                return torch.stack(out)
        """})
    assert at(lint(root), "FL204") == [("m.py", 7)]


def test_for_loop_over_a_forward_parameter_used_as_a_tensor(tmp_path):
    root = project(tmp_path, {"m.py": HEAD + """
        class Rows(nn.Module):
            def forward(self, x):
                peak = x.abs().amax()
                return torch.stack([row.sum() / peak for row in x] + [x.sum()])

        class Pyramid(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 3, 1)

            def forward(self, features):
                return [self.conv(f) for f in features]
        """})
    # `x` is a tensor by its use (`x.abs()`); `features` may be a list of feature maps: silent
    assert at(lint(root), "FL204") == [("m.py", 6)]


def test_item_on_a_value_of_unknown_type_follows_the_decision_policy(tmp_path):
    root = project(tmp_path, {"m.py": HEAD + """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.eps = 1e-5
                self.table = {}

            def forward(self, x):
                stats = self.table.get("scale")
                return x * stats.item() + float(self.eps)
        """})
    found = [f for f in lint(root) if f.code == "FL101"]
    assert [f.line for f in found] == [11]
    assert "exists only on tensors and numpy values" in found[0].message


def test_function_compiled_inside_main_is_linted(tmp_path):
    root = project(tmp_path, {"train.py": """
        import torch

        def step(x):
            return x * x.sum().item()

        def main():
            fast = torch.compile(step)
            return fast(torch.ones(3))
        """})
    assert at(lint(root), "FL101") == [("train.py", 4)]


def test_without_a_config_file_only_what_was_named_is_indexed(tmp_path, monkeypatch):
    """No pyproject.toml: the root is just the current directory (perhaps $HOME), so the model
    indexes the named directories and a named file's neighbours, not the whole directory tree."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "net.py").write_text(HEAD + "class Net(nn.Module):\n    def forward(self, x):\n        return x\n")
    (tmp_path / "proj" / "helpers.py").write_text("def f(x):\n    return x\n")
    (tmp_path / "proj" / "sub").mkdir()
    (tmp_path / "proj" / "sub" / "deep.py").write_text("X = 1\n")
    (tmp_path / "unrelated").mkdir()
    (tmp_path / "unrelated" / "other.py").write_text("Y = 2\n")
    monkeypatch.chdir(tmp_path)
    from fusionlint.project.scope import index_scope
    settings = Settings(root=tmp_path)
    assert index_scope(["proj/net.py"], settings) == [Path("proj/helpers.py"), Path("proj/net.py")]
    assert index_scope(["proj"], settings) == [Path("proj")]
    with_config = Settings(root=tmp_path, config_path=tmp_path / "pyproject.toml")
    assert index_scope(["proj/net.py"], with_config) == [tmp_path]


def test_experts_subclass_inherits_the_dispatcher_of_a_decorated_base(tmp_path):
    # transformers 5.24: `BeamExperts(DeepseekV4Experts)` adds no forward, and
    # `@use_experts_implementation` on the base swapped the base's forward for a dispatcher, so the
    # eager loop is not what a block calling `self.experts(...)` traces. A subclass that writes its own
    # forward runs that forward, and is linted.
    root = project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/experts.py": HEAD + """\
            from .integrations import use_experts_implementation

            @use_experts_implementation
            class BaseExperts(nn.Module):
                def forward(self, h, idx):
                    hit = torch.nonzero(idx)
                    return h[hit]
        """,
        "pkg/integrations.py": "def use_experts_implementation(cls):\n    return cls\n",
        "pkg/sub.py": HEAD + """\
            from .experts import BaseExperts

            class SubExperts(BaseExperts):
                pass

            class OwnExperts(BaseExperts):
                def forward(self, h, idx):
                    hit = torch.nonzero(idx)
                    return h[hit]
        """,
        "pkg/block.py": HEAD + """\
            from .sub import SubExperts, OwnExperts

            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.experts = SubExperts()

                def forward(self, h, idx):
                    return self.experts(h, idx)

            class OwnBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.experts = OwnExperts()

                def forward(self, h, idx):
                    return self.experts(h, idx)
        """,
    })
    findings = lint(root)
    assert at(findings, "FL103", "pkg/experts.py") == []
    assert at(findings, "FL103", "pkg/sub.py") == [("pkg/sub.py", 10)]


# Two scripts with the same name in plain directories (examples/a/train.py, examples/b/train.py) are
# two modules to the project model: each file's facts are its own, so linting the whole tree gives
# each file what linting it alone gives (before, the second file read the first one's facts and its
# forward was not compiled).
def test_same_named_scripts_in_two_directories_keep_their_own_facts(tmp_path):
    plain = HEAD + """
        class Model(nn.Module):
            def forward(self, x):
                return x + 1
        """
    calls_helper = HEAD + """
        from helpers import normalize

        class Model(nn.Module):
            def forward(self, x):
                return normalize(x)
        """
    helpers = HEAD + """
        def normalize(x):
            return x / x.abs().max().item()
        """
    root = project(tmp_path, {
        "examples/a/train.py": plain, "examples/b/train.py": calls_helper, "examples/b/helpers.py": helpers,
    })
    together = at(lint(root), "FL101")
    assert together == [("examples/b/helpers.py", 4)]
    assert at(lint(root, "examples/b/helpers.py"), "FL101") == together


# A read inside a name's own re-binding sees the bindings before it (transformers' esmfold
# `EsmCategoricalMixture.__init__`: `bins = torch.linspace(start, end, bins + 1, ...)` with `bins=50`):
# `bins + 1` is a Python int there, so the size is not a tensor value. A tensor parameter re-bound the
# same way is still a tensor where it is read.
def test_a_read_in_its_own_rebinding_sees_the_earlier_bindings(tmp_path):
    root = project(tmp_path, {"mix.py": HEAD + """
        class Head(nn.Module):
            def forward(self, x, bins=50):
                bins = torch.linspace(0, 1, bins + 1, device=x.device)
                return x * bins[:-1].sum()

        class Counts(nn.Module):
            def forward(self, x, counts):
                counts = torch.linspace(0, 1, counts + 1)
                return x * counts

        class Later(nn.Module):
            def forward(self, x, n=4):
                n = x.sum()
                n = torch.linspace(0, 1, n + 1)
                return x * n
        """})
    assert at(lint(root), "FL103") == [("mix.py", 10), ("mix.py", 16)]


# torch's typed tensor classes in annotations are tensors (transformers writes `input_ids:
# torch.LongTensor`, `hidden_states: torch.FloatTensor`); an `int` annotation still is not one.
def test_typed_tensor_annotations_are_tensors(tmp_path):
    root = project(tmp_path, {"typed.py": HEAD + """
        class Model(nn.Module):
            def forward(self, hidden_states: torch.FloatTensor, mask: torch.LongTensor | None = None, n: int = 2):
                if hidden_states.sum() > 0:
                    hidden_states = hidden_states * 2
                k = mask.sum().item()
                return hidden_states[:n] * k
        """})
    found = lint(root)
    assert at(found, "FL102") == [("typed.py", 5)]
    assert at(found, "FL101") == [("typed.py", 7)]


# docs/zoo-audit.md round 4, pattern 3: FL105 knows disabled functions by bare name, so an explicit
# `Base.__init__(self)` matched an unrelated class's disabled `__init__` in another file of the run
def test_an_explicit_base_init_call_is_not_another_classs_disabled_init(tmp_path):
    root = project(tmp_path, {
        "flex.py": HEAD + """
        class Wrapped:
            @torch.compiler.disable(recursive=False)
            def __init__(self):
                self.ready = True
        """,
        "traits.py": HEAD + """
        class Lazy:
            def __init__(self, lazy=False):
                self.lazy = lazy
        """,
        "pad.py": HEAD + """
        import traits

        class Pad(traits.Lazy):
            def __init__(self):
                traits.Lazy.__init__(self, lazy=True)

        class Net(nn.Module):
            def forward(self, x):
                Pad()
                return x + 1
        """,
    })
    assert at(lint(root), "FL105") == []


# docs/zoo-audit.md round 4, patterns 1 and 2: constants that every compiled call passes rule out
# branches of the helper (big_bird's `set_attention_type("original_full")` never builds the block-sparse
# attention; a `ddp=None` default never takes `if ddp is not None:`). Measured (torch 2.13 CPU, eager
# backend, the ATTN example): GB0264 and GB0119 in Full's __init__ only; Sparse and the print not traced.
ATTN = HEAD + """
class Full(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 8)


class Sparse(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 8)


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.mode = "sparse"
        self.impl = Sparse()

    def set_mode(self, value, ddp=None):
        self.mode = value
        if value == "full":
            self.impl = Full()
        else:
            self.impl = Sparse()
        if ddp is not None:
            print(ddp.sum().item())
"""


def test_constants_every_compiled_call_passes_rule_out_branches(tmp_path):
    root = project(tmp_path, {"attn.py": ATTN + """
    def forward(self, x):
        if x.shape[1] < 4:
            self.set_mode("full")
        return x
"""})
    found = lint(root)
    assert at(found, "FL112") == [("attn.py", 5), ("attn.py", 6)]  # Full's only
    assert at(found, "FL104") == [] and at(found, "FL101") == []


def test_two_compiled_calls_with_different_constants_keep_both_branches(tmp_path):
    root = project(tmp_path, {"attn.py": ATTN + """
    def forward(self, x):
        if x.shape[1] < 4:
            self.set_mode("full")
        else:
            self.set_mode("sparse", ddp=x)
        return x
"""})
    found = lint(root)
    assert at(found, "FL112") == [("attn.py", 5), ("attn.py", 6), ("attn.py", 11), ("attn.py", 12)]
    assert at(found, "FL101") == [("attn.py", 28)]


# What a compiled caller knows of `self.<attr>` when it calls a method of the same object: peft 0.17's
# LoRA layers call `self.unmerge()` only under `if self.merged:`, and unmerge begins with
# `if not self.merged: warnings.warn("Already unmerged. Nothing to do.")`, which is never traced.
# Measured (torch 2.13 CPU, the `graph_breaks` log of the MERGE model): merged, one break at the
# second warn (line 28, after the loop changed `merged_adapters`); not merged, unmerge is not called.
MERGE = HEAD + """
import warnings


class Other:
    def __call__(self):
        if not self.merged_adapters:
            warnings.warn("not this object's attribute")


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.merged_adapters = ["a"]
        self.disable_adapters = True
        self.other = Other()

    def unmerge(self):
        \"\"\"Undo the merge.\"\"\"
        if not self.merged_adapters:
            warnings.warn("Already unmerged. Nothing to do.")
            return
        while len(self.merged_adapters) > 0:
            self.merged_adapters.pop()
        if not self.merged_adapters:
            warnings.warn("unmerged")
"""
ALREADY, OTHER, UNMERGED = 23, 9, 28  # the three warns of MERGE


def test_a_self_attribute_test_around_a_method_call_rules_out_the_methods_first_branch(tmp_path):
    root = project(tmp_path, {"lora.py": MERGE + """
    def forward(self, x):
        if self.disable_adapters:
            if self.merged_adapters:
                self.unmerge()
        return self.lin(x)
"""})
    # the warn after the loop stays: the attribute may have changed by then
    assert at(lint(root), "FL104") == [("lora.py", UNMERGED)]


def test_a_method_that_sets_other_attributes_still_knows_its_test(tmp_path):
    # peft 0.17's BOFT Linear.forward assigns attributes of self elsewhere: that rebinds no name
    root = project(tmp_path, {"lora.py": MERGE + """
    def forward(self, x):
        self.last_shape = x.shape
        if self.merged_adapters:
            self.unmerge()
        self.calls = 1
        return self.lin(x)
"""})
    assert at(lint(root), "FL104") == [("lora.py", UNMERGED)]


def test_a_self_attribute_fact_needs_every_compiled_call_and_the_same_object(tmp_path):
    root = project(tmp_path, {"lora.py": MERGE + """
    def forward(self, x):
        if self.merged_adapters:
            self.unmerge()
        if self.merged_adapters:
            self.other()  # another object's attribute: Other.__call__'s test is not decided
        return self.lin(x)

    def reset(self, x):
        x = self.lin(x)
        self.unmerge()  # not compiled: not a caller that counts
        return x


class Twice(Layer):
    def forward(self, x):
        x = self.lin(x)
        self.unmerge()  # a compiled call made without the test keeps the branch
        return x
"""})
    assert at(lint(root), "FL104") == [("lora.py", OTHER), ("lora.py", ALREADY), ("lora.py", UNMERGED)]


def test_a_self_attribute_test_is_known_only_at_the_first_statement_of_the_branch(tmp_path):
    root = project(tmp_path, {"lora.py": MERGE + """
    def forward(self, x):
        if self.merged_adapters:
            x = self.lin(x)
            self.unmerge()  # `self.lin(x)` ran first: it could have changed the attribute
        return x
"""})
    assert at(lint(root), "FL104") == [("lora.py", ALREADY), ("lora.py", UNMERGED)]


# A helper told a tensor's size by every compiled caller takes its tuple branch: diffusers 0.36's
# prx `seq2img(img, self.patch_size, hidden_states.shape)` with `elif isinstance(shape, torch.Tensor):
# shape = (int(shape[0]), int(shape[1]))` (measured, torch 2.13 CPU: `torch._dynamo.explain` of the
# SEQ2IMG model called with `x.shape`, 0 breaks and 1 graph; torch.Size is a tuple).
SEQ2IMG = HEAD + """
def seq2img(seq, shape: torch.Tensor):
    if isinstance(shape, tuple):
        shape = shape[-2:]
    elif isinstance(shape, torch.Tensor):
        shape = (int(shape[0]), int(shape[1]))
    else:
        raise NotImplementedError
    return seq.view(seq.shape[0], -1, *shape)


class Net(nn.Module):
"""


def test_a_size_every_compiled_caller_passes_rules_out_the_tensor_branch(tmp_path):
    for passed in ("x.shape", "x.shape[-2:]", "x.size()"):
        root = project(tmp_path, {"net.py": SEQ2IMG + f"""
    def forward(self, x):
        return seq2img(x.flatten(2), {passed})
"""})
        assert at(lint(root), "FL101") == [], passed


def test_a_tensor_passed_by_one_compiled_caller_keeps_the_tensor_branch(tmp_path):
    root = project(tmp_path, {"net.py": SEQ2IMG + """
    def forward(self, x):
        a = seq2img(x.flatten(2), x.shape)
        return a, seq2img(x.flatten(2), torch.tensor(x.shape[-2:]))
"""})
    assert at(lint(root), "FL101") == [("net.py", 7), ("net.py", 7)]


def test_the_callers_size_decides_only_tests_before_the_parameter_is_rebound(tmp_path):
    root = project(tmp_path, {"net.py": HEAD + """
def helper(seq, shape):
    shape = torch.tensor(shape)
    if isinstance(shape, torch.Tensor):
        return seq * int(shape[0])
    return seq


class Net(nn.Module):
    def forward(self, x):
        return helper(x, x.shape)
"""})
    assert at(lint(root), "FL101") == [("net.py", 6)]


# Unpacking a project submodule's tuple: the items its forward returns as sizes are no tensors
# (diffusers 0.36's lumina_nextdit2d: `hidden_states, mask, img_size, freqs = self.patch_embedder(...)`,
# `height, width = img_size[0]`, `hidden_states[:, :sequence_length]` from them was an FL103).
EMBED = HEAD + """
class PatchEmbed(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        batch_size, channels, height, width = x.size()
        x = self.proj(x.flatten(2).transpose(1, 2))
        return x, [(height, width)] * batch_size, x.amax(-1)
"""


def test_sizes_a_submodule_returns_in_a_tuple_are_no_tensors(tmp_path):
    root = project(tmp_path, {"embed.py": EMBED, "net.py": HEAD + """
from .embed import PatchEmbed


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = PatchEmbed()

    def forward(self, x):
        h, sizes, peak = self.embed(x)
        height, width = sizes[0]
        n = height * width
        return h[:, :n], h[:, : peak.max()]
""", "__init__.py": ""})
    found = lint(root)
    # the size-bounded slice is silent; the one bounded by a tensor item still breaks
    assert [(f.line, f.column) for f in found if f.code == "FL103"] == [(15, 26)], found


def test_a_submodule_whose_returns_differ_in_length_keeps_every_item_a_tensor(tmp_path):
    root = project(tmp_path, {"net.py": EMBED + """
    def alt(self, x):
        return x


class Net(nn.Module):
    def __init__(self, flag):
        super().__init__()
        if flag:
            self.embed = PatchEmbed()
        else:
            self.embed = Other()

    def forward(self, x):
        h, sizes, peak = self.embed(x)
        return h[:, : sizes[0]]


class Other(nn.Module):
    def forward(self, x):
        return x, x.sum(-1), x
"""})
    assert len(at(lint(root), "FL103")) == 1


# What TorchScript and the JIT tracer ask is False under torch.compile, so what they guard is never
# traced: torchvision 0.28's `if torchvision._is_tracing(): return _onnx_paste_masks_in_image_loop(...)`
# gave 8 FL103 and 2 FL101 in the ONNX helpers (measured, torch 2.13 CPU: `if torch.jit.is_tracing():`,
# `if torch.jit.is_scripting() or _is_tracing():` around `x.sum().item()`: 0 breaks, 1 graph).
TRACING = HEAD + """import torchvision


def onnx_loop(x):
    return x * x.sum().item()


def helper(x):
    if torchvision._is_tracing():
        return onnx_loop(x)
    return x * 2


class Net(nn.Module):
    def forward(self, x):
        if torch.jit.is_scripting():
            x = x * float(x.sum())
        if not torch.jit.is_tracing():
            x = x + 1
        else:
            x = x * x.amax().item()
"""


def test_branches_only_torchscript_or_the_tracer_take_are_not_traced(tmp_path):
    root = project(tmp_path, {"net.py": TRACING + "        return helper(x)\n"})
    assert at(lint(root), "FL101") == []


def test_a_helper_also_called_outside_the_tracing_branch_is_traced(tmp_path):
    root = project(tmp_path, {"net.py": TRACING + "        return helper(x) + onnx_loop(x)\n"})
    assert at(lint(root), "FL101") == [("net.py", 7)]


def test_a_helper_in_another_file_called_only_while_tracing_is_not_traced(tmp_path):
    root = project(tmp_path, {
        "__init__.py": "",
        "onnx.py": HEAD + "def loop(x):\n    return x * x.sum().item()\n",
        "net.py": HEAD + """from .onnx import loop


class Net(nn.Module):
    def forward(self, x):
        if torch.jit.is_tracing():
            return loop(x)
        return x * 2
""",
    })
    assert at(lint(root), "FL101") == []


# docs/zoo-audit.md round 5 (transformers' evolla): a name that holds a list before it is re-bound to a
# tensor is a list where it is tested (`if not kv:` is a Python truth test, no break). A read in a loop
# that re-binds the name to a tensor sees the tensor of the previous iteration, so it stays flagged.
def test_a_list_read_before_its_tensor_rebinding_is_not_a_tensor(tmp_path):
    root = project(tmp_path, {"kv.py": HEAD + """
        class Lists(nn.Module):
            def forward(self, x, a_mask, b_mask=None):
                kv = [a_mask, b_mask]
                kv = [m for m in kv if m is not None]
                if not kv:
                    raise ValueError("need one")
                kv = torch.cat(kv, dim=1)
                return x * kv

        class Loop(nn.Module):
            def forward(self, x, steps=3):
                acc = []
                for _ in range(steps):
                    if acc:
                        x = x + 1
                    acc = x.sum()
                return x
        """})
    assert at(lint(root), "FL102") == [("kv.py", 16)]


# docs/zoo-audit.md round 5, pattern 4 (qwen2.5-omni's AttentiveStatisticsPooling): every compiled call
# passes `max_len=` a local bound once to a size, which is never None, so `if max_len is None:` is dead
# there (measured, torch 2.13 CPU: 0 breaks). One call that leaves the default keeps the arm live.
def test_a_none_default_that_every_caller_sets_to_a_size_rules_out_the_none_branch(tmp_path):
    body = """
            def _length_to_mask(self, length, max_len=None):
                if max_len is None:
                    max_len = length.max().item()
                return torch.arange(max_len) < length.unsqueeze(1)
    """
    root = project(tmp_path, {"pool.py": HEAD + """
        class Pool(nn.Module):""" + body + """
            def forward(self, h):
                n = h.shape[-1]
                return h * self._length_to_mask(torch.ones(h.shape[0]) * n, max_len=n).unsqueeze(1)

        class Open(nn.Module):""" + body + """
            def forward(self, h):
                n = h.shape[-1]
                lengths = torch.ones(h.shape[0]) * n
                return h * self._length_to_mask(lengths, max_len=n).unsqueeze(1) + self._length_to_mask(lengths).sum()
        """})
    assert at(lint(root), "FL101") == [("pool.py", 16)]


def test_a_finding_says_why_its_value_is_a_tensor(tmp_path):
    # each way the function's tensor facts know a name: an assignment, a tuple unpacked from a tensor,
    # a loop over one, an annotated parameter of a compiled helper, forward's plain parameter
    root = project(tmp_path, {"net.py": HEAD + """
        def helper(t: torch.Tensor, k):
            return int(t.sum())

        class Net(nn.Module):
            def forward(self, x, valid, lens):
                mask = x > 0
                if mask.any():
                    x = x + 1
                q, k = x.unbind(0)
                s = q.std().item()
                for row in x:
                    if row.max() > 0:
                        x = x * 2
                if valid.all():
                    x = x - 1
                if lens.any():
                    x = x - 2
                keep = x.sum(-1) > 0
                kept = x[keep]
                return helper(x, 2) + s + kept.sum()
            """})
    found = {f.line: f.message for f in lint(root) if f.code in ("FL101", "FL102", "FL103")}
    why = {line: reason(message) for line, message in found.items()}
    assert why == {
        4: "`t` is a tensor: parameter of helper annotated `torch.Tensor`)",
        9: "`mask` is a tensor: assigned `x > 0` in Net.forward)",
        12: "`q` is a tensor: unpacked from `x.unbind(0)` in Net.forward)",
        14: "`row` is a tensor: loop variable over `x` in Net.forward)",
        16: "`valid` is a tensor: parameter of Net.forward, whose parameters are tensors unless a default, "
            "an annotation or a use says otherwise)",
        # a name that reads like a length is not taken for a tensor by its name; the project model's
        # use of it is why
        18: "`lens` is a tensor: parameter of Net.forward, used as one)",
        # boolean-mask indexing: the mask is what the finding is about, not the tensor indexed
        21: "`keep` is a tensor: assigned `x.sum(-1) > 0` in Net.forward)",
    }, found


def test_a_rule_not_about_tensors_gives_no_tensor_reason(tmp_path):
    # FL104 flags print() whatever it prints: a tensor argument is not why
    root = project(tmp_path, {"net.py": HEAD + """
        class Net(nn.Module):
            def forward(self, x):
                y = x * 2
                print(y)
                return y
            """})
    found = [f for f in lint(root) if f.code == "FL104"]
    assert len(found) == 1 and "is a tensor" not in found[0].message, found


def test_isinstance_tensor_branch_on_python_arithmetic_is_dead(tmp_path):
    # diffusers 0.42.1 (autoencoder_kl_kvae_video.py): a float computed from a size comparison; the
    # isinstance branch never runs (torch 2.13 CPU: 0 breaks), so its `.item()` reports nothing
    root = project(tmp_path, {"net.py": HEAD + """
        class Up(nn.Module):
            def forward(self, x):
                time_factor = 1.0 + 1.0 * (x.size(2) > 1)
                if isinstance(time_factor, torch.Tensor):
                    time_factor = time_factor.item()
                scale = x.sum() * 2
                if isinstance(scale, torch.Tensor):
                    scale = scale.item()
                return x * time_factor * scale
            """})
    # (FL208: the float `.item()` reads is a constant of the frame resumed after it, guarded where read)
    assert [(f.code, f.line) for f in lint(root)] == [("FL101", 10), ("FL208", 11)]


def test_comprehension_over_a_tensor_binds_tensor_rows(tmp_path):
    # transformers 5.24.0 gemma4 `[int(video_frames.sum()) for video_frames in torch.split(...)]`;
    # torch 2.13 CPU: `int(r.max())` in a comprehension over a tensor breaks (GB0124)
    root = project(tmp_path, {"net.py": HEAD + """
        class Net(nn.Module):
            def forward(self, x):
                zs = [int(r.max()) for r in x]
                sizes = [int(n) for n in range(x.shape[0])]
                return x.sum() + sum(zs) + sum(sizes)
            """})
    found = [(f.code, f.line, f.message.rsplit(" (", 1)[-1]) for f in lint(root) if f.code == "FL101"]
    # the range's `n` is an int: no FL101 on line 6
    assert found == [("FL101", 5, "`r` is a tensor: loop variable over `x` in Net.forward)")], found


def test_enumerate_and_zip_over_tensors_bind_tensor_rows(tmp_path):
    # torch 2.13 CPU: `int(row.max())` in `for i, row in enumerate(x)` breaks (GB0124) and the loop's
    # frame then runs eagerly, so the loop itself is no FL204
    root = project(tmp_path, {"net.py": HEAD + """
        class Net(nn.Module):
            def forward(self, x, y):
                out = x.new_zeros(())
                for i, row in enumerate(x):
                    out = out + int(row.max()) * i
                for a, b in zip(x, y):
                    if a.sum() > b.sum():
                        out = out + 1
                for i, n in enumerate(range(3)):
                    out = out + int(n)
                return out
            """})
    found = [(f.code, f.line, reason(f.message)) for f in lint(root)]
    assert found == [
        ("FL101", 7, "`row` is a tensor: loop variable over `x` in Net.forward)"),
        ("FL102", 9, "`a` is a tensor: loop variable over `x` in Net.forward)"),
    ], found


def test_a_comprehension_variable_does_not_leak_into_a_loop_of_the_same_name(tmp_path):
    # transformers 5.24.0 depth_pro: `for i in range(n): images[i] = ...` beside
    # `[len(i) for i in images]`; the loop's `i` is an int (a false positive while the comprehension's
    # `i`, a tensor, counted for the whole function)
    root = project(tmp_path, {"net.py": HEAD + """
        class Net(nn.Module):
            def forward(self, x):
                images = []
                for r in (1.0, 0.5):
                    images.append(x * r)
                for i in range(2):
                    images[i] = images[i] + 1
                sizes = [len(i) for i in images]
                total = 0.0
                for p in images:
                    total = total + float(p.sum())
                return x * total + sizes[0]
            """})
    found = [(f.code, f.line) for f in lint(root) if f.code.startswith("FL1")]
    assert found == [("FL101", 13)], found


def test_tuple_displays_and_appended_lists_of_tensors_are_sequences(tmp_path):
    # torch 2.13 CPU: `if t.mean() > 0` breaks (GB0170), then the frame runs eagerly; in a forward of
    # its own, `float(p.sum())` over the appended list breaks too (GB0124). A tuple of sizes stays no
    # sequence of tensors
    root = project(tmp_path, {"net.py": HEAD + """
        class Net(nn.Module):
            def forward(self, x):
                h = x
                for t in (h, h * 2):
                    if t.mean() > 0:
                        h = h + t
                parts = []
                for i in range(3):
                    parts.append(x * i)
                total = 0.0
                for p in parts:
                    total = total + float(p.sum())
                for n in (x.shape[0], x.shape[1]):
                    total = total + int(n)
                return h * total
            """})
    found = [(f.code, f.line) for f in lint(root) if f.code.startswith("FL1")]
    assert found == [("FL102", 7), ("FL101", 14)], found


def test_a_finding_that_stands_on_one_value_says_why_that_value_is_a_tensor(tmp_path):
    root = project(tmp_path, {"net.py": HEAD + """
        class Net(nn.Module):
            def forward(self, x, e: torch.Tensor | None = None):
                mask = x > 0
                mask.requires_grad = True
                x.squeeze_()
                if e is not None and torch.jit.isinstance(e, torch.Tensor):
                    return x + e
                return x * mask
            """})
    found = {f.line: f.message for f in lint(root) if f.code == "FL112"}
    assert sorted(found) == [6, 7, 8], found
    assert found[6].endswith("(`mask` is a tensor: assigned `x > 0` in Net.forward)")
    assert "(`x` is a tensor: parameter of Net.forward" in found[7]
    assert "is a tensor" not in found[8]  # the finding is about the helper, not about `e`


def test_a_default_filled_only_in_eager_is_reported_where_a_helper_reads_it(tmp_path):
    root = project(tmp_path, {"net.py": HEAD + """
        def _blocks(x, n: int):
            return x.unflatten(1, (-1, n))

        def _first(m):
            return m[0]

        class Net(nn.Module):
            def forward(self, x, mask=None):
                if mask is None and not torch.compiler.is_compiling():
                    mask = torch.ones(x.shape[0], x.shape[1])
                a = _blocks(mask, 2)
                return x * a.sum()

        class Other(nn.Module):
            def forward(self, x, mask=None):
                if mask is None and not torch.compiler.is_compiling():
                    mask = torch.ones(x.shape[0], x.shape[1])
                return x * _first(mask)
            """})
    found = sorted((f.line, f.message) for f in lint(root) if f.code == "FL106")
    # at the helper's read when the helper is visited (it makes a call); at the call when it is not
    assert [line for line, _ in found] == [4, 20], found
    assert "`Net.forward` fills `mask` only when not compiling" in found[0][1]
    assert "`_first(...)` uses it without a None test (`m[0]` in `_first`)" in found[1][1]


# Forms found by the recall bench on PyTorch Geometric 2.8.1 (torch 2.13 CPU: each line broke the graph)
def test_a_call_reaches_the_plain_definition_after_its_overload_stubs(tmp_path):
    # PyG declares TorchScript overloads (`@torch.jit._overload` imported as `overload`) before the
    # real `remove_self_loops`; the stubs' empty bodies are never what a call runs
    root = project(tmp_path, {
        "graph/__init__.py": "",
        "graph/utils.py": """
            from typing import Optional, Tuple
            import torch
            from torch import Tensor
            from torch.jit import _overload as overload

            @overload
            def remove_self_loops(edge_index: Tensor, edge_attr: None = None) -> Tuple[Tensor, None]:
                pass

            @overload
            def remove_self_loops(edge_index: Tensor, edge_attr: Tensor) -> Tuple[Tensor, Tensor]:
                pass

            def remove_self_loops(edge_index: Tensor, edge_attr: Optional[Tensor] = None):
                mask = edge_index[0] != edge_index[1]
                edge_index = edge_index[:, mask]
                return edge_index, edge_attr
            """,
        "graph/net.py": HEAD + """
            from graph.utils import remove_self_loops

            class Net(nn.Module):
                def forward(self, x, edge_index):
                    edge_index, _ = remove_self_loops(edge_index)
                    return x, edge_index
            """,
    })
    found = lint(root, "graph/net.py", "graph/utils.py")
    assert at(found, "FL103") == [("graph/utils.py", 16)]


def test_attribute_reads_under_an_isinstance_of_another_class_keep_the_tensor(tmp_path):
    # `edge_index.is_undirected` is read as an `EdgeIndex` (a Tensor subclass of the project): it says
    # nothing about `edge_index` outside that branch, which stays the annotated tensor
    body = """
        from sparse_tools import to_edge_index

        class EdgeIndex(torch.Tensor):
            is_undirected = False

        def remove_self_loops(edge_index: torch.Tensor, sparse: bool = False):
            if sparse:
                edge_index, _ = to_edge_index(edge_index)
            undirected = False
            if isinstance(edge_index, EdgeIndex):
                undirected = edge_index.is_undirected
            mask = edge_index[0] != edge_index[1]
            return edge_index[:, mask], undirected

        class Net(nn.Module):
            def forward(self, x, edge_index):
                return x, remove_self_loops(edge_index)
        """
    root = project(tmp_path, {"net.py": HEAD + body})
    assert at(lint(root, "net.py"), "FL103") == [("net.py", 15)]
    # without the guard the same read is evidence that `edge_index` is not a tensor: no finding
    unguarded = body.replace("if isinstance(edge_index, EdgeIndex):", "if undirected is False:")
    (root / "net.py").write_text(_dedent(HEAD + unguarded))
    assert at(lint(root, "net.py"), "FL103") == []


def test_a_function_annotated_to_return_a_tensor_returns_one(tmp_path):
    # PyG's `scatter(...) -> Tensor` ends in `torch_scatter.scatter(...)`, a package the linter cannot see;
    # the annotation still makes `num_nodes` a tensor, and `int(num_nodes.max())` a break
    helpers = """
        import torch
        from torch import Tensor
        import torch_scatter

        def scatter(src: Tensor, index: Tensor, reduce: str = "sum"){annotation}:
            if reduce == "sum":
                return src.new_zeros(4).scatter_add_(0, index, src)
            return torch_scatter.scatter(src, index, reduce=reduce)
        """
    net = HEAD + """
        from helpers import scatter

        class Net(nn.Module):
            def forward(self, x, batch):
                num_nodes = scatter(batch.new_ones(x.size(0)), batch)
                return x[: int(num_nodes.max())]
        """
    root = project(tmp_path, {"helpers.py": helpers.replace("{annotation}", " -> Tensor"), "net.py": net})
    assert at(lint(root, "net.py"), "FL101") == [("net.py", 8)]
    # unannotated, one return is an unknown package's call: not surely a tensor
    (root / "helpers.py").write_text(_dedent(helpers.replace("{annotation}", "")))
    assert at(lint(root, "net.py"), "FL101") == []


def test_a_mask_rebound_in_the_same_block_is_the_one_that_reaches_the_read(tmp_path):
    # PyG's filter_adj: `mask` is first an index map (`new_full`), then a boolean mask; the indexing
    # after the second binding reads the boolean one (torch 2.13 CPU: GB0036 at that line)
    body = """
        class Net(nn.Module):
            def forward(self, x, edge_index, node_index):
                mask = node_index.new_full((x.size(0),), -1)
                mask[node_index] = torch.arange(node_index.size(0))
                row, col = mask[edge_index[0]], mask[edge_index[1]]
                {rebinding}
                row = row[mask]
                return x, row
        """
    root = project(tmp_path, {"net.py": HEAD + body.replace("{rebinding}", "mask = (row >= 0) & (col >= 0)")})
    assert at(lint(root, "net.py"), "FL103") == [("net.py", 9)]
    # rebound only in a branch, the index map may still reach the read: not surely a boolean mask
    branch = "if x.dim() > 1:\n                    mask = (row >= 0) & (col >= 0)"
    (root / "net.py").write_text(_dedent(HEAD + body.replace("{rebinding}", branch)))
    assert at(lint(root, "net.py"), "FL103") == []


def test_repeat_interleave_with_an_output_size_that_every_compiled_call_leaves_none(tmp_path):
    # PyG's `ptr2index(ptr, output_size=None)` passes `output_size=output_size` on: a compiled caller
    # that leaves it None gets the data-dependent size (torch 2.13 CPU: GB0036 at that line)
    helpers = """
        from typing import Optional
        import torch
        from torch import Tensor

        def ptr2index(ptr: Tensor, output_size: Optional[int] = None) -> Tensor:
            index = torch.arange(ptr.numel() - 1, device=ptr.device)
            return index.repeat_interleave(ptr.diff(), output_size=output_size)
        """
    net = HEAD + """
        from helpers import ptr2index

        class Net(nn.Module):
            def forward(self, x, ptr):
                return x, ptr2index(ptr{size})
        """
    root = project(tmp_path, {"helpers.py": helpers, "net.py": net.replace("{size}", "")})
    found = lint(root, "net.py", "helpers.py")
    assert at(found, "FL103") == [("helpers.py", 7)]
    assert "is None in every compiled call" in next(f.message for f in found if f.code == "FL103")
    (root / "net.py").write_text(_dedent(net.replace("{size}", ", output_size=x.size(0)")))
    assert at(lint(root, "net.py", "helpers.py"), "FL103") == []


def test_a_name_rebound_to_python_data_is_no_tensor_after_it(tmp_path):
    # diffusers' IF safety checker: `flags = (x > t).tolist()` then `if any(flags):` and a loop over
    # the Python bools; the `.tolist()` line breaks (FL101), the reads after it do not
    root = project(tmp_path, {"net.py": HEAD + """
        class Checker(nn.Module):
            def forward(self, x, images):
                flags = x.flatten()
                flags = flags > 0.5
                flags = flags.tolist()
                if any(flags):
                    images = images * 0
                for i, flag in enumerate(flags):
                    if flag:
                        images[i] = 0
                return images
        """})
    found = lint(root, "net.py")
    assert at(found, "FL101") == [("net.py", 7)]
    assert at(found, "FL102") == []


def test_items_of_a_comprehension_of_tensor_tuples_unpack_to_tensors(tmp_path):
    # transformers' Mistral3 patch merger re-binds `image_sizes` (a tensor) to a list of tuples of
    # 0-d tensors and unpacks `h, w` from an item: `view(h, w, d)` reads them on the host (GB0033)
    root = project(tmp_path, {"net.py": HEAD + """
        class Merger(nn.Module):
            def forward(self, image_features: torch.Tensor, image_sizes: torch.Tensor):
                image_sizes = [(s[0] // 14, s[1] // 14) for s in image_sizes]
                tokens = [h * w for h, w in image_sizes]
                d = image_features.shape[-1]
                out = []
                for i, part in enumerate(image_features.split(tokens)):
                    h, w = image_sizes[i]
                    out.append(part.view(h, w, d))
                return out
        """})
    assert ("net.py", 11) in at(lint(root, "net.py"), "FL103")


def test_an_isinstance_guard_on_a_project_tensor_subclass_keeps_the_tensor(tmp_path):
    # PyG's collate: `isinstance(value, Index) and values[0].is_sorted` then `(value.diff() >= 0).all()`;
    # `Index` subclasses torch.Tensor in another file, so the branch tests a tensor (GB0170 there), while
    # a guard on a class that is no tensor (`SparseTensor` from torch_sparse) says nothing of the kind
    root = project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/index.py": "import torch\nfrom torch import Tensor\n\n\nclass Index(Tensor):\n    is_sorted = False\n\n\n"
                        "class Graph:\n    is_sorted = False\n",
        "pkg/net.py": HEAD + """
            from pkg.index import Index

            class Net(nn.Module):
                def forward(self, value: torch.Tensor):
                    if isinstance(value, Index) and value.is_sorted:
                        if (value.diff() >= 0).all():
                            value = value * 2
                    return value
            """,
    })
    net = (root / "pkg/net.py").read_text()
    assert at(lint(root, "pkg/net.py"), "FL102") == [("pkg/net.py", 8)]
    (root / "pkg/net.py").write_text(net.replace("Index", "Graph"))
    assert at(lint(root, "pkg/net.py"), "FL102") == []


def test_a_mask_that_a_project_function_returns_as_a_boolean_tensor(tmp_path):
    # PyG's GPSConv: `h, mask = to_dense_batch(x, batch)` then `h = h[mask]` (GB0036 there, torch 2.13
    # CPU, measured by the recall bench); `to_dense_batch` makes `mask` with `dtype=torch.bool`
    helpers = """
        import torch
        from torch import Tensor

        def to_dense_batch(x: Tensor, batch: Tensor, size: int = 4):
            if batch is None:
                mask = torch.ones(1, x.size(0), dtype=torch.bool, device=x.device)
                return x.unsqueeze(0), mask
            out = x.new_zeros(size * size, x.size(-1))
            mask = torch.zeros(size * size, dtype={dtype}, device=x.device)
            mask[batch] = 1
            mask = mask.view(size, size)
            return out.view(size, size, -1), mask
        """
    net = HEAD + """
        from helpers import to_dense_batch

        class Block(nn.Module):
            def forward(self, x, batch):
                h, mask = to_dense_batch(x, batch)
                return h[mask]
        """
    root = project(tmp_path, {"helpers.py": helpers.replace("{dtype}", "torch.bool"), "net.py": net})
    assert at(lint(root, "net.py"), "FL103") == [("net.py", 8)]
    # a float mask is no boolean index (it would not even run): nothing to report
    (root / "helpers.py").write_text(_dedent(helpers.replace("{dtype}", "torch.float")))
    assert at(lint(root, "net.py"), "FL103") == []


def test_a_switch_named_like_one_is_no_tensor_argument(tmp_path):
    # x-transformers' Attend.forward(q, k, v, mask=None, causal=None): `causal = default(causal, self.causal)`
    # then `if n == 1 and causal:` tests a Python bool (no break measured on any of its 37 configurations)
    root = project(tmp_path, {"net.py": HEAD + """
        def default(val, d):
            return val if val is not None else d

        class Attend(nn.Module):
            def __init__(self, causal=False):
                super().__init__()
                self.causal = causal

            def forward(self, q, mask=None, causal=None, use_flash=None):
                causal = default(causal, self.causal)
                if q.shape[1] == 1 and causal:
                    causal = False
                if use_flash:
                    q = q * 2
                if mask.any():
                    q = q * mask
                return q
        """})
    assert at(lint(root, "net.py"), "FL102") == [("net.py", 17)]  # the mask test only


def test_a_draw_from_python_random_imported_by_name(tmp_path):
    # x-transformers 2.31: `from random import random` then `if self.training and random() < p:` in the
    # layers' forward (the recall bench recorded "Attempted to call function marked as skipped" there)
    root = project(tmp_path, {"net.py": """
        from random import random, randrange
        import torch
        from torch import nn

        class Layers(nn.Module):
            def forward(self, x, layer_dropout: float = 0.1):
                if self.training and random() < layer_dropout:
                    return x
                return x * randrange(1, 3)
        """})
    assert at(lint(root, "net.py"), "FL106") == [("net.py", 7), ("net.py", 9)]


def test_a_helper_that_hands_back_an_argument_gives_what_each_call_passes(tmp_path):
    # x-transformers' `default(val, d)` (`return val if exists(val) else d`) is called with tensors and
    # with Python switches; a tensor passed at one call must not make every call's result a tensor
    root = project(tmp_path, {"net.py": HEAD + """
        def exists(v):
            return v is not None

        def default(val, d):
            return val if exists(val) else d

        class Attend(nn.Module):
            def __init__(self):
                super().__init__()
                self.sparse = False

            def forward(self, q, mask=None):
                mask = default(mask, q.new_ones(q.shape))
                sparse = default(None, self.sparse)
                if sparse:
                    q = q * 2
                return q * mask.sum().item()
        """})
    assert at(lint(root, "net.py"), "FL102") == []
    assert at(lint(root, "net.py"), "FL101") == [("net.py", 19)]


def test_a_base_method_calling_self_m_runs_the_subclass_override(tmp_path):
    # PyG's `MessagePassing.edge_updater` calls `self.edge_update(...)`, which GATConv overrides (in
    # another file): from GATConv.forward, the base method runs the override, and what breaks or
    # recompiles there is compiled code (the recall bench: `F.dropout(..., training=self.training)` in
    # `GATConv.edge_update` recompiled on every train/eval switch)
    root = project(tmp_path, {
        "base.py": HEAD + """
            class Passing(nn.Module):
                def updater(self, x):
                    return self.update_edges(x)

                def update_edges(self, x):
                    raise NotImplementedError
            """,
        "gat.py": HEAD + """
            from base import Passing

            class Gat(Passing):
                def forward(self, x):
                    return self.updater(x)

                def update_edges(self, x):
                    return x * x.sum().item()

            class Unused(nn.Module):
                def update_edges(self, x):
                    return x.sum().item()
            """,
    })
    findings = lint(root)
    assert at(findings, "FL101") == [("gat.py", 10)]
    chain = next(f.chain for f in findings if f.code == "FL101")
    assert chain[0] == "Gat.forward" and "base.Passing.updater" in chain[1]
    assert chain[2] == "self.update_edges of a gat.Gat"
