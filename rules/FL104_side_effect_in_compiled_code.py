"""FL104 side-effect-in-compiled-code: print/logging/time/warnings/debugger calls that Dynamo cannot trace.

The check itself is ``fusionlint.analysis.side_effects`` (FL108 runs it inside autograd.Function bodies).
"""

from __future__ import annotations

import libcst as cst

from fusionlint.analysis.side_effects import SideEffectChecker
from fusionlint.rule import Applicability, Effect, Invalid, Rule


class SideEffectInCompiledCode(Rule):
    code = "FL104"
    name = "side-effect-in-compiled-code"
    message = "side effect Dynamo cannot trace inside compiled code: graph break"
    effects = (Effect.GRAPH_BREAK,)
    fix_applicability = Applicability.UNSAFE
    triggers = ("print", "logging", "Logger", "logger", "log.", "LOG.", "time", "warn", "breakpoint", "set_trace", "synchronize", ".write(")
    gb_ids = ("GB0059", "GB0007", "GB0291", "GB4841", "GB0156")
    measured_on = ("torch 2.13.0 CPU", "torch 2.11.0 H200")
    docs = """
## What it does
Flags calls with side effects that Dynamo does not trace, in code that `torch.compile` traces:
`print`, `logging.<level>(...)`, any method of a logger created with `logging.getLogger` (or Hugging
Face's `logging.get_logger`) in the same file or imported from another file of the project
(`from .utils import logger`, followed through re-exports; `logger.info`, `self.log.debug`,
`logger.isEnabledFor`, transformers' `logger.warning_once`, ...), `time.time`/`perf_counter`/
`monotonic`/`time_ns`/`perf_counter_ns`/`process_time`, `warnings.warn`, `sys.stdout.write`/
`sys.stderr.write`, `breakpoint()`, `pdb.set_trace()` and `torch.cuda.synchronize()`. Calls
already guarded by `if not torch.compiler.is_compiling():`, or placed after an early exit
`if torch.compiler.is_compiling(): return ...` (also transformers' `is_torchdynamo_compiling()`, and
`... or is_compiling()`) in the same function, are not flagged: Dynamo never traces them.

## Why is this bad?
Dynamo cannot put a Python side effect into an FX graph, so it ends the graph before the call,
runs the call eagerly and resumes tracing in a new graph. Measured with torch 2.13.0+cpu
(1 thread), one forward after warm-up, each call in a small function called from `forward`
(1 compiled region without the call):

| call | graph-break id | compiled regions |
|---|---|---|
| `print("dbg", h.shape)`, `breakpoint()` | GB0059 "Failed to trace builtin operator" | 3 |
| `logger.info(...)`, `logger.debug(...)`, `logger.error(...)`, `logger.isEnabledFor(...)` | GB0291 "logging.Logger method not supported" | 3 |
| `logger.warning_once(...)` (patched onto `Logger` as transformers does, `lru_cache`d), `logger.setLevel(...)`, `logger.getEffectiveLevel()` | GB0291 | 2 (backend "eager", one call after `x.relu()`) |
| `logging.info(...)`, `logging.warning(...)`, `logging.debug(...)` | GB4841 | 3 |
| `time.time()`, `perf_counter()`, `monotonic()`, `time_ns()`, `perf_counter_ns()`, `process_time()` | GB0007 "call to a skipped function" | 3 |
| `warnings.warn(...)`, `pdb.set_trace()` | GB0007 | 3 |
| `sys.stdout.write(...)`, `sys.stderr.write(...)` | GB0156 | 3 |
| `torch.cuda.synchronize()` (torch 2.11, H200, truth case f12) | GB0007, +1 `cudaDeviceSynchronize` | 4 |

A DEBUG-level logger call breaks even when DEBUG is disabled. The fixture (a `print` between two
Linears, truth case f01) shows 1 break site (GB0059) and 2 compiled regions per forward; the
guarded version 1 region and no break. The truth table measured f01 at 4 recompiles instead of 1
for a second input shape; `warnings.warn` (h1) 3 vs 1.

## Example
```python
def forward(self, x):
    h = torch.relu(self.a(x))
    print("hidden shape", h.shape)
    return self.b(h)
```

## Use instead
```python
def forward(self, x):
    h = torch.relu(self.a(x))
    if not torch.compiler.is_compiling():
        print("hidden shape", h.shape)
    return self.b(h)
```
Or remove the call, log from the training loop, or (for logging) list the methods in
`torch._dynamo.config.ignore_logger_methods` (measured: no break; the call is dropped).

## Fix safety
Unsafe, offered when the call is a statement of its own: it wraps the statement in
`if not torch.compiler.is_compiling():` (measured for `print` and `warnings.warn`: no break, 1
region). Under `torch.compile` the message, warning, timer or sync then no longer happens at all;
in eager mode nothing changes. Needs torch ≥ 2.3 for `torch.compiler.is_compiling`.

## PyTorch reference
GB0059 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html ·
GB0007 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0007.html ·
GB0291 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html ·
GB4841 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4841.html ·
GB0156 https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0156.html
"""
    VALID = [
        # after an early return while compiling: only eager mode gets there
        "import logging\nimport torch\nfrom torch import nn\nlogger = logging.getLogger(__name__)\n"
        "class M(nn.Module):\n    def forward(self, x, mask=None):\n"
        "        if torch.compiler.is_compiling():\n            return x\n"
        "        if mask is None:\n            logger.warning('no mask')\n        return x\n",
        # guarded side effects run in eager only
        "import logging\nimport warnings\nimport torch\nfrom torch import nn\nlogger = logging.getLogger(__name__)\n"
        "class M(nn.Module):\n    def forward(self, x):\n"
        "        if not torch.compiler.is_compiling():\n            print('x', x.shape)\n"
        "            logger.info('step')\n"
        "        if torch.compiler.is_compiling():\n            pass\n        else:\n"
        "            warnings.warn('slow path')\n        return x * 2\n",
        # printing and timing in a training loop (not compiled) is fine
        "import time\nimport torch\ndef train(model, batches):\n    for b in batches:\n        t0 = time.time()\n"
        "        loss = model(b).sum()\n        print(loss.item(), time.time() - t0)\n",
        # a method named info/print on something that is not a logger
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self, cfg):\n"
        "        super().__init__()\n        self.cfg = cfg\n    def forward(self, x, timer):\n"
        "        self.cfg.info('x')\n        timer.print()\n        return torch.relu(x)\n",
        # `time` imported from another library is not the time module
        "import torch\nfrom torch import nn\nfrom mylib import time\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return x * time.scale()\n",
        # `warning_once` on an object that is not a logger (no getLogger/get_logger behind it)
        "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self, reporter):\n"
        "        super().__init__()\n        self.reporter = reporter\n    def forward(self, x):\n"
        "        self.reporter.warning_once('x')\n        return x * 2\n",
        # inside an autograd.Function the finding belongs to FL108
        "import torch\nclass Fn(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        print('fwd')\n        return x * 2\n    @staticmethod\n    def backward(ctx, g):\n        return g * 2\n",
    ]
    INVALID = [
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        h = x * 2\n        print('hidden', h.shape)\n        return h\n",
            expected_fix="import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        h = x * 2\n        if not torch.compiler.is_compiling():\n"
            "            print('hidden', h.shape)\n        return h\n",
            line=6,
        ),
        Invalid(
            "import logging\nimport torch as T\nfrom torch import nn\nlog = logging.getLogger(__name__)\n"
            "class M(nn.Module):\n    def forward(self, x):\n        log.debug(\n            'x=%s',\n"
            "            x.shape,\n        )  # trace\n        return x\n",
            expected_fix="import logging\nimport torch as T\nfrom torch import nn\nlog = logging.getLogger(__name__)\n"
            "class M(nn.Module):\n    def forward(self, x):\n        if not T.compiler.is_compiling():\n"
            "            log.debug(\n                'x=%s',\n                x.shape,\n            )  # trace\n"
            "        return x\n",
            line=7,
        ),
        Invalid(
            "import logging\nimport time\nimport warnings\nimport torch\nfrom torch import nn\n"
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.logger = logging.getLogger('m')\n"
            "    def forward(self, x):\n        t0 = time.perf_counter()\n        y = x.relu()\n"
            "        self.logger.info('took %f', time.perf_counter() - t0)\n"
            "        logging.warning('deprecated')\n        warnings.warn('slow')\n        return y\n",
            line=11,
            count=5,
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        y = x + 1\n        torch.cuda.synchronize()\n        breakpoint()\n"
            "        return y\n",
            line=6,
            count=2,
        ),
        # transformers' logger: any Logger method breaks, `warning_once` included
        Invalid(
            "import torch\nfrom torch import nn\nfrom transformers.utils import logging\n"
            "logger = logging.get_logger(__name__)\nclass M(nn.Module):\n    def forward(self, x, pad: int):\n"
            "        if pad > 0:\n            logger.warning_once(f'padded by {pad}')\n        return x\n",
            line=8,
        ),
        # in a helper reached from forward
        Invalid(
            "import sys\nimport torch\nfrom torch import nn\nclass M(nn.Module):\n"
            "    def forward(self, x):\n        return self._log(x)\n"
            "    def _log(self, x):\n        sys.stderr.write('step\\n')\n        return x\n",
            line=8,
        ),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.checker = SideEffectChecker()

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.autograd_function is not None:
            return  # FL108 reports constructs inside autograd.Function bodies
        for at, message, fix in self.checker.check_Call(node, ctx):
            ctx.report(at, message, fix=fix)
