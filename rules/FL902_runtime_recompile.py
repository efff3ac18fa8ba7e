"""FL902 runtime-recompile: a recompile that torch took at runtime and no static rule explains.

Like FL900, this rule never reports from the static pass; the confirm pass (``--confirm``) creates
its findings from the recompiles it measured (``fusionlint/confirm/match.py``).
"""

from __future__ import annotations

from fusionlint.rule import Effect, Rule


class RuntimeRecompile(Rule):
    code = "FL902"
    name = "runtime-recompile"
    message = "torch.compile recompiled because of this code at runtime"
    effects = (Effect.RECOMPILE,)
    scope = "file"
    default_enabled = True
    static = False  # produced by the confirm pass only: no VALID/INVALID examples to run
    # A trigger that never occurs in source: the static pass skips this rule before parsing.
    triggers = ("\x00fusionlint-runtime-only\x00",)
    measured_on = ("torch 2.13.0 CPU",)
    docs = """
## What it does
Reports a recompile that `torch.compile` really did while `fusionlint check --confirm` ran your
module, when no static rule flagged the code behind it. It only appears with `--confirm`.

The message names the guard that failed (torch's own text, e.g. `self.temperature == 4.0`). The
location is where the guarded value was read: the innermost frame of the guard's user stack that
lies in your project, so a Python attribute changed by a helper in another file is reported in
that helper. A guard on an input (a new size) has no such frame and is reported at the first line
of the function that recompiled. The first size change of each function is not reported: torch
then marks that dimension dynamic and recompiles once ("automatic dynamic shapes").

## Why is this bad?
Every recompile traces and compiles the frame again (tens of milliseconds with the `eager`
backend, seconds with inductor), and after `torch._dynamo.config.recompile_limit` (8) recompiles
torch stops compiling the frame and runs it eagerly. Measured on torch 2.13.0 (CPU): a forward that
anneals a float attribute (`self.t = max(0.5, self.t * 0.9)`) through a helper recompiled on its
second call (guard `self.t == 4.0`); the seed attention block with an annealed threshold reached the
recompile limit on an H200 (8 graphs) and ran slower than eager.

## Example
```python
def anneal(module):
    module.temperature = max(0.5, module.temperature * 0.9)  # FL902: guard self.temperature == 4.0
    return module.temperature

class Model(nn.Module):
    def forward(self, x):
        return self.proj(x) / anneal(self)
```

## Use instead
Keep values that change between calls in tensors (a registered buffer updated in place, or an
input), or outside the compiled forward. For sizes that change, `torch._dynamo.mark_dynamic` (or
`dynamic=True`) avoids the recompile. If the recompile is intended, suppress this finding with
`# noqa: FL902`.

## Fix safety
No automatic fix: the right change depends on what the guarded value means.

## PyTorch reference
Recompilation: https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html
"""
    VALID = ()
    INVALID = ()
