"""FL900 runtime-graph-break: a graph break that torch reported at runtime and no static rule explains.

This rule never reports from the static pass; the confirm pass (``--confirm``) creates its
findings from the graph-break sites it measured (``fusionlint/confirm/match.py``).
"""

from __future__ import annotations

from fusionlint.rule import Effect, Rule


class RuntimeGraphBreak(Rule):
    code = "FL900"
    name = "runtime-graph-break"
    message = "torch.compile breaks the graph here at runtime"
    effects = (Effect.GRAPH_BREAK,)
    scope = "file"
    default_enabled = True
    static = False  # produced by the confirm pass only: no VALID/INVALID examples to run
    # A trigger that never occurs in source: the static pass skips this rule before parsing.
    triggers = ("\x00fusionlint-runtime-only\x00",)
    measured_on = ("torch 2.13.0 CPU",)
    docs = """
## What it does
Reports a graph break that `torch.compile` really took while running your module under
`fusionlint check --confirm`, at a line that no static rule flagged. It only appears with
`--confirm`: the static pass never reports it.

The location is the innermost frame of the break's user traceback that lies in your project
(any file under the project root outside installed packages and virtual environments), so a
break in a helper of another file (`helpers.py`) is reported in that helper, and a break inside
a library call (say `logging/__init__.py`) at the line of your code that made the call. The
finding carries the chain of your frames that led there (`compiled via: forward (model.py:14) →
soft_limit (helpers.py:5)`), and the message torch's own graph-break id (GBxxxx) and reason.
`--confirm` runs every module with an example, flagged or not, so these breaks are found also
where the static pass found nothing.

## Why is this bad?
Every graph break splits the compiled forward into separate graphs: torch runs the code between
them eagerly, loses fusion across the break, and each fragment is its own frame with its own
guards. Measured on torch 2.13.0 (CPU): a forward with one break ran as 3 to 4 compiled regions
instead of 1, and a second input shape cost 3 to 4 recompiles instead of 1.

## Example
```python
class Model(nn.Module):
    def forward(self, x):
        h = self.lin(x)
        some_library_call(h)  # torch: GB0007 "Attempted to call function marked as skipped"
        return h.relu()
```

## Use instead
Follow the hint in torch's reason (the GB id links to PyTorch's graph-break page): move the call
out of `forward`, guard it with `if not torch.compiler.is_compiling():`, or replace it with a
tensor operation. If the break is intended, suppress this finding with `# noqa: FL900`.

## Fix safety
No automatic fix: the right change depends on why torch stopped tracing.

## PyTorch reference
The graph-break registry: https://meta-pytorch.github.io/compile-graph-break-site/
"""
    VALID = ()
    INVALID = ()
