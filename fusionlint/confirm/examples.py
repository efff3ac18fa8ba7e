"""How the confirm pass gets a module instance and inputs to run (inside the worker process).

In this order, for the class (or compiled function) ``target`` defined in a user file:

1. **registered**: ``[tool.fusionlint.examples]`` maps ``"pkg.mod:Model" = "pkg.mod:make_example"``;
   ``make_example()`` returns ``(module, args)`` or ``(module, args, kwargs)``.
2. **convention**: the file defines ``fusionlint_example()`` returning the same, for an instance of
   ``target``.
3. **fixture**: the file defines ``example_inputs()`` (a tuple of forward args) and ``target`` is
   its ``Model`` class (or the only ``nn.Module`` class in the file), built with no arguments;
   an optional ``exercise(model, call)`` drives repeated calls.
4. **inferred**: ``target()`` with no arguments, and inputs shaped from its first ``Linear``
   (``in_features``), ``Conv*d`` (``in_channels``) or ``Embedding`` (``num_embeddings``) layer.

Otherwise the module stays unconfirmed with a one-line hint (:data:`HINT`).
Only this module and the worker import user code, and only under ``--confirm``.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
import os
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Optional

HINT = (
    'register an example: [tool.fusionlint.examples] "pkg.mod:{target}" = "pkg.mod:make_example" '
    "(returns (module, args)), or define fusionlint_example() next to the class"
)


# Target for findings outside any class: "whatever the file's fusionlint_example() builds".
EXAMPLE_TARGET = "<fusionlint_example>"


class ExampleError(Exception):
    """No usable example; the message says why (the module is then unconfirmed)."""

    def __init__(self, message: str, hint: Optional[str] = None) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass
class Example:
    kind: str  # "registered" | "convention" | "fixture" | "inferred"
    detail: str  # where it came from, e.g. "pkg.mod:make_example" or "Linear(in_features=32)"
    model_factory: Callable[[], Any]
    inputs_factory: Callable[[], Any]
    exercise: Optional[Callable[[Any, Callable[..., Any]], Any]] = None
    grad: bool = False  # run with autograd on (module constant GRAD = True), plus one backward


# ---------------------------------------------------------------------------- importing user code
def module_name_for(path: str, roots: list[str]) -> Optional[str]:
    """Dotted module name of ``path`` relative to the first root that contains it (src layouts too)."""
    path = os.path.realpath(path)
    for root in roots:
        root = os.path.realpath(root)
        if not path.startswith(root.rstrip(os.sep) + os.sep):
            continue
        rel = os.path.relpath(path, root)
        if not rel.endswith(".py"):
            return None
        parts = rel[:-3].split(os.sep)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(p.isidentifier() for p in parts):
            return ".".join(parts)
    return None


def import_file(path: str, module_name: Optional[str], sys_path: list[str]) -> types.ModuleType:
    """Import the user's file: by dotted name when it is importable (relative imports work), else by path."""
    for entry in reversed(sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    if module_name:
        try:
            module = importlib.import_module(module_name)
            if os.path.realpath(getattr(module, "__file__", "") or "") == os.path.realpath(path):
                return module
        except ImportError:
            pass
    name = "_fusionlint_user_" + "".join(c if c.isalnum() else "_" for c in os.path.realpath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ExampleError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def exec_variant(source: str, filename: str, like: types.ModuleType, tag: str) -> types.ModuleType:
    """Run another version of a file's text (a fixed variant) as a module in the same package."""
    name = f"{like.__name__}__fusionlint_{tag}"
    module = types.ModuleType(name)
    module.__file__ = filename
    module.__package__ = like.__package__
    sys.modules[name] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def resolve_target(module: types.ModuleType, target: str) -> Any:
    obj: Any = module
    for part in target.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ExampleError(f"{target} not found in {module.__name__}")
    return obj


def load_callable(spec: str, sys_path: list[str]) -> Callable[..., Any]:
    """``"pkg.mod:func"`` -> the function (attribute may be dotted)."""
    if ":" not in spec:
        raise ExampleError(f"example {spec!r} is not 'package.module:function'")
    mod_name, attr = spec.split(":", 1)
    for entry in reversed(sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    try:
        mod = importlib.import_module(mod_name)
    except Exception as e:
        raise ExampleError(f"example {spec}: cannot import {mod_name}: {type(e).__name__}: {e}") from None
    obj: Any = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ExampleError(f"example {spec}: {mod_name} has no {attr}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ExampleError(f"example {spec} is not callable")
    return obj


# ---------------------------------------------------------------------------- the four sources
def _unpack(value: Any, where: str) -> tuple[Any, tuple, dict]:
    if not isinstance(value, tuple) or len(value) not in (2, 3):
        raise ExampleError(f"{where} must return (module, args) or (module, args, kwargs), got {type(value).__name__}")
    module, args = value[0], value[1]
    kwargs = value[2] if len(value) == 3 else {}
    if not isinstance(args, (tuple, list)):
        args = (args,)
    if not isinstance(kwargs, dict):
        raise ExampleError(f"{where}: kwargs must be a dict")
    if not callable(module):
        raise ExampleError(f"{where}: the module is not callable")
    return module, tuple(args), dict(kwargs)


def _from_maker(make: Callable[[], Any], where: str, kind: str, exercise=None) -> Example:
    """Factories around ``make()``: each model build calls it once; inputs are copies of that call's."""
    state: dict = {}

    def model_factory():
        module, args, kwargs = _unpack(make(), where)
        state["inputs"] = (args, kwargs)
        return _unwrap(module)

    def inputs_factory():
        from fusionlint.confirm.measure import CallArgs

        if "inputs" not in state:
            model_factory()
        args, kwargs = state["inputs"]
        try:
            return CallArgs(copy.deepcopy(args), copy.deepcopy(kwargs))
        except Exception:
            return CallArgs(args, kwargs)

    return Example(kind, where, model_factory, inputs_factory, exercise)


def _unwrap(fn: Any) -> Any:
    """A function already wrapped by torch.compile: measure the original (we compile it ourselves)."""
    return getattr(fn, "_torchdynamo_orig_callable", fn)


def _module_classes(module: types.ModuleType) -> list[type]:
    import torch

    return [
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, torch.nn.Module) and v.__module__ == module.__name__
    ]


def find_example(
    module: types.ModuleType,
    target: str,
    *,
    registered: Optional[str] = None,
    sys_path: Optional[list[str]] = None,
) -> Example:
    """The example for ``target`` in ``module`` (see the module docstring for the order)."""
    example = _find_example(module, target, registered=registered, sys_path=sys_path or [])
    example.grad = bool(getattr(module, "GRAD", False))
    return example


def _find_example(module: types.ModuleType, target: str, *, registered: Optional[str], sys_path: list[str]) -> Example:
    import torch

    exercise = getattr(module, "exercise", None) if callable(getattr(module, "exercise", None)) else None
    if registered:
        make = load_callable(registered, sys_path)
        return _from_maker(make, registered, "registered", exercise)
    if target == EXAMPLE_TARGET:
        maker = getattr(module, "fusionlint_example", None)
        if not callable(maker):
            raise ExampleError("no fusionlint_example() in the file", HINT.format(target="Model"))
        return _from_maker(maker, "fusionlint_example()", "convention", exercise)

    obj = resolve_target(module, target)
    if isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
        # the Function runs inside some module's forward: use the file's Model / only module
        classes = _module_classes(module)
        pick = [c for c in classes if c.__name__ == "Model"] or (classes if len(classes) == 1 else [])
        if not pick:
            raise ExampleError(f"{target} is an autograd.Function; register an example for the module calling it",
                               HINT.format(target="Model"))
        obj, target = pick[0], pick[0].__qualname__
    maker = getattr(module, "fusionlint_example", None)
    if callable(maker):
        try:
            built = _unpack(maker(), f"{module.__name__}.fusionlint_example()")
        except ExampleError:
            raise
        except Exception as e:
            raise ExampleError(f"fusionlint_example() raised {type(e).__name__}: {e}") from None
        inst = built[0]
        if (isinstance(obj, type) and isinstance(inst, obj)) or _unwrap(inst) is _unwrap(obj):
            return _from_maker(maker, "fusionlint_example()", "convention", exercise)

    inputs = getattr(module, "example_inputs", None)
    if callable(inputs) and isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        classes = _module_classes(module)
        if target == "Model" or classes == [obj]:
            _no_arg_constructor(obj, target)
            return Example("fixture", f"{target}() + example_inputs()", obj, inputs, exercise)

    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        return _inferred(obj, target)
    raise ExampleError(f"no example for {target}", HINT.format(target=target))


def _no_arg_constructor(cls: type, target: str) -> None:
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return
    required = [
        p
        for name, p in list(sig.parameters.items())[1:]
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if required:
        names = ", ".join(p.name for p in required)
        raise ExampleError(f"{target}() needs arguments ({names})", HINT.format(target=target))


def _forward_arity(cls: type) -> Optional[int]:
    try:
        sig = inspect.signature(cls.forward)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())[1:]
    return sum(1 for p in params if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _inferred(cls: type, target: str) -> Example:
    import torch

    hint = HINT.format(target=target)
    _no_arg_constructor(cls, target)
    arity = _forward_arity(cls)
    if arity != 1:
        raise ExampleError(f"cannot infer inputs: {target}.forward takes {arity} required arguments", hint)
    try:
        probe = cls()
    except Exception as e:
        raise ExampleError(f"{target}() raised {type(e).__name__}: {e}", hint) from None
    layer = None
    for sub in probe.modules():
        if isinstance(sub, (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.Embedding)):
            layer = sub
            break
    if layer is None:
        raise ExampleError(f"cannot infer inputs: {target} has no Linear/Conv/Embedding layer", hint)
    batch = 2
    if isinstance(layer, torch.nn.Linear):
        shape, detail = (batch, layer.in_features), f"Linear(in_features={layer.in_features})"

        def make():
            return (torch.randn(*shape),)
    elif isinstance(layer, torch.nn.Embedding):
        n = layer.num_embeddings
        detail = f"Embedding(num_embeddings={n})"

        def make():
            return (torch.randint(0, n, (batch, 8)),)
    else:
        dims = {torch.nn.Conv1d: 1, torch.nn.Conv2d: 2, torch.nn.Conv3d: 3}[type(layer)]
        side = 16 if dims < 3 else 8
        shape = (batch, layer.in_channels) + (side,) * dims
        detail = f"{type(layer).__name__}(in_channels={layer.in_channels}) -> {tuple(shape)}"

        def make():
            return (torch.randn(*shape),)
    return Example("inferred", f"inferred from {detail}", cls, make, None)


def batch_sweep_exercise(inputs_factory: Callable[[], Any], sizes=(3, 5, 7, 9), repeats: int = 3):
    """Default exercise for recompile findings: repeated calls, then new batch sizes (dim 0)."""

    def resize(t: Any, n: int) -> Any:
        import torch

        if not isinstance(t, torch.Tensor) or t.dim() == 0 or t.shape[0] == 0:
            return t
        reps = -(-n // t.shape[0])
        return t.repeat(reps, *([1] * (t.dim() - 1)))[:n].clone()

    def exercise(model: Any, call: Callable[..., Any]) -> None:
        from fusionlint.confirm.measure import CallArgs

        raw = inputs_factory()
        args, kwargs = (raw.args, raw.kwargs) if isinstance(raw, CallArgs) else (tuple(raw), {})
        for _ in range(repeats):
            call(*args, **kwargs)
        for n in sizes:
            call(*[resize(a, n) for a in args], **kwargs)

    return exercise


def mode_switch_exercise(inputs_factory: Callable[[], Any], before: Optional[Callable] = None):
    """For findings about train/eval specialisation: the calls of ``before`` (or two plain calls),
    then one call in eval mode and one back in the module's original mode."""

    def exercise(model: Any, call: Callable[..., Any]) -> None:
        from fusionlint.confirm.measure import CallArgs

        raw = inputs_factory()
        args, kwargs = (raw.args, raw.kwargs) if isinstance(raw, CallArgs) else (tuple(raw), {})
        if before is not None:
            before(model, call)
        else:
            call(*args, **kwargs)
            call(*args, **kwargs)
        was_training = model.training
        model.train(not was_training)
        try:
            call(*args, **kwargs)
        finally:
            model.train(was_training)
        call(*args, **kwargs)

    return exercise
