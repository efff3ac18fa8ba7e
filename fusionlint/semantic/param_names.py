"""Parameter names that say "Python configuration, not a tensor" (``num_heads``, ``cache``, ``use_x``).

A parameter of ``forward`` with no annotation and no default other than ``None`` is taken for a tensor
(the decision policy in the README) unless its name is one of these; a body that uses it as a tensor
(``lens.any()``) still makes it one. The project model and the per-function facts both ask this one
pattern, so that they agree (two copies had drifted apart: the per-function one lacked the switch
prefixes). No libcst here: the project model imports it on the warm path. The first names were found
by hand on transformers, where ``int(self.padding_idx + inputs_shape[1])`` was flagged.
"""

from __future__ import annotations

import re

NON_TENSOR_PARAM = re.compile(
    r"(^|_)(shape|shapes|size|sizes|device|dtype|len|length|lens|num|dim|dims|idx|index|mode|config|cfg|"
    r"training|flag|name|kwargs|args|step|steps|output|outputs|return|height|width)(_|$)|^(n|k)_|"
    r"^(cache|past|past_key_values?|layer_past|use_cache)$|"
    # boolean switches (`use_audio_in_video`, `is_causal`, `return_dict`): found as false positives
    # on transformers 5.24 (a `None` default made them look like optional tensors)
    r"^(use|is|has|do|return|output|with|enable|skip)_|"
    # x-transformers' `Attend.forward(..., causal=None)`: `if causal:` after `default(causal, self.causal)`
    r"^causal$|"
    # vector-quantize-pytorch 1.32's `VectorQuantize.forward(x, ..., topk=None)`: `min(int(topk), ...)`, a count
    r"^top_?k$"
)
