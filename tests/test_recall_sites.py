"""Break sites the recall bench (bench/recall.py) recorded on real models and the static pass missed,
each reduced to a small project in the real package's layout, with a near-miss that must stay silent.

The effects were measured on torch 2.13.0 CPU (backend "eager", ``torch._dynamo.explain``); the rule
docs quote them.
"""

from __future__ import annotations

import importlib.util

from tests.helpers import need
from tests.test_semantic_patterns import HEAD, at, lint, project


# transformers/models/led/modeling_led.py:1328 `logger.warning_once(` (GB0291)
TRANSFORMERS_LOGGING = """
    import functools
    import logging

    def get_logger(name):
        return logging.getLogger(name)

    @functools.lru_cache(None)
    def warning_once(self, *args, **kwargs):
        self.warning(*args, **kwargs)

    logging.Logger.warning_once = warning_once
    """


def test_warning_once_on_a_transformers_logger_breaks(tmp_path):
    root = project(tmp_path, {
        "tfm/__init__.py": "",
        "tfm/utils/__init__.py": "",
        "tfm/utils/logging.py": TRANSFORMERS_LOGGING,
        "tfm/models/led.py": HEAD + """
            from ..utils import logging

            logger = logging.get_logger(__name__)

            class Encoder(nn.Module):
                def forward(self, x, attention_window: int = 4):
                    padding_len = (attention_window - x.shape[1] % attention_window) % attention_window
                    if padding_len > 0:
                        logger.warning_once(f"padded by {padding_len}")
                    return x
            """,
    })
    found = lint(root, "tfm/models/led.py")
    assert at(found, "FL104") == [("tfm/models/led.py", 11)]
    assert "warning_once" in next(f.message for f in found if f.code == "FL104")


def test_warning_once_outside_compiled_code_or_on_another_object_is_silent(tmp_path):
    root = project(tmp_path, {
        "tfm/__init__.py": "",
        "tfm/utils/__init__.py": "",
        "tfm/utils/logging.py": TRANSFORMERS_LOGGING,
        "tfm/models/led.py": HEAD + """
            from ..utils import logging

            logger = logging.get_logger(__name__)

            def load(path):
                logger.warning_once("slow path")  # not compiled: the loader runs eagerly

            class Encoder(nn.Module):
                def __init__(self, reporter):
                    super().__init__()
                    self.reporter = reporter
                    logger.warning_once("built")  # __init__ is not traced

                def forward(self, x):
                    self.reporter.warning_once("x")  # not a logger
                    return x
            """,
    })
    assert at(lint(root), "FL104") == []


# monai/networks/nets/basic_unet.py:161 `torch.jit.isinstance` (GB0007)
def test_torch_jit_isinstance_in_forward_breaks(tmp_path):
    root = project(tmp_path, {"unet.py": HEAD + """
        class UpCat(nn.Module):
            def forward(self, x, x_e=None):
                if x_e is not None and torch.jit.isinstance(x_e, torch.Tensor):
                    x = torch.cat([x_e, x], dim=1)
                return x
        """})
    found = lint(root)
    assert at(found, "FL112") == [("unet.py", 5)]


def test_builtin_isinstance_and_jit_isinstance_outside_compiled_code_are_silent(tmp_path):
    root = project(tmp_path, {"unet.py": HEAD + """
        def check(x):
            return torch.jit.isinstance(x, torch.Tensor)  # never reached from compiled code

        class UpCat(nn.Module):
            def forward(self, x, x_e=None):
                if x_e is not None and isinstance(x_e, torch.Tensor):
                    x = torch.cat([x_e, x], dim=1)
                return x
        """})
    assert at(lint(root), "FL112") == []


# timm/models/sequencer.py:137 `v, _ = self.rnn_v(v)` (GB0014): the base's own __init__ makes the
# attribute an identity module; the subclass's __init__ replaces it with nn.LSTM, under a condition
SEQUENCER_BASE = HEAD + """
    class RNNIdentity(nn.Module):
        def forward(self, x):
            return x, None

    class RNN2dBase(nn.Module):
        def __init__(self, input_size, hidden_size):
            super().__init__()
            self.with_vertical = True
            self.rnn_v = RNNIdentity()

        def forward(self, x):
            B, H, W, C = x.shape
            if self.with_vertical:
                v = x.permute(0, 2, 1, 3).reshape(-1, H, C)
                v, _ = self.rnn_v(v)
                x = v.reshape(B, W, H, -1).permute(0, 2, 1, 3)
            return x
    """


def test_lstm_assigned_by_a_subclass_over_a_base_default(tmp_path):
    root = project(tmp_path, {
        "seq/__init__.py": "",
        "seq/base.py": SEQUENCER_BASE,
        "seq/lstm.py": """
            from torch import nn
            from .base import RNN2dBase

            class LSTM2d(RNN2dBase):
                def __init__(self, input_size, hidden_size):
                    super().__init__(input_size, hidden_size)
                    if self.with_vertical:
                        self.rnn_v = nn.LSTM(input_size, hidden_size, batch_first=True)
            """,
    })
    found = lint(root, "seq/base.py")
    assert at(found, "FL107") == [("seq/base.py", 17)]
    assert "seq/lstm.py:8" in next(f.message for f in found if f.code == "FL107")


def test_subclass_assigning_a_traceable_module_or_an_unrelated_class_lstm_is_silent(tmp_path):
    root = project(tmp_path, {
        "seq/__init__.py": "",
        "seq/base.py": SEQUENCER_BASE,
        "seq/other.py": """
            from torch import nn
            from .base import RNN2dBase

            class Cell2d(RNN2dBase):
                def __init__(self, input_size, hidden_size):
                    super().__init__(input_size, hidden_size)
                    self.rnn_v = nn.LSTMCell(input_size, hidden_size)

            class Unrelated(nn.Module):  # same attribute name, not in RNN2dBase's hierarchy
                def __init__(self):
                    super().__init__()
                    self.rnn_v = nn.LSTM(8, 8)
            """,
    })
    assert at(lint(root), "FL107") == []


# interprocedural values: a helper's return value flows back to its call site
def test_a_helper_returning_a_tensor_makes_its_result_a_tensor(tmp_path):
    root = project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/masks.py": """
            import torch

            def lengths_of(mask):
                return mask.sum(-1)
            """,
        "pkg/net.py": HEAD + """
            from .masks import lengths_of

            class Net(nn.Module):
                def _scores(self, x):
                    return x.mean(-1)

                def forward(self, x, mask):
                    lens = lengths_of(mask)
                    top = self._scores(x)
                    return x[:, : int(lens.max())] * float(top[0])
            """,
    })
    found = lint(root, "pkg/net.py")
    assert at(found, "FL101") == [("pkg/net.py", 12), ("pkg/net.py", 12)]


def test_a_helper_returning_a_python_value_or_a_tuple_is_not_a_tensor(tmp_path):
    root = project(tmp_path, {"net.py": HEAD + """
        def pad_amount(n, window):
            return (window - n % window) % window

        class Net(nn.Module):
            def _sizes(self, x):
                if x.dim() == 3:
                    return x, None
                return x.mean(-1)

            def forward(self, x):
                pad = pad_amount(x.shape[1], 8)
                sizes = self._sizes(x)
                return x[:, : int(pad)], float(sizes[0])
        """})
    assert at(lint(root), "FL101") == []


# functools.partial and functions handed to another call are traced in the caller's context
def test_partial_and_a_function_passed_as_argument_are_compiled_helpers(tmp_path):
    root = project(tmp_path, {"net.py": HEAD + """
        import functools

        def scale_by_max(x, eps):
            return x / x.abs().max().item() + eps

        def row_sum(x):
            return x.sum(-1).tolist()

        def apply(fn, x):
            return fn(x)

        class Net(nn.Module):
            def forward(self, x):
                f = functools.partial(scale_by_max, eps=1e-6)
                y = f(x)
                return apply(row_sum, y)
        """})
    found = lint(root)
    assert sorted(at(found, "FL101")) == [("net.py", 6), ("net.py", 9)]


def test_functions_referenced_only_outside_compiled_code_or_in_isinstance_are_not_compiled(tmp_path):
    root = project(tmp_path, {"net.py": HEAD + """
        import functools

        def stats(x):
            return x.abs().max().item()

        REPORT = functools.partial(stats)

        class Net(nn.Module):
            def forward(self, x):
                if callable(stats):
                    x = x + 1
                return x

        def train(model, x):
            return list(map(stats, [model(x)]))
        """})
    assert at(lint(root), "FL101") == []


# guards: isinstance / is None decide a name inside the code they guard
def test_isinstance_tensor_guard_makes_a_helper_parameter_a_tensor_in_its_branch(tmp_path):
    root = project(tmp_path, {"net.py": HEAD + """
        def to_count(n):
            if isinstance(n, torch.Tensor):
                n = int(n)
            return n

        def halve(t):
            return t // 2 if torch.is_tensor(t) and bool(t > 0) else t

        class Net(nn.Module):
            def forward(self, x, **options):  # what `options` holds is not visible: the guards decide
                return x[: to_count(options["n"])] * halve(options["k"])
        """})
    assert sorted(at(lint(root), "FL101")) == [("net.py", 5), ("net.py", 9)]


def test_guards_that_rule_out_a_tensor_silence_the_read(tmp_path):
    root = project(tmp_path, {"net.py": HEAD + """
        class Net(nn.Module):
            def forward(self, x, n, scale=None, mask=None):
                shape = x.shape
                if isinstance(shape, torch.Tensor):  # dead: a torch.Size is never a tensor
                    shape = shape.tolist()
                if isinstance(n, int):
                    n = torch.arange(n)
                elif isinstance(n, (float, bool)):
                    x = x * float(n)
                if not isinstance(scale, torch.Tensor):
                    scale = float(scale or 1.0)
                if mask is None:
                    return x * scale
                return x * mask
        """})
    found = lint(root)
    assert at(found, "FL101") == [], [(f.code, f.line, f.message) for f in found]


def test_a_guard_ends_where_a_nested_block_rebinds_the_name(tmp_path):
    # transformers t5: `if position_bias is None:` ... `position_bias = torch.zeros(...)` inside an
    # inner `if`, then `position_bias.requires_grad = True` (GB0206): the new value is a tensor
    root = project(tmp_path, {"net.py": HEAD + """
        class Attn(nn.Module):
            def forward(self, x, position_bias=None, counts: list[int] | torch.Tensor | None = None):
                if position_bias is None:
                    if not self.training:
                        position_bias = torch.zeros(x.shape[-1])
                        position_bias.requires_grad = True
                if isinstance(counts, torch.Tensor):
                    counts = counts.tolist()
                return x + position_bias
        """})
    found = lint(root)
    assert at(found, "FL112") == [("net.py", 8)]
    assert at(found, "FL101") == [("net.py", 10)]


# transformers: a module binds `logger = logging.get_logger(__name__)` and others import the name
def test_a_logger_imported_from_another_project_file_breaks(tmp_path):
    root = project(tmp_path, {
        "tfm/__init__.py": "",
        "tfm/utils/__init__.py": "from .log import logger\n",
        "tfm/utils/log.py": "import logging\n\nlogger = logging.getLogger(__name__)\n",
        "tfm/models/__init__.py": "",
        "tfm/models/common.py": """
            from ..utils import logging

            logger = logging.get_logger(__name__)
            """,
        "tfm/utils/logging.py": TRANSFORMERS_LOGGING,
        "tfm/models/enc.py": HEAD + """
            from .common import logger
            from tfm.utils.log import logger as log
            from ..utils import logger as relog

            class Encoder(nn.Module):
                def forward(self, x):
                    logger.warning("relative import")
                    log.info("absolute import")
                    relog.debug("re-exported by the package")
                    return x
            """,
    })
    found = lint(root, "tfm/models/enc.py")
    assert at(found, "FL104") == [("tfm/models/enc.py", n) for n in (9, 10, 11)]


def test_an_imported_name_that_is_not_a_logger_is_silent(tmp_path):
    root = project(tmp_path, {
        "tfm/__init__.py": "",
        "tfm/models/__init__.py": "",
        "tfm/models/common.py": """
            import logging

            logger = logging.getLogger(__name__)
            tracker = object()
            """,
        "tfm/models/enc.py": HEAD + """
            from .common import tracker
            from .missing import logger

            class Encoder(nn.Module):
                def forward(self, x):
                    tracker.warning("not a logger")
                    logger.warning("a module the project does not have")
                    return x
            """,
    })
    assert at(lint(root, "tfm/models/enc.py"), "FL104") == []


# transformers: `if is_torchdynamo_compiling(): return ...` ends the function under compile, so the
# warning after it runs only in eager mode
def test_a_log_call_after_an_early_return_while_compiling_is_silent(tmp_path):
    root = project(tmp_path, {"mask.py": HEAD + """
        import logging

        from transformers.utils import is_torchdynamo_compiling, is_tracing

        logger = logging.getLogger(__name__)

        class Masker(nn.Module):
            def forward(self, x, mask=None):
                if is_torchdynamo_compiling():
                    return x
                if mask is None:
                    logger.warning("no mask")
                return x

        class Padder(nn.Module):
            def forward(self, x):
                if torch.jit.is_tracing() or torch.compiler.is_compiling(): return x
                for _ in range(2):
                    logger.info("eager only")
                return x

        class Checker(nn.Module):
            def forward(self, input_ids):
                self.warn_if_padding(input_ids)
                return input_ids

            def warn_if_padding(self, input_ids):
                if is_tracing(input_ids):
                    return
                logger.warning("padding without a mask")
        """})
    assert at(lint(root), "FL104") == []


def test_a_log_call_before_the_early_return_or_after_a_conditional_one_still_breaks(tmp_path):
    root = project(tmp_path, {"mask.py": HEAD + """
        import logging

        logger = logging.getLogger(__name__)

        class Masker(nn.Module):
            def forward(self, x, flag: bool = False):
                logger.warning("before")
                if torch.compiler.is_compiling():
                    if flag:
                        return x
                if torch.compiler.is_compiling() and flag:
                    return x
                if torch.compiler.is_compiling():
                    x = x + 1
                if torch.jit.is_tracing():
                    return x
                logger.warning("after")
                return x
        """})
    assert at(lint(root), "FL104") == [("mask.py", 9), ("mask.py", 19)]


# transformers/models/switch_transformers/modeling_switch_transformers.py:761
# `causal_mask = attention_mask[:, None, None, :]` (GB0088 "Observed exception"): the default mask is
# made only when not compiling, so under compile the encoder subscripts None
SWITCH_STACK = HEAD + """
    from ...utils import is_torchdynamo_compiling
    from ...masking_utils import create_causal_mask

    class SwitchTransformersStack(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.is_decoder = config.is_decoder

        def forward(self, inputs_embeds, attention_mask=None, cache=None):
            batch_size, seq_length = inputs_embeds.shape[:2]
            cache_length = cache.get_seq_length() if cache is not None else 0
            if attention_mask is None and not is_torchdynamo_compiling():
                mask_seq_length = cache_length + seq_length
                attention_mask = torch.ones(batch_size, mask_seq_length, device=inputs_embeds.device)

            if self.config.is_decoder:
                causal_mask = create_causal_mask(
                    config=self.config, inputs_embeds=inputs_embeds, attention_mask=attention_mask, cache=cache
                )
            else:
                causal_mask = attention_mask[:, None, None, :]
                causal_mask = causal_mask.to(dtype=inputs_embeds.dtype)
            return inputs_embeds + causal_mask
    """


def test_a_mask_filled_only_when_not_compiling_then_subscripted_breaks(tmp_path):
    root = project(tmp_path, {
        "tfm/__init__.py": "",
        "tfm/models/__init__.py": "",
        "tfm/models/switch/__init__.py": "",
        "tfm/models/switch/modeling_switch.py": SWITCH_STACK,
    })
    found = lint(root)
    assert at(found, "FL106") == [("tfm/models/switch/modeling_switch.py", 24)]
    message = next(f.message for f in found if f.code == "FL106")
    assert "attention_mask" in message and "GB0088" in message


def test_an_eager_only_default_passed_on_or_tested_again_is_silent(tmp_path):
    # bart/longt5/udop: the mask goes to create_*_mask / a helper, which accept None
    near_misses = SWITCH_STACK.replace(
        "causal_mask = attention_mask[:, None, None, :]",
        "causal_mask = _local_mask(attention_mask) if attention_mask is not None else None",
    )
    retested = SWITCH_STACK.replace(
        "            if self.config.is_decoder:",
        "            if attention_mask is None:\n"
        "                attention_mask = inputs_embeds.new_ones(batch_size, seq_length)\n"
        "            if self.config.is_decoder:",
    )
    rebound_in_eager = SWITCH_STACK.replace(
        "if attention_mask is None and not is_torchdynamo_compiling():",
        "if attention_mask is None:",
    )
    for text in (near_misses, retested, rebound_in_eager):
        root = project(tmp_path, {"tfm/__init__.py": "", "tfm/models/__init__.py": "",
                                  "tfm/models/switch/__init__.py": "", "tfm/models/switch/modeling_switch.py": text})
        assert at(lint(root), "FL106") == [], text


EAGER_ONLY_DEFAULT = HEAD + """
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 8)

        def forward(self, x, mask=None):
            if mask is None{guard}:
                mask = torch.ones(x.shape[:-1])
            return self.a(x) * mask[..., None]
    """


def test_the_eager_only_default_breaks_under_torch_compile_and_the_fix_does_not(tmp_path):
    """The effect FL106 claims for the pattern, measured on the installed torch (backend "eager")."""
    torch = need("torch", "the break is measured under torch.compile")
    from fusionlint.confirm.measure import isolated_torch_config, measure

    flagged = {}
    for label, guard in (("bad", " and not torch.compiler.is_compiling()"), ("good", "")):
        (tmp_path / label).mkdir()
        root = project(tmp_path / label, {"stack.py": EAGER_ONLY_DEFAULT.replace("{guard}", guard)})
        flagged[label] = at(lint(root), "FL106")
        spec = importlib.util.spec_from_file_location(f"_eager_only_default_{label}", root / "stack.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with isolated_torch_config():
            result = measure(module.Stack, lambda: (torch.randn(2, 4, 8),), device="cpu", user_files=[str(root / "stack.py")])
        flagged[label + "_breaks"] = sorted({(s.gb, s.line) for s in result.break_sites})
    assert flagged["bad"] == [("stack.py", 11)]
    assert flagged["bad_breaks"] == [("GB0088", 11)]
    assert flagged["good"] == [] and flagged["good_breaks"] == []
