"""What the kornia set (bench/recall.py, kornia 0.9.0, 2026-12-05) showed the model got wrong, each on a
small project and, where it is about a graph break, measured under torch.compile (backend "eager",
torch 2.13 CPU):

- a parameter annotated as a container of tensors (`params: Dict[str, torch.Tensor]`, `feats:
  List[Tensor]`, `Tuple[Tensor, ...]`) holds tensors: `if (factors[i] != neutral[i]).any():` over
  `factors = tuple(params[k] for k in keys)` breaks (kornia's colour jitter, a missed break site);
- an arm of a conditional expression, or an `and`/`or` operand, that Dynamo never evaluates under compile
  (`None if is_compiling() else self._snapshot(p)`, `x.to(...) if torch.jit.is_tracing() else int(x)`)
  makes no call-graph edge (kornia's `_params_snapshot`, flagged twice on a line that never broke);
- `Tensor.is_inference()` and the other `is_*` questions answer a Python bool, not a tensor;
- a package's star imports that import each other, or a name missing from them, end the search (a
  quarter of the zoo, missing modules, spent minutes re-searching transformers' star imports).
"""

from __future__ import annotations

from tests.helpers import measured_break_lines
from tests.test_semantic_patterns import GATE_FROM_LIB, HEAD, PASSING_BASE, lint, project

JITTER = HEAD + """
from typing import Dict, Tuple

KEYS = ("brightness", "contrast")


def apply_steps(image: torch.Tensor, params: Dict[str, torch.Tensor], neutral: Tuple[float, float]) -> torch.Tensor:
    factors = tuple(params[key] for key in KEYS)
    out = image
    for idx in range(2):
        if (factors[idx] != neutral[idx]).any():
            out = out * factors[idx]
    return out


class Jitter(nn.Module):
    def forward(self, x):
        params = {"brightness": x.new_ones(()), "contrast": x.new_zeros(())}
        return apply_steps(x, params, (1.0, 0.0))


def example_inputs():
    return (torch.rand(2, 3, 8, 8),)
"""
BRANCH_LINE = 12


def test_items_of_an_annotated_dict_of_tensors_are_tensors(tmp_path):
    found = [f for f in lint(project(tmp_path, {"jitter.py": JITTER})) if f.code == "FL102"]
    assert [f.line for f in found] == [BRANCH_LINE]


def test_annotated_lists_and_tuples_of_tensors(tmp_path):
    text = HEAD + """
        from typing import List, Tuple


        def first(feats: List[torch.Tensor], pair: Tuple[torch.Tensor, ...], sizes: List[int]):
            out = feats[0] * 2
            if feats[0].any():
                out = out + 1
            if pair[1].max() > 0:
                out = out - 1
            if sizes[0] > 1:
                out = out * 3
            return out


        class M(nn.Module):
            def forward(self, x):
                return first([x], (x, x), [1])
        """
    found = [f for f in lint(project(tmp_path, {"m.py": text})) if f.code == "FL102"]
    assert [f.line for f in found] == [8, 10]  # not `sizes[0] > 1`: a list of ints


def test_an_arm_dynamo_never_evaluates_calls_nothing(tmp_path):
    text = HEAD + """
        from typing import Any, Dict


        def is_compiling() -> bool:
            return torch.compiler.is_compiling()


        class Aug(nn.Module):
            @staticmethod
            def _snapshot(params: Dict[str, Any]):
                return tuple((k, v._version if isinstance(v, torch.Tensor) and not v.is_inference() else -1)
                             for k, v in params.items())

            def _record(self, params):
                self.snap = None if is_compiling() else self._snapshot(params)
                self.seen = not is_compiling() and self._snapshot(params)

            def forward(self, x):
                self._record({"a": x})
                return x * 2
        """
    root = project(tmp_path, {"aug.py": text})
    assert not lint(root)
    # the same helper called where Dynamo does evaluate it: both findings are back
    traced = text.replace("None if is_compiling() else self._snapshot(params)", "self._snapshot(params)")
    (tmp_path / "traced").mkdir()
    root = project(tmp_path / "traced", {"aug.py": traced})
    assert sorted(f.code for f in lint(root)) == ["FL112"]  # `.is_inference()`; `not <bool>` is no tensor test


def test_star_imports_that_import_each_other_end(tmp_path):
    root = project(tmp_path, {
        "lib/__init__.py": "from .a import *\nfrom .b import *\n",
        "lib/a.py": "from .b import *\n",
        "lib/b.py": "from .a import *\nfrom .base import Passing\n",
        "lib/base.py": PASSING_BASE,
        "models.py": GATE_FROM_LIB.format(extra=", Missing"),
    })
    found = [f for f in lint(root) if f.code == "FL101"]
    assert [(f.path, f.line) for f in found] == [("models.py", 7)]


def test_the_flagged_branch_is_where_dynamo_breaks(tmp_path):
    root = project(tmp_path, {"jitter_m.py": JITTER})
    assert measured_break_lines(root, "jitter_m", "Jitter", root / "jitter_m.py") == {BRANCH_LINE}
