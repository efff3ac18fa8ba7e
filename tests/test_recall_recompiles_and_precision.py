"""What the recall bench (bench/recall.py) taught about recompile causes and about findings on executed
lines where no break was recorded, each reduced to a small project in the real package's layout.

Effects measured on torch 2.13.0 CPU (backend "eager"); the rule docs quote them.
"""

from __future__ import annotations

from tests.test_semantic_patterns import HEAD, at, lint, project


# transformers' attention modules (53 guard failures `...self_attn.training == True` in the bench):
# the mode flag decides the dropout in a conditional expression inside a multi-line call
def test_mode_flag_in_an_attention_call_is_a_recompile_cause(tmp_path):
    root = project(tmp_path, {"llama.py": HEAD + """
        import torch.nn.functional as F

        def eager_attention_forward(module, q, k, v, dropout=0.0):
            return F.dropout(q @ k.transpose(-1, -2), p=dropout, training=module.training) @ v

        class LlamaAttention(nn.Module):
            def __init__(self):
                super().__init__()
                self.attention_dropout = 0.1

            def forward(self, q, k, v):
                return eager_attention_forward(
                    self,
                    q, k, v,
                    dropout=0.0 if not self.training else self.attention_dropout,
                )
        """})
    found = at(lint(root), "FL205")
    # `training=module.training` passed to a torch function (line 6) and the conditional expression (line 17)
    assert found == [("llama.py", 6), ("llama.py", 17)]
    from fusionlint.registry import all_rules

    assert not all_rules()["FL205"].default_enabled  # one recompile per mode is usually fine: opt-in


# transformers/models/bloom/modeling_bloom.py:107: the flag arrives as a parameter; the guard is where
# the helper uses it, not at the call site
def test_mode_flag_passed_to_a_helper_is_reported_where_the_helper_uses_it(tmp_path):
    root = project(tmp_path, {"bloom.py": HEAD + """
        import torch.nn.functional as F

        def dropout_add(x, residual, prob: float, training: bool):
            out = F.dropout(x, p=prob, training=training)
            return residual + out

        class BloomMLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)

            def forward(self, h, residual):
                return dropout_add(self.fc(h), residual, 0.1, self.training)
        """})
    assert at(lint(root), "FL205") == [("bloom.py", 6)]


# timm/models/sequencer.py:137/145: two LSTMs in one forward; Dynamo does not resume after the first
# ("Encountered graph break that we cannot resume from"), so the second is no break site
def test_only_the_first_rnn_of_a_forward_is_a_break_site(tmp_path):
    root = project(tmp_path, {"sequencer.py": HEAD + """
        class RNN2dBase(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn_v = nn.LSTM(8, 8, batch_first=True)
                self.rnn_h = nn.LSTM(8, 8, batch_first=True)

            def forward(self, x):
                B, H, W, C = x.shape
                v = x.permute(0, 2, 1, 3).reshape(-1, H, C)
                v, _ = self.rnn_v(v)
                h = x.reshape(-1, W, C)
                h, _ = self.rnn_h(h)
                return v.sum() + h.sum()
        """})
    assert at(lint(root), "FL107") == [("sequencer.py", 12)]


# timm's real layout (sequencer.py:137/145): each LSTM in its own `if`. Measured, torch 2.13 CPU, both
# branches on: 1 break, at the first; the first configured off: 1 break, at the second. One finding, at
# the first, that names the second and its line
def test_rnns_in_sibling_branches_give_one_finding_naming_the_later_ones(tmp_path):
    root = project(tmp_path, {"sequencer.py": HEAD + """
        class RNN2dBase(nn.Module):
            def __init__(self, with_vertical=True, with_horizontal=True):
                super().__init__()
                self.with_vertical, self.with_horizontal = with_vertical, with_horizontal
                self.rnn_v = nn.LSTM(8, 8, batch_first=True)
                self.rnn_h = nn.LSTM(8, 8, batch_first=True)

            def forward(self, x):
                v = h = x
                if self.with_vertical:
                    v, _ = self.rnn_v(x)
                if self.with_horizontal:
                    h, _ = self.rnn_h(x)
                return v + h
        """})
    found = [f for f in lint(root) if f.code == "FL107"]
    assert [(f.path, f.line) for f in found] == [("sequencer.py", 13)]
    assert "`self.rnn_h`, line 15" in found[0].message
    assert "breaks when this one is skipped" in found[0].message


# transformers/models/bart/modeling_bart.py:304: the tensor condition is only reached in float16
def test_a_dtype_guarded_tensor_condition_says_when_it_breaks(tmp_path):
    for sub in ("fp16", "plain"):
        (tmp_path / sub).mkdir()
    root = project(tmp_path / "fp16", {"bart.py": HEAD + """
        class BartEncoderLayer(nn.Module):
            def forward(self, hidden_states):
                hidden_states = hidden_states * 2
                if hidden_states.dtype == torch.float16 and not torch.isfinite(hidden_states).all():
                    clamp_value = torch.finfo(hidden_states.dtype).max - 1000
                    hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
                return hidden_states
        """})
    findings = [f for f in lint(root) if f.code == "FL102"]
    assert [(f.path, f.line) for f in findings] == [("bart.py", 6)]
    assert "when `hidden_states.dtype == torch.float16` holds" in findings[0].message
    # a plain tensor condition does not get the remark
    plain = project(tmp_path / "plain", {"m.py": HEAD + """
        class M(nn.Module):
            def forward(self, h):
                if not torch.isfinite(h).all():
                    h = h.nan_to_num()
                return h
        """})
    messages = [f.message for f in lint(plain) if f.code == "FL102"]
    assert len(messages) == 1 and "holds" not in messages[0]


# transformers/models/phimoe/modeling_phimoe.py:84 (measured, torch 2.13 CPU: with a longrope configuration
# the line breaks, GB0170; with the default one the tensor is never tested and nothing breaks)
def test_a_configuration_guarded_tensor_condition_says_when_it_breaks(tmp_path):
    root = project(tmp_path, {"phimoe.py": HEAD + """
        class PhimoeRotaryEmbedding(nn.Module):
            def forward(self, x, position_ids):
                seq_len = torch.max(position_ids) + 1
                if self.config.rope_parameters["rope_type"] != "default" and seq_len:
                    x = x * 2
                if config_is_long(self) and seq_len:
                    x = x * 3
                return x
        """})
    findings = sorted((f for f in lint(root) if f.code == "FL102"), key=lambda f: f.line)
    assert [(f.path, f.line) for f in findings] == [("phimoe.py", 6), ("phimoe.py", 8)]
    assert 'when `self.config.rope_parameters["rope_type"] != "default"` holds (Dynamo reads the configuration' in (
        findings[0].message)
    assert "holds" not in findings[1].message  # a call: not a configuration test


# transformers/models/big_bird/modeling_big_bird.py:1528 `self.encoder.set_attention_type(value)`: a method
# of a submodule called from forward is traced in place (Dynamo inlines it), so it is compiled code
def test_a_submodules_method_called_from_forward_is_compiled(tmp_path):
    root = project(tmp_path, {"enc.py": HEAD + """
        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(torch.ones(1))

            def rescale(self, x):
                return x * self.scale.item()

            def unused(self, x):
                return x.sum().item()

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = Encoder()

            def forward(self, x):
                return self.encoder.rescale(x)
        """})
    found = [f for f in lint(root) if f.code == "FL101"]
    assert [(f.path, f.line) for f in found] == [("enc.py", 9)]
    assert found[0].chain == ("Model.forward", "Encoder.rescale")


# transformers/models/big_bird/modeling_big_bird.py:1580: the compiled forward calls a setter that assigns
# the attribute its condition reads (guard `self.attention_type == 'block_sparse'` failed in the bench);
# here the setter lives in a base class of another file, so only the project model sees the write
def test_setter_called_from_compiled_code_changes_the_guarded_attribute(tmp_path):
    root = project(tmp_path, {
        "base.py": HEAD + """
        class SparseBase(nn.Module):
            def set_attention_type(self, value: str):
                if value == self.attention_type:
                    return
                self.attention_type = value
        """,
        "model.py": HEAD + """
        from base import SparseBase

        class BigBird(SparseBase):
            def __init__(self):
                super().__init__()
                self.attention_type = "block_sparse"

            def forward(self, x):
                if self.attention_type == "block_sparse" and x.shape[1] <= 8:
                    self.set_attention_type("original_full")
                if self.attention_type == "block_sparse":
                    return x * 2
                return x

            def configure(self):
                self.attention_type = "original_full"
        """,
    })
    found = {(f.path, f.line): f.message for f in lint(root) if f.code == "FL206"}
    # the forward's first read (its second read reuses the guard), and the setter's own test before its
    # assignment (the same value: the guard that fails when nothing read it earlier, as in swin's setter)
    assert sorted(found) == [("base.py", 5), ("model.py", 11)]
    assert "`SparseBase.set_attention_type` assigns it (base.py:7)" in found[("model.py", 11)]
    assert "BigBird.forward → " in found[("model.py", 11)]


# the start of transformers' cross-attention forward (m2m_100, gpt2): the cache flag read into a local
CROSS_ATTENTION_START = """
        class Attention(nn.Module):
            def __init__(self, layer_idx: int = 0):
                super().__init__()
                self.k_proj = nn.Linear(8, 8)
                self.layer_idx = layer_idx

            def forward(self, hidden_states, key_value_states=None, cache=None):
                is_cross_attention = key_value_states is not None
                is_updated = False
                if cache is not None:
                    is_updated = cache.is_updated.get(self.layer_idx)"""


# transformers/models/m2m_100/modeling_m2m_100.py:294: the cache's cross-attention flag is read into a
# local, tested, and set by the same call (guard `kwargs['cache'].is_updated[0] == False` in the bench)
def test_argument_flag_set_by_the_compiled_call_is_a_recompile_cause(tmp_path):
    root = project(tmp_path, {"m2m.py": HEAD + CROSS_ATTENTION_START + """
                if is_cross_attention and cache is not None and is_updated:
                    return hidden_states
                key_states = self.k_proj(hidden_states)
                if cache is not None and is_cross_attention:
                    cache.is_updated[self.layer_idx] = True
                return hidden_states + key_states
        """})
    found = [f for f in lint(root) if f.code == "FL206"]
    assert [(f.path, f.line) for f in found] == [("m2m.py", 14)]  # the `if`, not the read into the local
    assert "cache.is_updated[self.layer_idx] = True" in found[0].message


# transformers/models/led/modeling_led.py:419, longformer:776: `new_zeros` sized by `torch.div(seq_len, ...)`
# with `seq_len` from `query.size()`. Measured, torch 2.13 CPU: 0 breaks over one length (Dynamo evaluates
# torch.div of constants while tracing), 1 (GB0033) after a second length or with dynamic=True
def test_a_size_torch_makes_from_shape_numbers_says_it_breaks_once_dynamic(tmp_path):
    root = project(tmp_path, {"led.py": HEAD + """
        class LEDSelfAttention(nn.Module):
            def forward(self, query, window_overlap: int = 4):
                batch_size, seq_len, num_heads, head_dim = query.size()
                chunks_count = torch.div(seq_len, window_overlap, rounding_mode="trunc") - 1
                scores = query.new_zeros((batch_size * num_heads, chunks_count + 1, window_overlap))
                fixed = query.new_zeros((torch.div(8, 2, rounding_mode="trunc"), 3))
                return scores, fixed
        """})
    found = [f for f in lint(root) if f.code == "FL103"]
    assert [(f.path, f.line) for f in found] == [("led.py", 7)]
    assert "once `seq_len` is a dynamic size" in found[0].message


# led:350/463/485 and longformer:707/820/842 broke in the bench's dynamic pass only: a view/reshape/
# as_strided shape entry made by torch.div of shape numbers. Measured, torch 2.13 CPU: 0 breaks over one
# length, 1 after a second length; `n // 4` (Python arithmetic) 0 in both
def test_a_shape_entry_torch_makes_from_shape_numbers_says_it_breaks_once_dynamic(tmp_path):
    root = project(tmp_path, {"led.py": HEAD + """
        class LEDSelfAttention(nn.Module):
            def forward(self, x):
                a = x.view(x.size(0), torch.div(x.size(1), 4, rounding_mode="trunc"), 4, x.size(2))
                b, n, d = x.size()
                r = x.reshape(b, torch.div(n, 4, rounding_mode="trunc"), 4 * d)
                c = torch.div(n, 4, rounding_mode="trunc") - 1
                size = (b, c + 1, 4, d)
                s = x.as_strided(size=size, stride=(1, 1, 1, 1))
                fine = x.reshape(b, n // 4, 4 * d)
                const = x.view(b, torch.div(8, 4, rounding_mode="trunc"), -1)
                return a, r, s, fine, const, self._chunk(x, 2)

            @staticmethod
            def _chunk(hidden_states, window_overlap):  # LED's, arithmetic inside torch.div
                return hidden_states.view(
                    hidden_states.size(0),
                    torch.div(hidden_states.size(1), (window_overlap * 2), rounding_mode="trunc"),
                    window_overlap * 2,
                )
        """})
    found = [f for f in lint(root) if f.code == "FL103"]
    assert [f.line for f in found] == [5, 7, 10, 17]
    assert "once `hidden_states.size(1)` is a dynamic size" in found[3].message
    assert "once `x.size(1)` is a dynamic size" in found[0].message
    assert all("once `n` is a dynamic size" in f.message for f in found[1:3])


# docs/zoo-audit.md round 4, pattern 5 (gpt2:178 and :196): a local that carries the cache flag is
# tested in two blocks; Dynamo guards once, at the read into the local, so one recompile is reported
def test_a_local_carrying_argument_state_is_reported_once(tmp_path):
    root = project(tmp_path, {"gpt2.py": HEAD + CROSS_ATTENTION_START + """
                if is_cross_attention and is_updated:
                    return hidden_states
                key_states = self.k_proj(hidden_states)
                if cache is not None and is_cross_attention:
                    cache.is_updated[self.layer_idx] = True
                if is_updated:
                    key_states = key_states * 2
                return hidden_states + key_states
        """})
    assert [(f.path, f.line) for f in lint(root) if f.code == "FL206"] == [("gpt2.py", 14)]


# timm's maxxvit.py:763 (a recompile cause in the bench, guard `(1 + ((-1 + x.size()[2]) // 4)) == 32`) and
# PatchEmbed (vit_tiny with dynamic_img_size=True: a new frame per image size): the size is formatted into
# an assertion's message, in a helper of another file that the compiled forward calls
def test_a_size_formatted_into_a_message_in_a_called_helper_is_a_recompile_cause(tmp_path):
    root = project(tmp_path, {
        "layers.py": HEAD + """
            def _assert(condition, message):
                torch._assert(condition, message)

            def window_partition(x, window_size):
                B, H, W, C = x.shape
                _assert(H % window_size[0] == 0, f'height ({H}) must be divisible by window ({window_size[0]})')
                return x.view(B, H // window_size[0], window_size[0], W // window_size[1], window_size[1], C)
            """,
        "model.py": HEAD + """
            from layers import window_partition

            class PatchEmbed(nn.Module):
                def __init__(self, strict=True):
                    super().__init__()
                    self.strict = strict
                    self.proj = nn.Conv2d(3, 8, 4, 4)

                def forward(self, x):
                    B, C, H, W = x.shape
                    if self.strict:
                        torch._assert(H == 224, f"Input height ({H}) doesn't match model (224).")
                    else:
                        torch._assert(W % 4 == 0, f"Input width ({W}) should be divisible by 4.")
                    return window_partition(self.proj(x).permute(0, 2, 3, 1), (7, 7))
            """,
    })
    findings = [f for f in lint(root) if f.code == "FL207"]
    # the strict branch's test already fixes H to 224: only the other two
    assert [(f.path, f.line) for f in findings] == [("layers.py", 8), ("model.py", 16)]
    assert "`H` (a size of `x`)" in findings[0].message
    assert findings[0].chain == ("PatchEmbed.forward", "layers.window_partition")
