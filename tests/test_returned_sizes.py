"""A size that a breaking callee returns crosses into the caller's resumed frame as a Python int (FL208).

The recall bench recorded it on transformers 5.24: Longformer's `padding_len, input_ids, ... =
self._pad_to_window_size(...)` (the callee logs a warning when it pads: a graph break), then the guard
`___stack0[0] == 504` at the next call that passes `padding_len`; LED's `if padding_len > 0:`. The module
below has the same shape; the torch test records the guard on the line FL208 reports.
"""

from __future__ import annotations

from pathlib import Path

from tests.test_frame_split import _recompiles
from tests.test_semantic_patterns import lint

MODULE = '''import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.window = 8

    def _pad(self, input_ids, inputs_embeds):
        input_shape = input_ids.shape if input_ids is not None else inputs_embeds.shape
        batch_size, seq_len = input_shape[:2]
        padding_len = (self.window - seq_len % self.window) % self.window
        if padding_len > 0:
            logger.warning("padding")
            input_ids = nn.functional.pad(input_ids, (0, padding_len))
        return padding_len, input_ids

    def forward(self, input_ids, inputs_embeds=None):
        padding_len, input_ids = self._pad(input_ids, inputs_embeds)
        x = input_ids.float() * 2
        return x[:, : x.shape[1] - padding_len]
'''


def _line(needle: str) -> int:
    return next(i for i, line in enumerate(MODULE.splitlines(), 1) if needle in line)


def _write(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    path = tmp_path / "padded.py"
    path.write_text(MODULE)
    return path


def test_fl208_reports_the_first_use_of_a_size_a_breaking_callee_returns(tmp_path):
    _write(tmp_path)
    found = [f for f in lint(tmp_path, select="FL208")]
    assert [f.line for f in found] == [_line("return x[:, : x.shape[1] - padding_len]")]
    assert f"`padding_len` is a size that `self._pad` returns at line {_line('= self._pad(')}" in found[0].message


def test_torch_guards_the_returned_size_in_the_resumed_frame(tmp_path):
    path = _write(tmp_path)
    records = _recompiles(path, {"Model": [(2, 10), (2, 12), (2, 13)]})  # padded by 6, 4, 3
    text = "\n".join(records)
    assert "___stack0[0] ==" in text
    assert f"padded.py:{_line('return x[:, : x.shape[1] - padding_len]')}" in text
