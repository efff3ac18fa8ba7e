"""Abstract values: what an expression may hold (a tensor, a Python number, an instance of a class...).

``values`` classifies expressions of the CPython ``ast`` the project index is built on; the libcst
rules ask ``fusionlint.semantic.tensors`` (re-exported as ``fusionlint.analysis.tensors``), which is
seeded with the interprocedural facts the project model computes. How fusionlint knows a value is a
tensor is decided in these two modules and nowhere else.
"""
