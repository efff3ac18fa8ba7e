"""Threshold: a registered buffer.

The issue's reference size (32 layers, batch 8 × 128 tokens × 512); the module is
``examples/threshold/buffer.py``'s; only the size differs. Meant for a GPU:
``fusionlint check examples/threshold_reference --confirm-on-gpu --report report.html``.
"""

from examples.threshold import buffer
from examples.threshold._block import REFERENCE, inputs


class Model(buffer.Model):
    def __init__(self):
        super().__init__(REFERENCE)


def example_inputs():
    return inputs(REFERENCE)
