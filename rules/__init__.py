"""fusionlint's rules: one module per rule, named after its code (FL101_tensor_to_python.py).

Installed as ``fusionlint.rules``; ``fusionlint.registry`` discovers every Rule subclass here.
"""

# Families of patterns that were measured and found to cost nothing, so no rule flags them.
# `fusionlint rules` lists them so users can see they were checked, not forgotten.
CHECKED_WITHOUT_EFFECT = (
    {
        "family": "FL4xx aliasing / in-place",
        "torch": "torch 2.13.0 CPU",
        "forms": (
            "in-place ops on graph inputs and on views (including overlapping reads afterwards), in-place "
            "buffer updates and BatchNorm running stats, parameter updates under torch.no_grad(), out= into "
            "locals or buffers, in-place on activations whose backward does not read them (gelu, silu) or "
            "without grad, .data reads, .data writes to buffers, single-row writes into expanded views"
        ),
        "evidence": "0 breaks, 0 recompiles, eager-equal results and no extra kernels each; docs/aliasing-evidence.md",
    },
    {
        "family": "Python builtins over tensors (FL1xx graph breaks)",
        "torch": "torch 2.13.0 CPU",
        "forms": (
            "max(t), min(t), sum(t) over a tensor's elements, max(a, b)/min(a, b) of tensors, max([a, b, c]), "
            "sum([a, b]), sum(t * 2 for t in x), max(t.sum(), 0.5), abs(t), len(t), max(x.shape), and user "
            "context managers (classes with __enter__/__exit__, @contextmanager generators) whose code does not break"
        ),
        "evidence": (
            "0 graph breaks each (backend eager); sorted() over tensors does break (FL106), and so do any()/all() "
            "over tensor elements used as a condition (GB0170)"
        ),
    },
    {
        "family": "constant Python-float attributes (FL901, informational)",
        "torch": "torch 2.13.0 CPU, torch 2.11.0 H200",
        "forms": "x.clamp(-self.threshold, self.threshold) with a threshold that never changes",
        "evidence": "same breaks (0), kernels and launches as a registered buffer (truth case a1)",
    },
)
