"""Calling an element of a module container runs its forward: ``for layer in self.layers: h = layer(h, m)``
and ``self.layers[i](h, m)`` are call-graph edges, so what the caller passes flows into the element
class's ``forward`` parameters and on (transformers' Longformer: the encoder passes
``is_index_global_attn``, a tensor, to each layer, and its attention hands it to a helper calling
``.nonzero()``; as an entry point's parameter, its name and ``None`` default say "not a tensor").

The measured test runs the module under ``torch.compile`` (backend "eager", torch 2.13 CPU) and asserts
that the flagged line is the one Dynamo breaks at.
"""

from __future__ import annotations

import pytest

from tests.helpers import measured_break_lines
from tests.test_semantic_patterns import HEAD, lint, project

BLOCK = HEAD + """
class Attention(nn.Module):
    @staticmethod
    def _global_count(is_index_global):
        return is_index_global.nonzero(as_tuple=True)[0].numel()

    def forward(self, h, is_index_global=None):
        return h * self._global_count(is_index_global)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, h, is_index_global=None):
        return self.attn(h, is_index_global=is_index_global)
"""

NET = HEAD + """
from .block import Block


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(2)])

    def forward(self, x):
        mask = x > 0
        for layer in self.layers:
            x = layer(x, is_index_global=mask)
        return x


def example_inputs():
    return (torch.randn(2, 8),)
"""

NONZERO_LINE = 6  # of models/block.py


def _files(net: str = NET) -> dict[str, str]:
    return {"models/__init__.py": "", "models/block.py": BLOCK, "models/net.py": net}


def _nonzero_findings(root):
    return [f for f in lint(root) if f.code == "FL103" and f.path == "models/block.py"]


def test_loop_element_call_passes_a_tensor_to_forward(tmp_path):
    found = _nonzero_findings(project(tmp_path, _files()))
    assert [f.line for f in found] == [NONZERO_LINE]
    assert "passed from Attention.forward at models/block.py:9" in found[0].message


def test_subscripted_element_call_passes_a_tensor_to_forward(tmp_path):
    net = NET.replace("for layer in self.layers:\n            x = layer(x, is_index_global=mask)", "x = self.layers[0](x, is_index_global=mask)")
    assert "self.layers[0](x, is_index_global=mask)" in net
    found = _nonzero_findings(project(tmp_path, _files(net)))
    assert [f.line for f in found] == [NONZERO_LINE]


def test_element_call_passing_none_adds_no_tensor(tmp_path):
    net = NET.replace("x = layer(x, is_index_global=mask)", "x = layer(x, is_index_global=None)")
    assert not _nonzero_findings(project(tmp_path, _files(net)))


def test_loop_variable_bound_otherwise_is_no_element(tmp_path):
    # `layer` is re-bound to a function: it is not (only) an element, and no edge is made
    net = NET.replace("x = layer(x, is_index_global=mask)", "x = layer(x, is_index_global=mask)\n        layer = print")
    assert not _nonzero_findings(project(tmp_path, _files(net)))


@pytest.mark.slow
def test_flagged_line_is_the_measured_break_site(tmp_path):
    root = project(tmp_path, _files())
    assert measured_break_lines(root, "models.net", "Net", root / "models/block.py") == {NONZERO_LINE}
    assert [f.line for f in _nonzero_findings(root)] == [NONZERO_LINE]
