"""fusionlint's rules: one module per rule, named after its code (FL101_tensor_to_python.py).

Installed as ``fusionlint.rules``; ``fusionlint.registry`` discovers every Rule subclass here.
"""
